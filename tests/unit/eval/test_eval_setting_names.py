"""The eval stage's modules name the stage's settings in their refusals, through the mapping the role's own tasks
pass (``setting_names``): the engines know only their options (issue 45, item 3)."""

import pytest
from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names


@pytest.fixture()
def ck(tmp_path):
    """A run's checkpoint folder with steps 1 and 2 saved whole (verl's record names 2)."""
    folder = tmp_path / "ck"
    for step in (1, 2):
        actor = folder / ("global_step_%d" % step) / "actor"
        actor.mkdir(parents=True)
        (actor / "model_world_size_1_rank_0.pt").write_text("weights %d" % step)
        (actor.parent / "data.pt").write_text("dataloader %d" % step)
    (folder / "latest_checkpointed_iteration.txt").write_text("2")
    return folder


def _info(ck, target_root, names=None, **args):
    params = dict(checkpoint_dir=str(ck), target_root=str(target_root), **args)
    if names is not None:
        params["setting_names"] = names
    return run_module("grpo_checkpoint_info", params)


def test_a_missing_checkpoint_folder_names_the_eval_setting_and_its_fix(tmp_path):
    result = _info(tmp_path / "none", tmp_path / "merged", role_setting_names("grpo_eval", "grpo_checkpoint_info"))
    assert result["failed"] and result["msg"].startswith("grpo_eval_checkpoint_dir: %s does not exist. Train first"
                                                         % (tmp_path / "none")), result["msg"]
    assert "or point grpo_eval_checkpoint_dir at a run's checkpoint folder." in result["msg"]


def test_an_unsaved_step_names_the_step_setting_in_both_modules(ck, tmp_path):
    info = _info(ck, tmp_path / "merged", role_setting_names("grpo_eval", "grpo_checkpoint_info"), step=5)
    merged = run_module("grpo_checkpoint", dict(checkpoint_dir=str(ck), target_root=str(tmp_path / "merged"), step=5,
                                                setting_names=role_setting_names("grpo_eval", "grpo_checkpoint")))
    for result in (info, merged):
        assert result["failed"] and result["msg"].startswith("grpo_eval_step: step 5 was not saved in %s" % ck)
        assert "saved steps: 1, 2. Set grpo_eval_step to one of them (or 0 for the newest)." in result["msg"]


def test_a_merge_root_that_cannot_be_written_names_its_setting(ck, tmp_path):
    (tmp_path / "a-file").write_text("")
    result = _info(ck, tmp_path / "a-file" / "merged", role_setting_names("grpo_eval", "grpo_checkpoint_info"))
    assert result["failed"] and result["msg"].startswith("grpo_eval_merged_root: the merged model cannot be written")
    assert "Point grpo_eval_merged_root at a writable folder" in result["msg"]


def test_a_missing_base_model_names_the_base_model_setting(tmp_path):
    data = tmp_path / "math.json"
    data.write_text("{}")
    result = run_module("grpo_eval_result", dict(
        name="base", model_dir=str(tmp_path / "absent"), model="m", data_file=str(data), settings={"n": 1},
        eval_dir=str(tmp_path / "eval"), setting_names=role_setting_names("grpo_eval", "grpo_eval_result")))
    assert result["failed"] and "the base model's model folder" in result["msg"]
    assert "or set grpo_eval_base_model_dir to a Hugging Face model folder." in result["msg"], result["msg"]


def test_without_a_mapping_the_messages_name_the_options(ck, tmp_path):
    result = _info(ck, tmp_path / "merged", step=5)
    assert result["msg"].startswith("step: step 5 was not saved") and "Set step to one of them" in result["msg"]
    missing = _info(tmp_path / "none", tmp_path / "merged")
    assert "or point checkpoint_dir at a run's checkpoint folder" in missing["msg"], missing["msg"]
