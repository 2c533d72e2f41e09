"""The stack survives its container (issue 17): the deps stage installs into a venv in the workspace that sees the
image's own Python packages, so a container recreated for a changed setting finds the stack and installs nothing.

The container and deps stages for real on the simulated host, with a small profile of one pin (six) plus verl's
tree, installed editable, as the real profiles end."""

import json
import os
import re
import subprocess
import uuid

import pytest
from grpo_testkit import playbook

pytestmark = [pytest.mark.integration, pytest.mark.network]

VENV_PYTHON = "/data/grpo/venvs/stack/bin/python"
# six's version and file, how verl is installed (pip's direct_url.json: editable from the workspace's tree, without
# importing verl, whose dependencies this profile leaves out), and whether the image's own packages are on sys.path
VERSIONS = ("import json, six, sys; from importlib import metadata; print(six.__version__, six.__file__); "
            "print(json.dumps(json.loads(metadata.distribution('verl').read_text('direct_url.json')), sort_keys=True)); "
            "print('/usr/lib/python3/dist-packages' in sys.path)")


def in_container(name, *argv):
    return subprocess.run(["docker", "exec", name] + list(argv), capture_output=True, text=True, check=False)


@pytest.fixture
def stages(sim_host, tmp_path):
    name = "grpo-venv-" + uuid.uuid4().hex[:8]
    workspace = tmp_path / "workspace"
    profile = tmp_path / "tiny.yml"
    profile.write_text(json.dumps({"name": "tiny", "constraints": True, "pins": {"six": "1.16.0"},
                                   "phases": [{"name": "p", "requirements": ["six==1.16.0"]},
                                              {"name": "verl", "editable": "{verl}"}]}))

    def run(extra=None, *args):
        extra_vars = {"npu_container_name": name, "npu_container_workspace_host": str(workspace),
                      "deps_pinning_profile_file": str(profile)}
        extra_vars.update(extra or {})
        return playbook("site.yml", "-i", "inventories/sim", "--tags", "container,deps",
                        "-e", json.dumps(extra_vars), *args)

    yield run, name, workspace
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def test_a_recreated_container_finds_the_stack_and_installs_nothing(stages):
    run, name, workspace = stages
    first = run()
    assert first.returncode == 0, first.stdout[-4000:]
    record = json.loads((workspace / ".grpo" / "deps.json").read_text())
    assert record["python"] == VENV_PYTHON
    where = in_container(name, VENV_PYTHON, "-c", VERSIONS)
    assert where.returncode == 0, where.stderr
    six_line, verl_line, sees_image = where.stdout.splitlines()
    assert six_line.startswith("1.16.0 /data/grpo/venvs/stack/lib/python3.11/site-packages/six.py")
    assert verl_line == '{"dir_info": {"editable": true}, "url": "file:///data/grpo/verl"}'
    assert sees_image == "True"  # the image's own packages (CANN's, on a 910B) stay importable
    before = in_container(name, "cat", "/proc/1/cgroup").stdout + in_container(name, "hostname").stdout

    # a changed container setting recreates the container; the stack is in the workspace, so nothing is installed
    again = run({"npu_container_shm_size": "4g"})
    assert again.returncode == 0, again.stdout[-4000:]
    flat = " ".join(again.stdout.split())  # messages are folded
    assert "was recreated because its settings changed: shm_size: 8589934592 -> 4294967296" in flat
    assert "All pins of tiny hold; pip not run" in flat
    assert "Ran, in order:" not in again.stdout
    assert in_container(name, "hostname").stdout not in before  # a new container indeed
    assert in_container(name, VENV_PYTHON, "-c", VERSIONS).stdout == where.stdout

    # and the recap of a third run: nothing changed anywhere
    third = run({"npu_container_shm_size": "4g"})
    assert third.returncode == 0, third.stdout[-4000:]
    assert "changed=0" in third.stdout.split("PLAY RECAP")[-1]


def test_without_a_venv_the_stack_goes_into_the_images_python(stages):
    run, name, workspace = stages
    done = run({"npu_container_stack_venv": ""})
    assert done.returncode == 0, done.stdout[-4000:]
    assert json.loads((workspace / ".grpo" / "deps.json").read_text())["python"] == "/usr/bin/python3"
    assert in_container(name, "python3", "-c", VERSIONS).stdout.startswith("1.16.0 /usr/local/lib/python3.11/")
    assert not (workspace / "venvs").exists()


def test_a_venv_folder_outside_the_workspace_is_refused(stages):
    run, name, workspace = stages
    refused = run({"npu_container_stack_venv": "/opt/venv"})
    assert refused.returncode != 0
    assert "npu_container_stack_venv ('/opt/venv') is a folder inside the workspace" in refused.stdout
    assert not workspace.exists()


@pytest.fixture
def small_disk(tmp_path):
    """The workspace on a filesystem of its own, 16 MB (a tmpfs; root only), grown later as a user frees space."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    disk = tmp_path / "workspace"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "grpo-drill", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_drill_the_disk_fills_during_the_install(stages, small_disk):
    """Fault drill: the workspace disk fills while the deps stage makes the stack's venv. The stage fails saying
    so, with the free space and what to do; after space is freed, a rerun finishes and keeps nothing half-made."""
    run, name, workspace = stages
    assert workspace == small_disk
    full = run({"npu_container_min_free_gib": 0})
    assert full.returncode != 0
    flat = " ".join(full.stdout.split())
    # venv's ensurepip hides the OSError; the free space left names the cause
    assert re.search(r"the disk is full \((No space left on device|nearly: the likely cause); /data/grpo/venvs[^:]*: "
                     r"\d+ MB free\)", flat), full.stdout[-3000:]
    assert "then rerun: the stage continues" in flat
    assert (workspace / "venvs" / "stack.making").exists()

    subprocess.run(["mount", "-o", "remount,size=300m", str(small_disk)], check=True)  # space freed
    again = run({"npu_container_min_free_gib": 0})
    assert again.returncode == 0, again.stdout[-4000:]
    assert json.loads((workspace / ".grpo" / "deps.json").read_text())["python"] == VENV_PYTHON
    assert sorted(p.name for p in (workspace / "venvs").iterdir()) == ["stack"]  # no copy of the half venv
    assert in_container(name, VENV_PYTHON, "-c", VERSIONS).stdout.startswith("1.16.0 /data/grpo/venvs/stack/")
