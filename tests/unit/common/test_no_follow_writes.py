"""The host writes into the workspace as root, and so does everything in the container: a link planted there
(.grpo -> a host folder, a record -> a host file) must never carry a host-side write, chmod or backup out of the
workspace. Each case plants the link in tmp_path and proves the call refuses, naming the link, and the folder or
file it points to keeps its mode and content. (The refusal is an OSError, workspace.LinkedPath, so every caller
that reports an OSError names it.)"""

import os
import stat

import pytest

from ascend_grpo.common import workspace
from grpo_testkit import run_module


def _snapshot(path):
    """Mode and content of a folder (names and bytes of its files) or file."""
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    if os.path.isdir(path):
        return mode, {name: open(os.path.join(path, name), "rb").read() for name in sorted(os.listdir(path))}
    return mode, open(path, "rb").read()


@pytest.fixture()
def planted(tmp_path):
    """A workspace whose .grpo is a link to a host folder (mode 0700, one file)."""
    host = tmp_path / "host-etc"
    host.mkdir()
    (host / "container.json").write_text("host's own\n")
    os.chmod(host, 0o700)
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(str(host), str(ws / ".grpo"))
    return ws, host


def test_a_record_is_never_written_through_a_linked_state_folder(planted):
    ws, host = planted
    before = _snapshot(host)
    with pytest.raises(OSError) as err:
        workspace.write_record(str(ws / ".grpo"), "container", {"name": "x"})
    assert "%s is a symbolic link (to %s)" % (ws / ".grpo", host) in str(err.value)
    assert "rm %s" % (ws / ".grpo") in str(err.value)
    with pytest.raises(OSError):
        workspace.write_record(str(ws / ".grpo"), "container", {"name": "x"}, check_mode=True)
    assert _snapshot(host) == before


def test_the_state_folder_is_never_made_or_chmodded_through_a_link(planted):
    ws, host = planted
    before = _snapshot(host)
    with pytest.raises(OSError):
        workspace.make_folders(str(ws), str(ws / ".grpo"))
    with pytest.raises(OSError):
        workspace.make_folders(str(ws), str(ws / ".grpo" / "jobs"), check_mode=True)
    assert _snapshot(host) == before


def test_a_linked_record_or_parent_is_refused_and_its_target_kept(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    secret = tmp_path / "shadow"
    secret.write_text("root:x:0\n")
    os.chmod(secret, 0o600)
    os.symlink(str(secret), str(ws / ".grpo" / "train.json"))
    before = _snapshot(secret)
    with pytest.raises(OSError) as err:
        workspace.write_record(str(ws / ".grpo"), "train", {"run_dir": "/x"})
    assert str(ws / ".grpo" / "train.json") in str(err.value)
    # the same content as the target: no chmod through the link either
    with pytest.raises(OSError):
        workspace.write_text(str(ws / ".grpo" / "train.json"), "root:x:0\n", mode=0o644)
    # a folder between the workspace and the file
    hostdir = tmp_path / "hostdir"
    hostdir.mkdir()
    os.chmod(hostdir, 0o700)
    os.symlink(str(hostdir), str(ws / "runs"))
    with pytest.raises(OSError) as err:
        workspace.write_text(str(ws / "runs" / "p" / "run.sh"), "echo\n", mode=0o755, backup=True, root=str(ws))
    assert str(ws / "runs") in str(err.value)
    assert _snapshot(secret) == before and _snapshot(hostdir) == (0o700, {})


def test_the_modules_fail_naming_the_link_and_write_nothing(planted):
    ws, host = planted
    before = _snapshot(host)
    result = run_module("grpo_handover", {"state_dir": str(ws / ".grpo"), "stage": "container",
                                          "record": {"name": "qwen-grpo"}})
    assert result.get("failed") and "%s is a symbolic link" % (ws / ".grpo") in result["msg"], result
    made = run_module("grpo_files", {"root": str(ws), "dirs": [str(ws / ".grpo")]})
    assert made.get("failed") and "%s is a symbolic link" % (ws / ".grpo") in made["msg"], made
    assert _snapshot(host) == before


def test_the_state_folder_is_made_below_the_workspace_and_records_still_written(tmp_path):
    ws = tmp_path / "new" / "ws"
    made = run_module("grpo_files", {"root": str(ws), "dirs": [str(ws / ".grpo")]})
    assert made["changed"] and stat.S_IMODE(os.lstat(ws / ".grpo").st_mode) == 0o755, made
    assert run_module("grpo_files", {"root": str(ws), "dirs": [str(ws / ".grpo")]})["changed"] is False
    assert workspace.write_record(str(ws / ".grpo"), "container", {"name": "x"})
    assert workspace.read_record(str(ws / ".grpo"), "container") == {"name": "x"}
    assert not workspace.write_record(str(ws / ".grpo"), "container", {"name": "x"})


def test_a_job_never_starts_or_records_through_a_linked_folder_or_record(tmp_path):
    """The detached jobs' records (.grpo/jobs/<job>/job.json): a planted link is refused before the job starts."""
    from ascend_grpo.common import jobs

    state = tmp_path / "jobs"
    (state / "train").mkdir(parents=True)
    target = tmp_path / "bashrc"
    target.write_text("user's own\n")
    os.chmod(target, 0o640)
    os.symlink(str(target), str(state / "train" / "job.json"))
    hostdir = tmp_path / "hostdir"
    hostdir.mkdir()
    os.chmod(hostdir, 0o700)
    os.symlink(str(hostdir), str(state / "eval"))
    before, dir_before = _snapshot(target), _snapshot(hostdir)
    for name in ("train", "eval"):
        with pytest.raises(OSError) as err:
            jobs.start(str(state), name, ["sh", "-c", "echo ran > %s/ran" % tmp_path])
        assert "is a symbolic link" in str(err.value), err.value
    assert _snapshot(target) == before and _snapshot(hostdir) == dir_before
    assert not (tmp_path / "ran").exists() and not (state / "train" / "train.log").exists()
