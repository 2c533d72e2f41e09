"""The one way engine code runs a command on its own, where no Ansible module hands it ``module.run_command``.

An engine that runs commands takes a ``run`` callable with ``module.run_command``'s shape (``run(argv,
environ_update=None)`` -> ``(rc, stdout, stderr)``): a module passes ``module.run_command``; a CLI, a detached job
(``python -m ascend_grpo.assets.weights``), the doctor's probe and the tests pass :func:`run_command`. Two needs
``module.run_command`` does not meet are here too: a time limit (:func:`run_command`'s ``timeout``: a hung driver,
a reward file that never returns) and a job that outlives its caller (:func:`spawn_detached`). No other file of
the package starts a process.
"""

import os
import subprocess

# what run_command raises when ``timeout`` passes (as subprocess.run does), for callers that explain it
TimeoutExpired = subprocess.TimeoutExpired


def run_command(argv, environ_update=None, timeout=None):
    """Run ``argv`` (a list, no shell) and wait: ``(rc, stdout, stderr)`` as text, like ``module.run_command``.

    ``environ_update`` is added to this process's environment. A command that cannot start raises OSError
    (FileNotFoundError, PermissionError); one still running after ``timeout`` seconds is killed and raises
    :data:`TimeoutExpired`."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=timeout,
                          env=dict(os.environ, **(environ_update or {})))
    return proc.returncode, proc.stdout, proc.stderr


def spawn_detached(argv, env):
    """Start ``argv`` in a session of its own with exactly ``env``, its standard streams closed, and return its pid
    without waiting: a job that lives on after the caller (and Ansible's task) ends."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True, close_fds=True)
    return proc.pid
