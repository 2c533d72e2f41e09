"""The grpo_files module's engine, in-process: the refusals its module tests do not reach (a spec without text,
a mode that is not octal, a record of no stage), folders without a root, and the diff of a changed file."""

import os

import pytest

from ascend_grpo.common import file_writes


def args(**extra):
    p = {"dirs": [], "files": [], "records": None, "state_dir": None, "root": None}
    p.update(extra)
    return p


def test_a_file_without_text_content_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(file_writes.WriteFailed) as err:
        file_writes.write_all(args(files=[{"path": str(tmp_path / "a"), "content": 3}]), False, False)
    assert err.value.msg == "each of files needs a path and a content (text): ['content', 'path']"
    assert err.value.result == {} and not (tmp_path / "a").exists()


def test_a_mode_that_is_not_octal_is_refused(tmp_path):
    path = str(tmp_path / "a")
    with pytest.raises(file_writes.WriteFailed) as err:
        file_writes.write_all(args(files=[{"path": path, "content": "x", "mode": "rw-r--r--"}]), False, False)
    assert err.value.msg == "%s: mode 'rw-r--r--' is not an octal number such as 0644" % path


def test_a_record_of_no_stage_is_refused_naming_the_stages(tmp_path):
    with pytest.raises(file_writes.WriteFailed) as err:
        file_writes.write_all(args(records={"nosuch": {}}, state_dir=str(tmp_path)), False, False)
    assert err.value.msg.startswith("records: 'nosuch' is not a stage's record (stages: container, ")


def test_a_folder_without_root_is_made_plainly_and_only_outside_check_mode(tmp_path):
    folder = str(tmp_path / "a" / "b")
    would = file_writes.write_all(args(dirs=[folder]), True, False)
    assert would["changed"] is True and not os.path.isdir(folder)
    assert would["diff"] == [{"before_header": folder, "after_header": folder, "before": "", "after": "(folder)\n"}]
    assert file_writes.write_all(args(dirs=[folder]), False, False)["changed"] is True and os.path.isdir(folder)
    assert file_writes.write_all(args(dirs=[folder]), False, False) == {"changed": False, "files": [], "diff": []}


def test_a_changed_file_shows_its_old_and_new_text(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    found = file_writes.write_all(args(files=[{"path": str(path), "content": "new\n"}]), False, True)
    assert found["diff"] == [{"before_header": str(path), "after_header": str(path), "before": "old\n",
                              "after": "new\n"}]
    # the SHA-1 of the text, as Ansible's own checksum of a file's content is
    assert found["files"][0]["checksum"] == "389cc6b7ae5a659383eab5dfc253764eccf84732"
    assert path.read_text() == "new\n"


def test_a_folder_outside_the_root_is_refused_with_a_message_not_a_crash(tmp_path):
    """workspace.open_folder raises ValueError (no strerror) for a path outside root."""
    outside = str(tmp_path / "elsewhere")
    with pytest.raises(file_writes.WriteFailed) as err:
        file_writes.write_all(args(dirs=[outside], root=str(tmp_path / "ws")), False, False)
    assert err.value.msg == "%s cannot be made: %s is not inside %s" % (outside, outside, tmp_path / "ws")
    assert err.value.result == {"files": []} and not os.path.exists(outside)
