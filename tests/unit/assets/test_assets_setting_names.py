"""The assets stage's modules name the stage's settings in their refusals, through the mapping the role's own tasks
pass (``setting_names``): the engines know only their options (issue 45, item 3)."""

from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names


def test_a_missing_local_data_folder_names_the_assets_setting_and_its_fix(tmp_path):
    names = role_setting_names("assets", "math_dataset")
    result = run_module("math_dataset", dict(source="local", local_dir=str(tmp_path / "nowhere"),
                                             dest=str(tmp_path / "out"), setting_names=names), check=True)
    assert result["failed"] and result["field"] == "local_dir"
    assert "is not a folder. Fix: set assets_data_local_dir to a folder holding train*.parquet" in result["msg"]
    assert "{" not in result["msg"]


def test_without_a_mapping_the_message_names_the_option(tmp_path):
    result = run_module("math_dataset", dict(source="local", local_dir=str(tmp_path / "nowhere"),
                                             dest=str(tmp_path / "out")), check=True)
    assert "Fix: set local_dir to a folder" in result["msg"], result["msg"]
