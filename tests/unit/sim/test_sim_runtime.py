"""The simulated host's stand-in for the CANN runtime's card numbering (files/sim/ascend_runtime.py, the sim image's
sitecustomize): it must refuse what a 910B's runtime refuses, in the words a 910B prints (gpustack #3352 and #2527:
"set ASCEND_RT_VISIBLE_DEVICES:[4] error, input data rang[0-2)", "aclrtGetDeviceCount(&device_count), error code is
207004", "it must be configured in ascending order"), so that the simulated host is never kinder than a real one."""

import os
import subprocess
import sys
import textwrap

import pytest
from grpo_testkit import ROOT

STAND_IN = os.path.join(ROOT, "files", "sim", "ascend_runtime.py")


def run_with(tmp_path, visible, nodes, code="import torch"):
    """A Python that loads the stand-in as its sitecustomize, with a fake /dev holding ``nodes`` and a fake torch."""
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text("LOADED = True\n")
    with open(STAND_IN, encoding="utf-8") as handle:
        source = handle.read()
    # the same file, reading a fake /dev instead of this machine's
    (tmp_path / "sitecustomize.py").write_text(source.replace('os.listdir("/dev")', "os.listdir(%r)"
                                                              % str(tmp_path / "dev")))
    dev = tmp_path / "dev"
    dev.mkdir(exist_ok=True)
    for node in nodes:
        (dev / node).write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    if visible is not None:
        env["ASCEND_RT_VISIBLE_DEVICES"] = visible
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def test_the_stand_in_reads_the_real_dev(tmp_path):
    with open(STAND_IN, encoding="utf-8") as handle:
        assert 'os.listdir("/dev")' in handle.read()


@pytest.mark.parametrize("visible, nodes, message", [
    ("4", ["davinci4", "davinci5", "davinci_manager"], "set ASCEND_RT_VISIBLE_DEVICES:[4] error, input data rang[0-2)"),
    ("2", ["davinci2"], "set ASCEND_RT_VISIBLE_DEVICES:[2] error, input data rang[0-1)"),
    ("1,0", ["davinci0", "davinci1"], "set ASCEND_RT_VISIBLE_DEVICES:1,0 error, it must be configured in ascending order"),
])
def test_an_id_the_runtime_does_not_have_fails_at_import_torch_as_on_a_910b(tmp_path, visible, nodes, message):
    proc = run_with(tmp_path, visible, nodes)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "aclrtGetDeviceCount(&device_count), error code is 207004" in proc.stderr


@pytest.mark.parametrize("visible, nodes", [("0", ["davinci2"]), ("0,1", ["davinci4", "davinci5"]), (None, [])])
def test_the_runtimes_own_numbers_pass(tmp_path, visible, nodes):
    proc = run_with(tmp_path, visible, nodes, "import torch; print(torch.LOADED)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_a_process_that_never_imports_torch_is_left_alone(tmp_path):
    proc = run_with(tmp_path, "9", ["davinci2"], textwrap.dedent("""
        import json
        print(json.dumps({"ok": True}))
    """))
    assert proc.returncode == 0 and proc.stdout.strip() == '{"ok": true}'
