import os
import stat

import pytest
from grpo_testkit import FIXTURES

from ascend_grpo.container import host_checks

SHARED = ["davinci_manager", "devmm_svm", "hisi_hdc"]


@pytest.fixture
def devs(tmp_path):
    """A dev folder with character devices for card 0 and the shared nodes (needs root for mknod)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ["davinci0"] + SHARED:
        try:
            os.mknod(dev / name, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("mknod needs root")
    return dev


def test_device_nodes_present(devs):
    assert host_checks.check_device_nodes(str(devs), [0], SHARED) == []


def test_missing_card_and_shared_node(devs):
    os.unlink(devs / "hisi_hdc")
    problems = host_checks.check_device_nodes(str(devs), [0, 3], SHARED)
    assert len(problems) == 2
    assert problems[0].startswith("device node %s/davinci3 is missing; card 3 is not on this host" % devs)
    assert "remove it from {cards}" in problems[0]  # the module names its role's setting
    assert problems[1].startswith("device node %s/hisi_hdc is missing; the NPU driver is not loaded" % devs)


def test_regular_file_is_not_a_device(devs):
    os.unlink(devs / "devmm_svm")
    (devs / "devmm_svm").write_text("")
    problems = host_checks.check_device_nodes(str(devs), [0], SHARED)
    assert problems == ["%s/devmm_svm exists but is not a character device; the driver did not create it: "
                        "reinstall the Ascend driver" % devs]


def test_dirs(tmp_path):
    (tmp_path / "driver").mkdir()
    problems = host_checks.check_dirs([(str(tmp_path / "driver"), "npu_container_driver_dir", "the driver folder"),
                                       (str(tmp_path / "add-ons"), "npu_container_addons_dir", "the add-ons folder")])
    assert problems == ["the add-ons folder %s/add-ons does not exist: install the Ascend driver (it creates it) "
                        "or set npu_container_addons_dir to where it is" % tmp_path]


def test_disk_uses_nearest_existing_parent(tmp_path):
    free, problems = host_checks.check_disk(str(tmp_path / "not" / "yet"), 0.001)
    assert free > 0 and problems == []
    free, problems = host_checks.check_disk(str(tmp_path / "not" / "yet"), 10 ** 9)
    assert len(problems) == 1 and "{min_free_gib}" in problems[0] and str(tmp_path) in problems[0]


def test_what_the_workspace_already_holds_counts_as_written(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    (workspace / "venvs").mkdir(parents=True)
    (workspace / "venvs" / "big").write_bytes(b"x" * 3 * 2**20)
    free_gib = host_checks.shutil.disk_usage(str(tmp_path)).free / 2**30
    # needs 2 MiB more than is free, and the workspace holds 3 MiB of it: a rerun is not refused
    free, problems = host_checks.check_disk(str(workspace), free_gib + 2 / 1024)
    assert problems == [], problems
    free, problems = host_checks.check_disk(str(workspace), free_gib + 1, why="the run's estimate: ...")
    assert len(problems) == 1
    assert "which already holds 0.0 GiB" not in problems[0] and "the run's estimate: ..." in problems[0]
    assert "({max_ckpt_to_keep})" in problems[0] and "point {workspace} at a larger disk" in problems[0]


def test_a_pull_needs_room_in_dockers_data_root(tmp_path):
    root, workspace = tmp_path / "docker", tmp_path / "ws"
    root.mkdir()
    free_gib = host_checks.shutil.disk_usage(str(tmp_path)).free / 2**30
    assert host_checks.check_image_room("", 10 ** 6, str(workspace), 0) == []  # no pull: not checked
    assert host_checks.check_image_room(str(root), 0.001, str(workspace), 0.001) == []
    (problem,) = host_checks.check_image_room(str(root), free_gib + 1, str(workspace), 0)
    assert problem.startswith("only ") and "Docker's data root %s" % root in problem
    assert "({image_gib}: " in problem
    # one disk for both: the workspace's needs count beside the image's
    (problem,) = host_checks.check_image_room(str(root), 0.001, str(workspace), free_gib + 1)
    assert "shares its disk with the workspace" in problem


def _script(tmp_path, body):
    path = tmp_path / "npu-smi"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_npu_smi_runs_and_checks_cards(tmp_path):
    cmd = _script(tmp_path, "cat %s\n" % os.path.join(FIXTURES, "npu_smi", "910b_8card_24.txt"))
    parsed, problems = host_checks.run_npu_smi(cmd, [0, 6])
    assert len(parsed["cards"]) == 8
    assert len(problems) == 1 and problems[0].startswith("card 6 (910B3) reports health Critical")
    assert host_checks.card_summary(parsed, [1]) == [{
        "npu": 1, "name": "910B3", "health": "OK", "aicore_pct": 12.0, "hbm_mb_used": 41230,
        "hbm_mb_total": 65536, "temp_c": 36.0, "power_w": 90.1}]


def test_npu_smi_failures(tmp_path):
    assert "not found" in host_checks.run_npu_smi(str(tmp_path / "nope"), [0])[1][0]
    failing = _script(tmp_path, "echo 'dcmi module initialize failed. ret is -8005' >&2; exit 1\n")
    problem = host_checks.run_npu_smi(failing, [0])[1][0]
    assert "exit code 1" in problem and "-8005" in problem
    garbage = _script(tmp_path, "echo hello\n")
    assert "cannot read the table" in host_checks.run_npu_smi(garbage, [0])[1][0]
    hung = _script(tmp_path, "sleep 5\n")
    assert "did not answer in 1 s" in host_checks.run_npu_smi(hung, [0], timeout=1)[1][0]


# DOMAIN.md ("Card numbers inside a container"): a container given only some /dev/davinciN numbers them from 0 and
# ASCEND_RT_VISIBLE_DEVICES takes those numbers; on the host itself the host's numbers hold.
@pytest.mark.parametrize("cards, in_container, ids", [
    ([2], True, [0]), ([4, 5], True, [0, 1]), ([0], True, [0]),
    ([2], False, [2]), ([5, 4], False, [4, 5]),
])
def test_the_ids_the_runtime_gives_the_cards(cards, in_container, ids):
    assert host_checks.runtime_ids(cards, in_container) == ids


def test_repeated_cards_have_no_ids():
    with pytest.raises(ValueError, match="repeat"):
        host_checks.runtime_ids([2, 2], True)


@pytest.mark.parametrize("visible, nodes, in_container, needle", [
    # gpustack #3352: given two cards, id 4 is outside [0, 2)
    ("4", [4, 5], True, "names 4, but this container has 2 card(s) (/dev/davinci4, /dev/davinci5), which the CANN "
                        "runtime numbers 0 to 1"),
    ("2", [2], True, "names 2, but this container has 1 card(s) (/dev/davinci2)"),
    ("0", [], True, "no /dev/davinciN is here"),
    ("3", [0, 1, 2], False, "names 3, but this host has only the cards 0, 1, 2"),
    ("1,0", [0, 1], True, "ascending order"),
    ("0,x", [0, 1], True, "x is not a card id"),
])
def test_numbering_problems(visible, nodes, in_container, needle):
    problems = host_checks.numbering_problems(visible, nodes, in_container)
    assert len(problems) == 1 and needle in problems[0], problems


@pytest.mark.parametrize("visible, nodes, in_container", [
    ("0", [2], True), ("0,1", [4, 5], True), ("4,5", list(range(8)), False), (None, [2], True), ("", [2], True),
])
def test_numbering_that_holds(visible, nodes, in_container):
    assert host_checks.numbering_problems(visible, nodes, in_container) == []
