"""The grpo_handover module's engine, in-process: the diff of a record that changes, check mode, and an
optional record beside a required one."""

import json

import pytest

from ascend_grpo.common import record_handover


def args(tmp_path, **extra):
    p = {"state_dir": str(tmp_path / ".grpo"), "read": [], "optional": [], "stage": None, "record": None,
         "inventory": ""}
    p.update(extra)
    return p


def test_a_changed_record_shows_before_and_after_as_sorted_json(tmp_path):
    record_handover.handover(args(tmp_path, stage="container", record={"name": "a"}), False, False)
    found = record_handover.handover(args(tmp_path, stage="container", record={"name": "b", "cards": (0,)}),
                                     False, True)
    path = str(tmp_path / ".grpo" / "container.json")
    assert found["changed"] is True and found["path"] == path
    assert found["diff"]["before"] == json.dumps({"name": "a"}, indent=2, sort_keys=True) + "\n"
    assert found["diff"]["after"] == json.dumps({"cards": [0], "name": "b"}, indent=2, sort_keys=True) + "\n"
    assert json.loads(open(path).read()) == {"cards": [0], "name": "b"}


def test_check_mode_says_it_would_write_and_writes_nothing(tmp_path):
    found = record_handover.handover(args(tmp_path, stage="container", record={"name": "a"}), True, True)
    assert found["changed"] is True and found["diff"]["before"] == ""
    assert not (tmp_path / ".grpo" / "container.json").exists()


def test_an_unchanged_record_has_no_diff(tmp_path):
    record_handover.handover(args(tmp_path, stage="container", record={"name": "a"}), False, False)
    found = record_handover.handover(args(tmp_path, stage="container", record={"name": "a"}), False, True)
    assert found["changed"] is False and "diff" not in found


def test_a_missing_required_record_fails_after_reading_the_others(tmp_path):
    record_handover.handover(args(tmp_path, stage="deps", record={"verl_dir": "/w/verl"}), False, False)
    with pytest.raises(record_handover.HandoverFailed) as err:
        record_handover.handover(args(tmp_path, read=["deps", "container", "cluster"], optional=["container"]),
                                 False, False)
    assert "cluster.json is missing" in err.value.msg and "container.json" not in err.value.msg
    assert err.value.result["records"]["deps"]["verl_dir"] == "/w/verl"
    assert err.value.result["missing"][0].startswith(str(tmp_path / ".grpo" / "container.json"))
