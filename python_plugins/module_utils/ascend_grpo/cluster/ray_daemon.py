"""This node's Ray, started from its script or stopped: the ``ray_node`` module's work as plain Python.

The cluster stage renders each node's ``ray start`` script (:mod:`ray_nodes` plans it); this runs it when the
script changed or Ray is not running, stops Ray first when it runs from another script, explains a worker's failed
join, and keeps ``ray-node.json`` in the state folder (the script's digest, when it started or stopped). Commands
go through the ``run_command`` the caller hands over (the module's own), under timeout(1).
"""

import hashlib
import os
import time

from ..common import workspace
from . import ray_nodes
from ..common.errors import StageFailure

TIMED_OUT = 124  # timeout(1)'s exit status when the command ran out of time


class NodeError(StageFailure):
    """A refusal or a failed start or stop: ``msg`` says what; ``result`` is what was found with it."""


def _running():
    """Whether this node's Ray (its raylet) runs."""
    return bool(ray_nodes.ray_processes()["raylet"])


def run_timed(run_command, argv, timeout, env=None):
    """``argv`` under timeout(1) through run_command: (rc, out, err); ``env`` goes in as its ``environ_update``.
    The one way the cluster stage's engines run a command on the host (rc TIMED_OUT: out of time)."""
    if env is None:
        return run_command(["timeout", str(timeout)] + argv)
    return run_command(["timeout", str(timeout)] + argv, environ_update=env)


def _run(run_command, argv, timeout):
    """``argv`` under timeout(1) through run_command: (rc, output); a run out of time says so in the output."""
    rc, out, err = run_timed(run_command, argv, timeout)
    output = (out or "") + (err or "")
    if rc == TIMED_OUT:
        output += "\n%s did not finish within %d s" % (" ".join(argv), timeout)
    return rc, output


def _stop(run_command, ray, timeout):
    rc, output = _run(run_command, [ray, "stop", "--grace-period", "30"], timeout)
    if rc == 127:  # no such command (timeout's own code for it)
        raise NodeError("ray stop failed: %s" % output.strip())
    deadline = time.time() + 30
    while _running() and time.time() < deadline:
        time.sleep(1)
    if _running():
        _run(run_command, [ray, "stop", "--force"], timeout)
    return output


def converge(p, check_mode, run_command):
    """One call of the ``ray_node`` module (``p``: its arguments): the result for ``exit_json``, or NodeError.
    ``run_command``: ``module.run_command`` or one of its shape (commands run under timeout(1))."""
    record_path = os.path.join(p["state_dir"], "ray-node.json")
    return (stopped if p["state"] == "stopped" else started)(p, check_mode, run_command, _running(), record_path)


def stopped(p, check_mode, run_command, running, record_path):
    if not running:
        return dict(changed=False, running=False)
    output = "" if check_mode else _stop(run_command, p["ray"], p["timeout"])
    if not check_mode:
        workspace.write_json(record_path, dict(workspace.read_json(record_path, {}) or {}, stopped_at=time.time()))
    return dict(changed=True, running=check_mode, output=output,
                diff=dict(before={"running": True}, after={"running": False}))


def started(p, check_mode, run_command, running, record_path):
    try:
        with open(p["script"], "rb") as handle:
            digest = hashlib.sha1(handle.read()).hexdigest()
    except OSError as err:
        raise NodeError("the start script %s cannot be read: %s" % (p["script"], err)) from err
    record = workspace.read_json(record_path, {}) or {}
    if running and record.get("script_sha1") == digest and not record.get("stopped_at"):
        return dict(changed=False, running=True)
    diff = dict(before={"script_sha1": record.get("script_sha1"), "running": running},
                after={"script_sha1": digest, "running": True})
    if check_mode:
        return dict(changed=True, running=running, diff=diff)
    # A head this worker cannot reach fails before anything here changes (a Ray that runs keeps running).
    if p["role"] == "worker" and p["head_address"]:
        reach = ray_nodes.tcp_reachable(p["head_address"], p["port"])
        if reach:
            raise NodeError(ray_nodes.join_failure("", p["head_address"], p["port"], reach),
                            dict(reach=reach, running=running))
    output = ""
    if running:  # started from another script (other settings): stopped first
        output = _stop(run_command, p["ray"], p["timeout"])
    rc, started_output = _run(run_command, ["bash", p["script"]], p["timeout"])
    output += started_output
    if rc != 0:
        reach = ray_nodes.tcp_reachable(p["head_address"], p["port"]) if p["role"] == "worker" else None
        msg = (ray_nodes.join_failure(output, p["head_address"], p["port"], reach) if p["role"] == "worker"
               else "ray start --head failed: %s" % " | ".join(
                   [line for line in output.splitlines() if line.strip()][-6:]))
        raise NodeError(msg, dict(output=output, running=_running()))
    workspace.write_json(record_path, {"script_sha1": digest, "role": p["role"], "started_at": time.time()})
    return dict(changed=True, running=_running(), output=output[-4000:], diff=diff)

