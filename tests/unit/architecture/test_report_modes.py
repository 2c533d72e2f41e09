"""Modules that report instead of failing, for the tasks that used failed_when: false to gather a failure into a
list of their own: grpo_handover's optional records and npu_preflight's fail_on_problems."""

from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names


def test_an_optional_record_that_is_missing_is_reported_not_failed(tmp_path):
    found = run_module("grpo_handover", {"state_dir": str(tmp_path), "read": ["container"], "optional": ["container"]})
    assert not found.get("failed") and found["records"] == {}, found
    assert found["missing"] == ["%s/container.json is missing: run the container stage first (ansible-playbook "
                                "site.yml -i <your inventory> --tags container)." % tmp_path]


def test_a_required_record_that_is_missing_still_fails_naming_the_stage(tmp_path):
    (tmp_path / "container.json").write_text('{"name": "qwen-grpo"}')
    found = run_module("grpo_handover", {"state_dir": str(tmp_path), "read": ["container", "cluster"],
                                         "optional": ["container"]})
    assert found.get("failed"), found
    assert found["msg"] == ("%s/cluster.json is missing: run the cluster stage first (ansible-playbook site.yml "
                            "-i <your inventory> --tags cluster)." % tmp_path)
    assert found["records"] == {"container": {"name": "qwen-grpo"}}


def _bare_host(tmp_path):
    """A host without the device nodes, driver folders or npu-smi (the guide's docker run needs all of them); the
    module called as the container stage calls it, naming its settings."""
    (tmp_path / "dev").mkdir(exist_ok=True)
    return {"cards": [0], "dev_dir": str(tmp_path / "dev"), "driver_dir": str(tmp_path / "driver"),
            "addons_dir": str(tmp_path / "add-ons"), "npu_smi": str(tmp_path / "no-npu-smi"),
            "workspace": str(tmp_path / "ws"), "min_free_gib": 0,
            "setting_names": role_setting_names("npu_container", "npu_preflight")}


def test_npu_preflight_reports_every_problem_when_asked_not_to_fail(tmp_path):
    found = run_module("npu_preflight", dict(_bare_host(tmp_path), fail_on_problems=False))
    assert not found.get("failed") and found["changed"] is False, found
    text = "\n".join(found["problems"])
    for missing in ("davinci0", "davinci_manager", "devmm_svm", "hisi_hdc", "npu_container_driver_dir",
                    "npu_container_addons_dir"):
        assert missing in text, (missing, text)


def test_npu_preflight_fails_by_default_with_the_same_problems(tmp_path):
    reported = run_module("npu_preflight", dict(_bare_host(tmp_path), fail_on_problems=False))
    failed = run_module("npu_preflight", _bare_host(tmp_path))
    assert failed.get("failed") and failed["msg"] == "NPU host not ready:\n- " + "\n- ".join(reported["problems"])


def test_no_card_is_a_problem_reported_like_the_others(tmp_path):
    found = run_module("npu_preflight", dict(_bare_host(tmp_path), cards=[], fail_on_problems=False))
    assert found["problems"] == ["no card requested: set npu_container_visible_devices, e.g. [0]"], found
