import os

from grpo_testkit import ROOT

from container_filters import FilterModule, container_change_reason  # noqa: E402


def test_reason_names_changed_settings_only():
    diff = {"before": {"shm_size": 8589934592, "running": True, "env": ["A=1"]},
            "after": {"shm_size": 4294967296, "running": True, "env": ["A=1"]}}
    assert container_change_reason(diff) == "shm_size: 8589934592 -> 4294967296"


def test_no_reason_when_created_started_or_unchanged():
    assert container_change_reason({"before": {"exists": False, "running": False},
                                    "after": {"exists": True, "running": True}}) == ""
    assert container_change_reason({"before": {"running": False}, "after": {"running": True}}) == ""
    assert container_change_reason({}) == ""
    assert container_change_reason(None) == ""


def test_npu_smi_filters(tmp_path):
    text = open(os.path.join(ROOT, "tests", "fixtures", "npu_smi", "910b_8card_24.txt"), encoding="utf-8").read()
    filters = FilterModule().filters()
    assert len(filters["npu_smi_info"](text)["cards"]) == 8
    assert filters["npu_smi_problems"](text, [0, 1]) == []
    assert len(filters["npu_smi_problems"](text, [6])) == 1
    # the engine's {cards}, named as the container stage's setting
    assert "leave it out of npu_container_visible_devices" in filters["npu_smi_problems"](text, [6])[0]
    # the container stage's numbering: host card 2 is id 0 in its container, the host's 2 with mode none
    assert filters["npu_runtime_ids"]([2], "docker") == [0]
    assert filters["npu_runtime_ids"]([5, 4], "none") == [4, 5]


def test_reason_names_a_leftover_environment_entry_by_name_only():
    # docker_container's diff of a strict env comparison: the container's entries before, the wanted ones after
    diff = {"before": {"env": ["PATH=/usr/bin", "A=1", "HF_TOKEN=hf_secret", "1BAD=x"], "running": True},
            "after": {"env": ["PATH=/usr/bin", "A=2", "B=3"], "running": True}}
    reason = container_change_reason(diff)
    assert reason == "env: 1BAD, HF_TOKEN left over on the container, removed; B added; A changed"
    assert "hf_secret" not in reason and "=x" not in reason


def test_reason_for_volumes_names_the_mounts():
    diff = {"before": {"volumes": ["/w:/w", "/old:/old"]}, "after": {"volumes": ["/w:/w"]}}
    assert container_change_reason(diff) == "volumes: /old:/old left over on the container, removed"
