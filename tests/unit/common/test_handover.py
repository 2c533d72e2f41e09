"""Stages hand their results on through <workspace>/.grpo/<stage>.json: the records, the module that reads and
leaves them, and the modules that find verl's tree through the deps stage's record (a `path` source used to be
patched and validated at <workspace>/verl, a tree the deps stage never installed)."""

import json
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ascend_grpo.common import workspace
from ascend_grpo.deps import stack_files
from deps_filters import grpo_profiles  # noqa: E402
from grpo_testkit import ROOT, run_module
from grpo_testkit.setting_names import role_setting_names


def test_a_record_is_written_once_and_read_back(tmp_path):
    state = tmp_path / ".grpo"
    record = {"verl_dir": "/data/grpo/verl", "profile": "vllm0.13.0"}
    assert workspace.write_record(str(state), "deps", record) is True
    assert workspace.write_record(str(state), "deps", record) is False  # same content: no change
    assert workspace.read_record(str(state), "deps") == record
    assert workspace.write_record(str(state), "deps", dict(record, profile="vllm0.9.1"), check_mode=True) is True
    assert workspace.read_record(str(state), "deps") == record  # check mode wrote nothing
    assert [p for p in os.listdir(state) if p.startswith(".")] == []  # no temporary file left behind


def test_a_missing_or_broken_record_names_the_stage_to_run(tmp_path):
    with pytest.raises(workspace.MissingRecord) as err:
        workspace.read_record(str(tmp_path), "assets")
    # no inventory given: a placeholder the user fills in, never a guessed inventory
    assert str(err.value) == ("%s/assets.json is missing: run the assets stage first (ansible-playbook site.yml "
                              "-i <your inventory> --tags assets)." % tmp_path)
    with pytest.raises(workspace.MissingRecord) as err:
        workspace.read_record(str(tmp_path), "assets", "-i inventories/cloud910b")
    assert str(err.value).endswith("(ansible-playbook site.yml -i inventories/cloud910b --tags assets).")
    (tmp_path / "train.json").write_text("[1, 2]")
    with pytest.raises(workspace.MissingRecord, match="train.json is not a JSON object: run the train stage first"):
        workspace.read_record(str(tmp_path), "train")
    with pytest.raises(ValueError, match="unknown stage 'deploy'"):
        workspace.read_record(str(tmp_path), "deploy")


def test_verl_dir_comes_from_the_setting_else_from_the_deps_record(tmp_path):
    assert workspace.verl_dir(str(tmp_path), "/srv/verl") == "/srv/verl"
    with pytest.raises(workspace.MissingRecord, match="deps.json is missing: run the deps stage first"):
        workspace.verl_dir(str(tmp_path))
    workspace.write_record(str(tmp_path), "deps", {"verl_dir": "/opt/src/verl"})
    assert workspace.verl_dir(str(tmp_path)) == "/opt/src/verl"


def test_the_module_reads_records_and_fails_naming_every_missing_stage(tmp_path):
    workspace.write_record(str(tmp_path), "assets", {"model_dir": "/m"})
    result = run_module("grpo_handover", {"state_dir": str(tmp_path), "read": ["assets"]})
    assert result["records"] == {"assets": {"model_dir": "/m"}} and not result["changed"]
    result = run_module("grpo_handover", {"state_dir": str(tmp_path), "read": ["assets", "train", "deps"],
                                          "inventory": "-i inventories/cloud910b"})
    assert result["failed"]
    assert ("train.json is missing: run the train stage first (ansible-playbook site.yml -i inventories/cloud910b "
            "--tags train).") in result["msg"]
    assert ("deps.json is missing: run the deps stage first (ansible-playbook site.yml -i inventories/cloud910b "
            "--tags deps).") in result["msg"]


def test_the_module_leaves_a_record_once_with_check_mode_and_diff(tmp_path):
    params = {"state_dir": str(tmp_path), "stage": "train",
              "record": {"run_dir": "/w/runs/p/e", "checkpoint_dir": "/w/checkpoints/p/e", "profiles": ["npu-single"]}}
    checked = run_module("grpo_handover", params, check=True)
    assert checked["changed"] and not (tmp_path / "train.json").exists()
    first = run_module("grpo_handover", params)
    assert first["changed"] and first["path"] == str(tmp_path / "train.json")
    assert json.loads((tmp_path / "train.json").read_text()) == params["record"]
    assert run_module("grpo_handover", params)["changed"] is False


def _tree(root):
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")


def test_the_patch_module_patches_the_tree_the_deps_record_names(tmp_path):
    """The bug this hand-over fixed: with the deps stage's `path` source, the tree lives elsewhere."""
    state, elsewhere = tmp_path / ".grpo", tmp_path / "src" / "my-verl"
    _tree(elsewhere)
    workspace.write_record(str(state), "deps", {"verl_dir": str(elsewhere)})
    result = run_module("verl_patch", {"state_dir": str(state), "operations": []})
    assert not result.get("failed"), result.get("msg")
    assert result["root"] == str(elsewhere)
    explicit = tmp_path / "other"
    _tree(explicit)
    assert run_module("verl_patch", {"state_dir": str(state), "root": str(explicit),
                                     "operations": []})["root"] == str(explicit)


