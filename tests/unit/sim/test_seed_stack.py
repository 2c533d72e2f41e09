"""The two-host simulation's seed (files/sim/seed_stack.py, SIMULATED HOST ONLY, run by playbooks/sim_seed.yml): the
stack's venv kept with hard links whenever its distributions differ from the seed's, the deps stage's install note
beside it, nothing done when both are current, and nothing removed that is not a seed."""

import json
import os
import subprocess
import sys

import pytest
from grpo_testkit import ROOT

SCRIPT = os.path.join(ROOT, "files", "sim", "seed_stack.py")


def _venv(path, *dists):
    site = path / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in dists:
        (site / ("%s.dist-info" % name)).mkdir()
        (site / ("%s.py" % name.split("-")[0])).write_text("x = 1\n")
    return path


def _run(tmp_path, *extra):
    out = subprocess.run([sys.executable, SCRIPT, "--venv", str(tmp_path / "ws" / "venv"),
                          "--seed", str(tmp_path / "cache" / "seed" / "stack"),
                          "--note", str(tmp_path / "ws" / "note.json")] + list(extra),
                         capture_output=True, text=True, check=False)
    return out.returncode, (json.loads(out.stdout) if out.returncode == 0 else out.stderr)


def test_the_seed_is_made_with_hard_links_then_left_alone_when_current(tmp_path):
    venv = _venv(tmp_path / "ws" / "venv", "torch-2.8.0", "verl-0.5.0")
    (tmp_path / "ws" / "note.json").write_text('{"installed": 2}')
    assert _run(tmp_path, "--check") == (0, {"changed": True, "replaced": True, "note": True})
    assert not (tmp_path / "cache").exists()  # --check changes nothing
    assert _run(tmp_path) == (0, {"changed": True, "replaced": True, "note": True})
    seed = tmp_path / "cache" / "seed" / "stack"
    kept = seed / "lib" / "python3.11" / "site-packages" / "torch.py"
    assert os.stat(kept).st_ino == os.stat(venv / "lib" / "python3.11" / "site-packages" / "torch.py").st_ino
    assert (tmp_path / "cache" / "seed" / "stack.deps-installed.json").read_text() == '{"installed": 2}'
    assert _run(tmp_path) == (0, {"changed": False, "replaced": False, "note": False})


def test_a_changed_stack_replaces_the_seed_and_a_changed_note_alone_is_copied(tmp_path):
    venv = _venv(tmp_path / "ws" / "venv", "torch-2.8.0")
    (tmp_path / "ws" / "note.json").write_text("1")
    _run(tmp_path)
    (venv / "lib" / "python3.11" / "site-packages" / "vllm-0.13.0.dist-info").mkdir()
    assert _run(tmp_path) == (0, {"changed": True, "replaced": True, "note": True})
    assert (tmp_path / "cache" / "seed" / "stack" / "lib" / "python3.11" / "site-packages"
            / "vllm-0.13.0.dist-info").is_dir()
    (tmp_path / "ws" / "note.json").write_text("2")
    assert _run(tmp_path) == (0, {"changed": True, "replaced": False, "note": True})
    assert (tmp_path / "cache" / "seed" / "stack.deps-installed.json").read_text() == "2"


def test_an_empty_venv_keeps_the_seed_it_has(tmp_path):
    (tmp_path / "ws" / "venv").mkdir(parents=True)
    _venv(tmp_path / "cache" / "seed" / "stack", "torch-2.8.0")
    assert _run(tmp_path) == (0, {"changed": False, "replaced": False, "note": False})
    assert (tmp_path / "cache" / "seed" / "stack" / "pyvenv.cfg").is_file()


@pytest.mark.parametrize("what", ["folder", "link"])
def test_a_seed_path_that_holds_no_venv_is_never_removed(tmp_path, what):
    _venv(tmp_path / "ws" / "venv", "torch-2.8.0")
    seed = tmp_path / "cache" / "seed" / "stack"
    seed.parent.mkdir(parents=True)
    if what == "folder":
        seed.mkdir()
        (seed / "precious.txt").write_text("mine")
    else:
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "precious.txt").write_text("mine")
        seed.symlink_to(tmp_path / "elsewhere")
    code, err = _run(tmp_path)
    assert code != 0 and "not a venv this made" in err and "nothing was removed" in err
    assert (seed / "precious.txt").read_text() == "mine"
