"""The stack's virtual environment in the workspace (pip_runner.ensure_venv): made once, kept while it can serve, moved
aside (never deleted) and made again when the image's Python under it went or changed version.

Real venvs of this Python (made without pip, for speed); what "can serve" means is Python's own venv layout: a
``pyvenv.cfg`` with ``home``, ``version`` and ``include-system-site-packages``, and ``bin/python`` a link to the
Python that made it."""

import os
import subprocess
import sys

import pytest

from ascend_grpo.common import runner
from ascend_grpo.deps import pip_runner

BASE = "%d.%d" % sys.version_info[:2]


def run(argv):
    """runner.run_command, making the venv without pip (seconds saved; pip is not what is tested)."""
    if argv[1:3] == ["-m", "venv"]:
        argv = argv[:3] + ["--without-pip"] + argv[3:]
    return runner.run_command(argv)


def sees_base_packages(python):
    """True when the venv's Python has its base Python's site-packages on sys.path (what
    --system-site-packages adds)."""
    probe = subprocess.run([python, "-c", "import sys; print(any(p.startswith(sys.base_prefix) and "
                                          "p.endswith('-packages') for p in sys.path))"],
                           capture_output=True, text=True, check=True)
    return probe.stdout.strip() == "True"


def set_cfg(venv, key, value):
    path = os.path.join(venv, "pyvenv.cfg")
    lines = [line for line in open(path, encoding="utf-8") if not line.startswith(key)]
    lines.append("%s = %s\n" % (key, value))
    open(path, "w", encoding="utf-8").write("".join(lines))


def test_made_once_with_the_base_packages_then_kept(tmp_path):
    venv = str(tmp_path / "venvs" / "stack")
    made = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert made["action"] == "made" and made["reason"] == "it does not exist"
    assert pip_runner.read_pyvenv_cfg(venv)["include-system-site-packages"] == "true"
    assert sees_base_packages(made["python"])
    assert pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run) == {
        "action": "kept", "python": os.path.join(venv, "bin", "python"), "reason": None, "moved_to": None}


def test_without_base_packages_it_does_not_see_them(tmp_path):
    venv = str(tmp_path / "oc")
    made = pip_runner.ensure_venv(venv, sys.executable, BASE, False, run=run)
    assert not sees_base_packages(made["python"])


def test_a_venv_of_another_python_version_is_moved_aside_with_what_it_holds(tmp_path):
    venv = str(tmp_path / "stack")
    pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    set_cfg(venv, "version", "3.9.18")  # what a venv made by a 3.9 image says
    open(os.path.join(venv, "by-hand.txt"), "w", encoding="utf-8").write("kept")
    again = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert again["action"] == "remade"
    assert again["reason"] == "it was made by Python 3.9.18, the environment's Python is %s" % BASE
    assert again["moved_to"].startswith(venv + ".bak-")
    assert open(os.path.join(again["moved_to"], "by-hand.txt"), encoding="utf-8").read() == "kept"
    assert sees_base_packages(again["python"])


def test_a_dangling_python_link_is_remade(tmp_path):
    venv = str(tmp_path / "stack")
    pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    python = os.path.join(venv, "bin", "python")
    os.remove(python)
    os.symlink("/nonexistent/python3", python)  # the image's Python moved away
    again = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert again["action"] == "remade" and again["reason"].startswith("its Python %s is gone" % python)
    assert subprocess.run([python, "-c", "pass"], check=False).returncode == 0


def test_one_that_hides_the_base_packages_is_remade(tmp_path):
    venv = str(tmp_path / "stack")
    pip_runner.ensure_venv(venv, sys.executable, BASE, False, run=run)
    again = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert again["action"] == "remade" and again["reason"] == "it does not see the base Python's own packages"


def test_check_mode_says_what_it_would_do_and_does_nothing(tmp_path):
    venv = str(tmp_path / "stack")
    would = pip_runner.ensure_venv(venv, sys.executable, BASE, True, check_mode=True, run=run)
    assert would["action"] == "made" and not os.path.exists(venv)
    os.makedirs(venv)  # a folder that is no venv
    would = pip_runner.ensure_venv(venv, sys.executable, BASE, True, check_mode=True, run=run)
    assert would["action"] == "remade" and would["reason"] == "it has no pyvenv.cfg (not a virtual environment)"
    assert os.listdir(str(tmp_path)) == ["stack"]


def test_a_python_that_cannot_make_one_is_named(tmp_path):
    venv = str(tmp_path / "stack")
    try:
        pip_runner.ensure_venv(venv, "/nonexistent/python3", BASE, True,
                               run=lambda argv: (127, "", "/nonexistent/python3: not found"))
    except pip_runner.StackError as err:
        assert "cannot make the virtual environment %s with /nonexistent/python3" % venv in str(err)
    else:
        raise AssertionError("no error")