def test_the_tree_finding_modules_fail_naming_the_deps_stage_without_its_record(tmp_path):
    for module, params, setting in (
            ("verl_patch", {"operations": [], "setting_names": role_setting_names("verl_compat_patch", "verl_patch")},
             "verl_compat_patch_verl_dir"),
            ("verl_import_check", {"entries": ["verl.trainer.main_ppo"],
                                   "setting_names": role_setting_names("verl_compat_patch", "verl_import_check")},
             "verl_compat_patch_verl_dir"),
            ("verl_config_check", {"overrides": [], "cards": [0],
                                   "setting_names": role_setting_names("grpo_train", "verl_config_check")},
             "grpo_train_verl_dir")):
        result = run_module(module, dict(params, state_dir=str(tmp_path), inventory="-i inventories/sim"))
        assert result["failed"], module
        assert ("deps.json is missing: run the deps stage first (ansible-playbook site.yml -i inventories/sim "
                "--tags deps).") in result["msg"], result["msg"]
        assert setting in result["msg"]


# The profile lookup every stage uses: the refusals name the setting and the choices (texts from the stages'
# former preflight asserts, which the sim tests match). The engine names the settings as {refs} and {own_file}; the
# filter the stages call (grpo_profiles) names each stage's own.
PROFILES = {stage: os.path.join(ROOT, "roles", role, "files", "profiles")
            for stage, role in stack_files.PROFILE_DIRS.items()}


def test_profiles_are_located_in_order_and_unknown_ones_refused():
    paths = stack_files.locate_profiles("patch", ["vllm0.13.0", "cpu-overlay"], PROFILES["patch"])
    assert [os.path.basename(p) for p in paths] == ["vllm0.13.0.yml", "cpu-overlay.yml"]
    with pytest.raises(stack_files.StackError) as err:
        stack_files.locate_profiles("deps", "vllm0.12", PROFILES["deps"])
    assert str(err.value).startswith(
        "Unknown profile vllm0.12: set {refs} to one of vllm0.13.0, vllm0.13.0-cpu, vllm0.9.1, or {own_file} to a "
        "profile file of your own.")
    with pytest.raises(AnsibleFilterError) as err:
        grpo_profiles("vllm0.12", "deps", PROFILES["deps"])
    assert str(err.value).startswith(
        "Unknown profile vllm0.12: set deps_pinning_profile to one of vllm0.13.0, vllm0.13.0-cpu, vllm0.9.1, or "
        "deps_pinning_profile_file")
    with pytest.raises(AnsibleFilterError) as err:
        grpo_profiles(["vllm0.12"], "patch", PROFILES["patch"])
    assert str(err.value).startswith("Unknown patch profile vllm0.12 in verl_compat_patch_profiles: use one of "
                                      "cpu-overlay, vllm0.13.0, vllm0.9.1")
    with pytest.raises(AnsibleFilterError, match="grpo_train_profiles is a non-empty list"):
        grpo_profiles("npu-single", "train", PROFILES["train"])  # a list setting given a string
    with pytest.raises(AnsibleFilterError, match="grpo_train_profiles is a non-empty list"):
        grpo_profiles([], "train", PROFILES["train"])
    with pytest.raises(stack_files.StackError, match=r"^\{refs\} is a non-empty list"):
        stack_files.locate_profiles("train", [], PROFILES["train"])


def test_a_profile_file_of_ones_own_wins_for_the_single_profile_stages(tmp_path):
    own = tmp_path / "mine.yml"
    own.write_text(yaml.safe_dump({"name": "mine"}))
    assert stack_files.locate_profiles("eval", "opencompass-npu", PROFILES["eval"], str(own)) == [str(own)]
    with pytest.raises(AnsibleFilterError, match="Unknown OpenCompass profile /nope/x.yml: set grpo_eval_profile"):
        grpo_profiles("opencompass-npu", "eval", PROFILES["eval"], "/nope/x.yml")
    with pytest.raises(stack_files.StackError, match=r"Unknown OpenCompass profile /nope/x.yml: set \{refs\}"):
        stack_files.locate_profiles("eval", "opencompass-npu", PROFILES["eval"], "/nope/x.yml")


# The shared helpers every engine uses (one copy each, in ascend_grpo.common.workspace).
def test_nearest_existing_is_the_path_or_the_folder_it_would_be_made_in(tmp_path):
    assert workspace.nearest_existing(str(tmp_path)) == str(tmp_path)
    assert workspace.nearest_existing(str(tmp_path / "a" / "b" / "c.txt")) == str(tmp_path)
    assert workspace.nearest_existing("/") == "/"


def test_text_table_aligns_columns_and_leaves_no_trailing_spaces():
    assert workspace.text_table(["NAME", "N"], [["torch", "2"], ["vllm-ascend", "10"]], right={1}) == [
        "NAME          N", "-----------  --", "torch         2", "vllm-ascend  10"]


def test_write_text_keeps_a_former_copy_and_the_mode(tmp_path):
    path = tmp_path / "sub" / "run.sh"
    assert workspace.write_text(str(path), "one\n", 0o755) == (True, None)
    assert oct(path.stat().st_mode & 0o777) == "0o755"
    assert workspace.write_text(str(path), "one\n", 0o755) == (False, None)
    changed, kept = workspace.write_text(str(path), "two\n", 0o755, backup=True, check_mode=True)
    assert changed and kept.startswith(str(path) + ".bak-") and path.read_text() == "one\n"
    changed, kept = workspace.write_text(str(path), "two\n", 0o755, backup=True)
    assert path.read_text() == "two\n" and open(kept, encoding="utf-8").read() == "one\n"
