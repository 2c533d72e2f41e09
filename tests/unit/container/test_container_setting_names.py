"""The container stage's module and filters name the stage's settings in what they refuse, through the mapping the
role's own task passes (``setting_names``) or the filter's own: the engines know only their inputs (issue 45, item 3).
"""

from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names

from container_filters import container_access, container_owner_problem  # noqa: E402


def _bare_host(tmp_path, **extra):
    """A host with no card 3, no shared nodes, no driver folders, no npu-smi and too little room."""
    (tmp_path / "dev").mkdir(exist_ok=True)
    params = dict(cards=[3], dev_dir=str(tmp_path / "dev"), driver_dir=str(tmp_path / "driver"),
                  addons_dir=str(tmp_path / "add-ons"), npu_smi=str(tmp_path / "no-npu-smi"),
                  workspace=str(tmp_path / "ws"), min_free_gib=10 ** 9, fail_on_problems=False)
    params.update(extra)
    return params


def test_the_hosts_problems_name_the_container_settings_and_their_fixes(tmp_path):
    """As the stage calls it: the problems reported (fail_on_problems false), each naming the setting to change."""
    names = role_setting_names("npu_container", "npu_preflight")
    result = run_module("npu_preflight", _bare_host(tmp_path, setting_names=names))
    assert not result.get("failed"), result
    problems = "\n".join(result["problems"])
    assert "card 3 is not on this host" in problems and "remove it from npu_container_visible_devices" in problems
    assert "the NPU driver is not loaded" in problems and "or check npu_container_dev_dir" in problems
    assert "or set npu_container_driver_dir to where it is" in problems
    assert "or set npu_container_addons_dir to where it is" in problems
    assert "or set npu_container_npu_smi to its path" in problems
    assert ("GiB needed (npu_container_min_free_gib): free space, point npu_container_workspace_host at a larger "
            "disk, keep fewer checkpoints (grpo_max_actor_ckpt_to_keep), or set npu_container_min_free_gib to what "
            "your run needs") in problems
    assert "{" not in problems


def test_no_card_fails_naming_the_setting(tmp_path):
    names = role_setting_names("npu_container", "npu_preflight")
    result = run_module("npu_preflight", _bare_host(tmp_path, cards=[], fail_on_problems=True, setting_names=names))
    assert result["failed"] and result["msg"] == "no card requested: set npu_container_visible_devices, e.g. [0]"


def test_without_a_mapping_the_messages_name_the_options(tmp_path):
    result = run_module("npu_preflight", _bare_host(tmp_path, cards=[], fail_on_problems=True))
    assert result["msg"] == "no card requested: set cards, e.g. [0]", result
    problems = "\n".join(run_module("npu_preflight", _bare_host(tmp_path))["problems"])
    assert "remove it from cards" in problems and "or set driver_dir to where it is" in problems
    assert "keep fewer checkpoints (max_ckpt_to_keep)" in problems


def test_the_filters_name_the_container_settings():
    """container_access and container_owner_problem are the role layer: they name the settings themselves."""
    (problem,) = container_access({"host": "npu1", "connection": "ssh", "docker_args": "--context=x"})["problems"]
    assert problem.startswith("npu_container_docker_cli_args ('--context=x') points docker at another engine")
    found = {"Config": {"Labels": {"io.ascend-grpo.project": "ascend-grpo", "io.ascend-grpo.workspace": "/b"}}}
    msg = container_owner_problem(found, "qwen-grpo", "npu1", "/a", "/a", "recreate")
    assert msg.startswith("npu_container_name: the container qwen-grpo on npu1") and "Set npu_container_name to" in msg
