"""--tags teardown on an NPU host (ascend_grpo.container.teardown_plan, the workspace_teardown module in-process,
the container stage's teardown filters): which workspace it may remove (only one the package made, never /, a
system folder, a home or through a link), what it measures and frees, the image another container still uses, the
container of another workspace, and the report with the command that brings it back."""

import os

import pytest
from grpo_testkit import run_module

from ascend_grpo.container import container_access, teardown_plan
from container_filters import container_owner_problem, teardown_image_problem, teardown_report  # noqa: E402

NAMES = {"workspace": "npu_container_workspace_host", "remove": "npu_container_teardown_workspace"}


def made_workspace(root, records=("container", "deps"), workspace_host=None):
    """A workspace as the stages leave it: .grpo with their records (the container's naming the workspace)."""
    state = root / ".grpo"
    state.mkdir(parents=True)
    for stage in records:
        text = '{"workspace_host": "%s"}' % (workspace_host or root) if stage == "container" else "{}"
        (state / ("%s.json" % stage)).write_text(text)
    (root / "models").mkdir()
    (root / "models" / "weights.bin").write_bytes(b"w" * 100000)
    return root


def args(path, **extra):
    p = {"workspace": str(path), "remove": True, "state": "check"}
    p.update(extra)
    return p


@pytest.mark.parametrize("path", ["/", "/etc", "/usr", "/home", "/root", "/var/lib/docker", "/data", "//", "/etc/"])
def test_a_system_folder_is_refused_naming_the_setting(path):
    problem = teardown_plan.removal_problem(path, homes=[])
    assert problem.startswith("{workspace} is /"), problem
    assert "a folder of the system" in problem and "set {remove} to false" in problem


def test_a_home_folder_or_one_holding_it_is_refused():
    homes = ["/home/alice", "/srv/users/bob"]
    assert "is the home folder /home/alice" in teardown_plan.removal_problem("/home/alice", homes)
    assert "holds the home folder /srv/users/bob" in teardown_plan.removal_problem("/srv/users", homes)
    assert teardown_plan.removal_problem("/home/alice/grpo", homes, realpath=lambda p: p) == ""


def test_homes_come_from_the_password_database_and_this_process():
    class Entry:
        def __init__(self, home):
            self.pw_dir = home
    found = teardown_plan.home_folders([Entry("/home/a"), Entry(""), Entry("/nonexistent/")], {"HOME": "/root"})
    assert found == ["/home/a", "/nonexistent", "/root"]


def test_a_relative_path_or_one_with_dot_dot_is_refused():
    for path in ("data/grpo", "/data/../etc", ""):
        assert "is no absolute path" in teardown_plan.removal_problem(path, [])


def test_a_path_through_a_link_is_refused(tmp_path):
    real = made_workspace(tmp_path / "real")
    os.symlink(str(real), str(tmp_path / "linked"))
    problem = teardown_plan.removal_problem(str(tmp_path / "linked"), [])
    assert "goes through a link (it is %s)" % real in problem


