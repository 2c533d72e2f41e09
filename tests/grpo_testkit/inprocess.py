"""This package's modules run in the tests' process, as ansible-core's and community.docker's own module tests run
theirs: the module's arguments set (``patch_module_args``), its ``main()`` called, its exit caught and its result
read; then what the controller makes of it before ``ansible -m`` prints a host's result (``changed`` always present,
``failed: true`` on a failure and absent otherwise, ``stdout_lines``/``stderr_lines``, ``action``), so a test reads
the same dict either way.

What stays the same as a spawned module: the file is loaded afresh from python_plugins/modules on each call (its
module-level names start clean), the engines are the ones the tests import (``ansible.module_utils.ascend_grpo`` is
the ``ascend_grpo`` package on the path, as Ansible ships python_plugins/module_utils), the working folder is the
checkout's root (``ansible`` ran there), and the environment is this process's plus ``env``, restored afterwards with
every other change the module made to it. What differs: the engines' own module-level caches live as long as the
test process (a spawned module started with none).
"""

import contextlib
import importlib
import importlib.util
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = os.path.join(ROOT, "python_plugins", "modules")


def alias_engines():
    """``ansible.module_utils.ascend_grpo[.<stage>.<file>]`` names the same module objects as ``ascend_grpo...``: the
    modules' imports and the tests' imports reach one copy of each engine."""
    import ansible.module_utils

    package = importlib.import_module("ascend_grpo")
    if getattr(ansible.module_utils, "ascend_grpo", None) is package:
        return  # done by an earlier call
    sys.modules["ansible.module_utils.ascend_grpo"] = package
    for info in pkgutil.walk_packages(package.__path__, "ascend_grpo."):
        sys.modules["ansible.module_utils." + info.name] = importlib.import_module(info.name)
    ansible.module_utils.ascend_grpo = package


class _Result(BaseException):
    """What the module handed to exit_json or fail_json, as the JSON the controller would have read (a
    BaseException, as SystemExit is: a module's ``except Exception`` must not catch its own exit)."""

    def __init__(self, result):
        super().__init__("module result")
        self.result = result


@contextlib.contextmanager
def _environment(env, cwd):
    """``env`` on top of os.environ and ``cwd`` as the working folder for the call; both as they were afterwards."""
    before, here = dict(os.environ), os.getcwd()
    os.environ.update(env or {})
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(before)


def _clear_warnings():
    # AnsibleModule collects warnings and deprecations in module-level tables: one process per module emptied them
    from ansible.module_utils.common import warnings

    for table in ("_global_warnings", "_global_deprecations"):
        getattr(warnings, table).clear()


def _controller_view(result, name):
    """The host's result as ``ansible -m`` with the json callback prints it: what ActionBase._execute_module adds
    (``stdout_lines``/``stderr_lines``; internal keys and empty warnings removed), TaskExecutor's ``failed`` (a
    non-zero ``rc`` fails too) and ``changed`` defaults, TaskResult.as_callback_task_result's view (``failed`` and
    ``skipped`` left to the event, ``_ansible_no_log`` kept: the task's no_log, off; a failure's ``exception``) and
    the json callback's keys (``failed: true`` on a failure event, ``action``). ansible-core 2.19's code, read
    there."""
    for key in list(result):
        if key.startswith("_ansible_") and key != "_ansible_parsed":
            del result[key]
    for key in ("warnings", "deprecations"):
        if key in result and not result[key]:
            del result[key]
    for key in ("stdout", "stderr"):
        if key in result and key + "_lines" not in result:
            result[key + "_lines"] = (result[key] or "").splitlines()
    failed = result.pop("failed") if "failed" in result else "rc" in result and result["rc"] not in (0, "0")
    result.pop("skipped", None)
    result.pop("_ansible_parsed", None)
    result.setdefault("changed", False)
    result["_ansible_no_log"] = False
    if failed:
        result["failed"] = True
        # the controller renders the failure's error summary as pre-2.19 ``exception`` text; with tracebacks off
        # (DISPLAY_TRACEBACK's default, never, which ansible.cfg keeps) that text is this
        result["exception"] = "(traceback unavailable)"
    result["action"] = name
    return result


def run(name, params, check=False, env=None):
    """Module ``name`` (a file in python_plugins/modules) with ``params``, in this process: its result."""
    from ansible.module_utils import basic
    from ansible.module_utils.common import json as module_json
    from ansible.module_utils.testing import patch_module_args

    alias_engines()
    path = os.path.join(MODULES, name + ".py")
    if not os.path.isfile(path):
        raise AssertionError("no module %s in %s" % (name, MODULES))
    tmpdir = tempfile.mkdtemp(prefix="grpo-module-")
    args = dict(params, _ansible_check_mode=bool(check), _ansible_diff=False, _ansible_module_name=name,
                _ansible_tmpdir=tmpdir, _ansible_remote_tmp=tmpdir, _ansible_keep_remote_files=False,
                _ansible_tracebacks_for=[])

    def record(module, result):
        encoder = module_json.get_module_encoder(basic._ANSIBLE_PROFILE, module_json.Direction.MODULE_TO_CONTROLLER)
        raise _Result(json.loads(json.dumps(result, cls=encoder)))

    original = basic.AnsibleModule._record_module_result
    _clear_warnings()
    try:
        with _environment(env, ROOT), patch_module_args(args):
            basic.AnsibleModule._record_module_result = record
            try:
                spec = importlib.util.spec_from_file_location("grpo_module_" + name, path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.main()
            except _Result as done:
                result = done.result
            except SystemExit as ended:
                # exit_json/fail_json raise _Result before their sys.exit: this module left without a result
                result = {"failed": True, "rc": ended.code,
                          "msg": "MODULE FAILURE: %s exited (%r) without a result" % (name, ended.code)}
            except Exception:  # noqa: BLE001 - what Ansible reports for a module that raised
                result = {"failed": True, "rc": 1, "module_stderr": traceback.format_exc(),
                          "msg": "MODULE FAILURE: See stdout/stderr for the exact error"}
            else:
                result = {"failed": True, "msg": "MODULE FAILURE: %s returned without a result" % name}
    finally:
        basic.AnsibleModule._record_module_result = original
        _clear_warnings()
        shutil.rmtree(tmpdir, ignore_errors=True)
    return _controller_view(result, name)
