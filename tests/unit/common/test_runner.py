"""One way for engine code to reach a host (docs/architecture.md): engines take a ``run`` callable shaped like
``module.run_command`` and start no process of their own; common/runner.py is the one file that does, for CLIs,
detached jobs and the tests."""
import ast
import os
import sys

import pytest

from grpo_testkit import ROOT
from ascend_grpo.assets import reward_deploy
from ascend_grpo.common import runner
from ascend_grpo.container import host_checks

PACKAGE = os.path.join(ROOT, "python_plugins", "module_utils", "ascend_grpo")
RUNNER = os.path.join(PACKAGE, "common", "runner.py")
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty"}
PROCESS_CALLS = {"system", "popen", "spawnv", "spawnvp", "spawnl", "execv", "execvp", "execve", "fork", "posix_spawn"}


def _starts_processes(path):
    """The lines of ``path`` that import a process module or call os's process functions."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [node.lineno for a in node.names if a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PROCESS_MODULES:
            found.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr in PROCESS_CALLS and isinstance(node.value, ast.Name)
              and node.value.id == "os"):
            found.append(node.lineno)
    return found


def test_no_engine_but_the_runner_starts_a_process():
    offenders = []
    for folder, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".py") and path != RUNNER:
                offenders += ["%s:%d" % (os.path.relpath(path, ROOT), line) for line in _starts_processes(path)]
    assert offenders == []
    assert _starts_processes(RUNNER)  # the check sees an import of subprocess where there is one


def test_the_runner_answers_like_run_command():
    rc, out, err = runner.run_command([sys.executable, "-c", "import os, sys; print(os.environ['GRPO_X']); "
                                       "print('e', file=sys.stderr); sys.exit(3)"], environ_update={"GRPO_X": "42"})
    assert (rc, out, err) == (3, "42\n", "e\n")
    with pytest.raises(runner.TimeoutExpired):
        runner.run_command([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.5)


def test_npu_smi_runs_through_the_run_it_is_given(tmp_path):
    with open(os.path.join(ROOT, "tests", "fixtures", "npu_smi", "910b_8card_24.txt"), encoding="utf-8") as handle:
        table = handle.read()
    calls = []

    def run(argv, timeout=None):
        calls.append((argv, timeout))
        return 0, table, ""
    parsed, _ = host_checks.run_npu_smi("/opt/npu-smi", [0], timeout=7, run=run)
    assert calls == [(["/opt/npu-smi", "info"], 7)] and len(parsed["cards"]) == 8
    hung = host_checks.run_npu_smi("/opt/npu-smi", [0], timeout=7,
                                   run=lambda argv, timeout=None: (_ for _ in ()).throw(runner.TimeoutExpired(argv, 7)))
    assert "did not answer in 7 s" in hung[1][0]


def test_the_reward_check_runs_through_the_run_it_is_given(tmp_path):
    calls = []

    def run(argv, environ_update=None, timeout=None):
        calls.append((argv[0], argv[3], argv[4], timeout, environ_update))
        return 0, 'noise\n{"right": 1.0, "wrong": 0.0}\n', ""
    assert reward_deploy.score("/venv/bin/python", "/ws/reward.py", "compute_score", timeout=9, run=run) == \
        {"right": 1.0, "wrong": 0.0}
    # the proof asks whether the file scores right, not how fast: the per-response deadline is lifted for it
    assert calls == [("/venv/bin/python", "/ws/reward.py", "compute_score", 9, {"GRPO_REWARD_TIMEOUT_S": "60"})]