def test_a_venv_whose_making_was_cut_short_is_remade(tmp_path):
    """A full disk or a kill while venv runs leaves pyvenv.cfg and bin/python but no working pip: not whole."""
    venv = str(tmp_path / "stack")
    pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)  # made without pip: its pip does not run
    os.remove(os.path.join(venv, pip_runner.MADE_MARK))
    again = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert again["action"] == "remade"
    assert again["reason"] == "it was not made whole (it has no pip of its own: cut short while it was made?)"


def test_an_unmarked_venv_with_its_own_pip_is_kept_and_marked(tmp_path):
    """As an earlier version of the package left it (no mark): a real venv with pip."""
    venv = str(tmp_path / "stack")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    assert pip_runner.ensure_venv(venv, sys.executable, BASE, True)["action"] == "kept"
    assert os.path.exists(os.path.join(venv, pip_runner.MADE_MARK))


def test_a_full_disk_is_named_with_the_free_space_and_what_to_do(tmp_path):
    # what pip prints when the disk fills during an install
    text = "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"
    message = pip_runner.disk_full(text, str(tmp_path / "venvs" / "stack"))
    assert message.startswith("the disk is full (No space left on device; %s: " % tmp_path)
    assert "MB free" in message and "then rerun" in message and "point {workspace_host} at a larger disk" in message
    assert pip_runner.disk_full("ERROR: No matching distribution found for six==0.0.42") is None
    assert pip_runner.explain_pip_error(text, []) == pip_runner.disk_full(text)


def test_a_making_cut_short_here_is_removed_not_kept(tmp_path):
    """The disk filled while venv ran (the run fails): the half venv is this package's own, so the rerun removes it
    rather than keeping a copy on a disk short of space."""
    venv = str(tmp_path / "stack")

    def full_disk(argv):
        if argv[1:3] == ["-m", "venv"]:
            os.makedirs(os.path.join(argv[-1], "bin"))
            open(os.path.join(argv[-1], "pyvenv.cfg"), "w", encoding="utf-8").write("home = /usr/bin\n")
            return 1, "", "Error: [Errno 28] No space left on device: '%s/lib'" % argv[-1]
        return run(argv)

    try:
        pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=full_disk)
    except pip_runner.StackError as err:
        assert "the disk is full (No space left on device; %s: " % venv in str(err)
    else:
        raise AssertionError("no error")
    assert os.path.exists(venv + pip_runner.MAKING_SUFFIX)
    again = pip_runner.ensure_venv(venv, sys.executable, BASE, True, run=run)
    assert again["action"] == "remade" and again["moved_to"] is None
    assert again["reason"] == "its making here was cut short (a full disk, a kill)"
    assert sorted(os.listdir(str(tmp_path))) == ["stack"]


# What pip printed for triton 3.4.0 wanted by torch on a platform without its wheel: pip 23.2.1 (what `python3 -m
# venv` brings on Python 3.11) keeps the environment marker, pip 26.3 drops it.
PIP_23_NOT_FOUND = (
    'ERROR: Could not find a version that satisfies the requirement triton==3.4.0; platform_system == "Linux" and '
    'platform_machine == "x86_64" (from torch) (from versions: 3.5.0, 3.5.1, 3.6.0)\n'
    'ERROR: No matching distribution found for triton==3.4.0; platform_system == "Linux" and '
    'platform_machine == "x86_64"\n')
PIP_26_NOT_FOUND = (
    "ERROR: Could not find a version that satisfies the requirement triton==3.4.0 (from torch) "
    "(from versions: 3.5.0, 3.5.1, 3.6.0)\n"
    "ERROR: No matching distribution found for triton==3.4.0 (from torch)\n")


@pytest.mark.parametrize("text", [PIP_23_NOT_FOUND, PIP_26_NOT_FOUND], ids=["pip23", "pip26"])
def test_a_missing_distribution_reads_the_same_from_old_and_new_pip(text):
    assert pip_runner.no_distribution(text) == "triton==3.4.0 (from torch; the index has: 3.5.0, 3.5.1, 3.6.0)"
    message = pip_runner.explain_pip_error(text, ["--index-url", "https://mirror.example/simple"])
    assert message.startswith("no distribution of triton==3.4.0 (from torch; the index has: 3.5.0")
    assert "--index-url https://mirror.example/simple" in message and "platform_machine" not in message


def test_a_missing_top_level_requirement_names_no_asker():
    text = ("ERROR: Could not find a version that satisfies the requirement six==0.0.42 (from versions: none)\n"
            "ERROR: No matching distribution found for six==0.0.42\n")
    assert pip_runner.no_distribution(text) == "six==0.0.42"
    assert pip_runner.no_distribution("ERROR: No matching distribution found for six==0.0.42\n") == "six==0.0.42"
    assert pip_runner.no_distribution("Successfully installed six-1.17.0\n") is None