def test_only_a_workspace_the_package_made_may_go(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "holds no state folder .grpo" in teardown_plan.state_problem(str(plain))
    (plain / ".grpo").mkdir()
    assert "with no stage's record in it" in teardown_plan.state_problem(str(plain))
    linked = tmp_path / "linked-state"
    linked.mkdir()
    os.symlink(str(plain / ".grpo"), str(linked / ".grpo"))
    assert "has a .grpo that is a link" in teardown_plan.state_problem(str(linked))
    copy = made_workspace(tmp_path / "copy", workspace_host="/data/grpo")
    assert "another workspace (/data/grpo)" in teardown_plan.state_problem(str(copy))
    ours = made_workspace(tmp_path / "ours")
    assert teardown_plan.state_problem(str(ours)) == ""
    # without a container (npu_container_mode none): any stage's record
    bare = made_workspace(tmp_path / "bare", records=("deps",))
    assert teardown_plan.state_problem(str(bare)) == ""


def test_disk_usage_counts_blocks_once_and_follows_no_link(tmp_path):
    ws = made_workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"x" * 4000000)
    before = teardown_plan.disk_usage(str(ws))
    os.symlink(str(outside), str(ws / "models" / "link"))
    os.link(str(ws / "models" / "weights.bin"), str(ws / "models" / "hard"))
    after = teardown_plan.disk_usage(str(ws))
    assert 100000 <= before < 4000000 and after - before < 8192
    assert teardown_plan.size_text(0) == "0 B" and teardown_plan.size_text(3 * (1 << 30) // 2) == "1.5 GiB"


def test_the_module_measures_refuses_and_removes_without_following_links(tmp_path):
    ws = made_workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the workspace's")
    os.symlink(str(outside), str(ws / "models" / "link"))
    checked = run_module("workspace_teardown", args(ws))
    assert not checked.get("failed") and checked["changed"] is False and checked["size_bytes"] >= 100000
    assert ws.exists()
    # check mode: would remove, removes nothing
    would = run_module("workspace_teardown", args(ws, state="absent"), check=True)
    assert would["changed"] is True and would["removed"] is True and ws.exists()
    removed = run_module("workspace_teardown", args(ws, state="absent"))
    assert removed["changed"] is True and removed["size"] == checked["size"]
    assert not ws.exists() and (outside / "keep").read_text() == "not the workspace's"
    # a second teardown: nothing there, nothing to do
    again = run_module("workspace_teardown", args(ws, state="absent"))
    assert again["changed"] is False and again["exists"] is False


def test_a_kept_workspace_is_measured_and_never_touched(tmp_path):
    plain = tmp_path / "plain"  # no .grpo: it would be refused, but nobody asked to remove it
    plain.mkdir()
    (plain / "f").write_text("x")
    checked = run_module("workspace_teardown", args(plain, remove=False))
    assert not checked.get("failed") and checked["exists"] and checked["size_bytes"] > 0
    kept = run_module("workspace_teardown", args(plain, remove=False, state="absent"))
    assert kept["changed"] is False and (plain / "f").exists()


def test_a_refusal_names_the_settings_and_changes_nothing(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    for state in ("check", "absent"):
        result = run_module("workspace_teardown", args(plain, state=state, setting_names=NAMES))
        assert result["failed"] and result["msg"].startswith("npu_container_workspace_host (%s) holds no" % plain)
        assert "set npu_container_teardown_workspace to false" in result["msg"]
        assert result["msg"].endswith("Nothing was changed.") and plain.exists()
    root = run_module("workspace_teardown", args("/", setting_names=NAMES))
    assert root["failed"] and root["msg"].startswith("npu_container_workspace_host is /, a folder of the system")


def test_the_image_goes_only_when_no_other_container_uses_it():
    assert teardown_image_problem("cann:8.2", ["/qwen-grpo"], "qwen-grpo") == ""
    assert teardown_image_problem("cann:8.2", [], "qwen-grpo") == ""
    problem = teardown_image_problem("cann:8.2", ["/qwen-grpo", "/bobs-run"], "qwen-grpo")
    assert problem.startswith("npu_container_teardown_image: the image cann:8.2 is used by bobs-run besides")
    assert problem.endswith("Nothing was changed.")


def test_the_teardown_removes_only_this_workspaces_container():
    ours = {"Config": {"Labels": container_access.container_labels("/data/grpo")}, "Mounts": []}
    assert container_owner_problem(ours, "qwen-grpo", "npu1", "/data/grpo", "/data/grpo", "remove") == ""
    theirs = {"Config": {"Labels": container_access.container_labels("/home/bob/grpo")}, "Mounts": []}
    msg = container_owner_problem(theirs, "qwen-grpo", "npu1", "/data/grpo", "/data/grpo", "remove")
    assert "another workspace's" in msg and "the stages would remove it" in msg
    # an unlabelled one, even mounting the workspace (an earlier version's): the user removes it
    unlabelled = {"Config": {"Labels": None},
                  "Mounts": [{"Type": "bind", "Source": "/data/grpo", "Destination": "/data/grpo"}]}
    msg = container_owner_problem(unlabelled, "qwen-grpo", "npu1", "/data/grpo", "/data/grpo", "remove")
    assert msg.startswith("npu_container_name: the container qwen-grpo on npu1 carries no label")
    assert "so the teardown does not remove it" in msg and "docker rm -f qwen-grpo" in msg


def test_the_report_says_what_was_freed_and_how_to_bring_it_back():
    seen = {"container": "qwen-grpo", "container_removed": True, "tables": ["inet grpo_ray (the container network)"],
            "workspace": {"workspace": "/data/grpo", "exists": True, "removed": True, "size_bytes": 3 << 30,
                          "size": "3.0 GiB"},
            "image": "cann:8.2", "image_size": 1 << 30, "image_removed": True}
    lines = teardown_report(seen, "npu1", "-i inventories/sim")
    assert lines == [
        "npu1: freed 4.0 GiB in all",
        "  removed the container qwen-grpo",
        "  removed the firewall table inet grpo_ray (the container network)",
        "  removed the workspace /data/grpo: freed 3.0 GiB",
        "  removed the image cann:8.2: freed 1.0 GiB",
        "  to bring it back, the whole chain again, from nothing: ansible-playbook site.yml -i inventories/sim"]


def test_a_kept_workspace_is_named_with_the_setting_that_removes_it():
    seen = {"container": "qwen-grpo", "container_removed": True, "tables": [],
            "workspace": {"workspace": "/data/grpo", "exists": True, "removed": False, "size": "93.4 GiB"},
            "image": "", "image_size": None, "image_removed": False}
    lines = teardown_report(seen, "npu1", "-i inventories/cloud910b")
    assert lines[0] == "npu1: torn down"
    assert "  kept the workspace /data/grpo (93.4 GiB; npu_container_teardown_workspace: true removes it)" in lines
    assert lines[-1] == ("  to bring it back, the chain again on the kept workspace, where a run resumes from its "
                         "newest checkpoint: ansible-playbook site.yml -i inventories/cloud910b")


def test_a_second_teardown_says_there_is_nothing():
    seen = {"container": "qwen-grpo", "container_removed": False, "tables": [],
            "workspace": {"workspace": "/data/grpo", "exists": True, "removed": False, "size": "1.0 MiB"},
            "image": "cann:8.2", "image_size": None, "image_removed": False}
    lines = teardown_report(seen, "npu1")
    assert lines[0] == "npu1: nothing to tear down"
    assert "  no container qwen-grpo (nothing to remove)" in lines and "  no image cann:8.2 (nothing to remove)" in lines
    assert lines[-1].endswith("ansible-playbook site.yml -i <your inventory>")
