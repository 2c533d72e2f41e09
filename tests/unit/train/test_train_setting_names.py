"""The train stage's modules name the stage's settings in their refusals and fixes, through the mapping the role's
own tasks pass (``setting_names``): the engines know only their options (issue 45, item 3). Each module runs as its
role's task calls it; once without a mapping, where the message names the option."""

import json
import sys

import pytest
from grpo_testkit import FIXTURES, run_module
from grpo_testkit.jobs import failed_train_job
from grpo_testkit.setting_names import role_setting_names
from grpo_testkit.upstream import verl_trainer_config

from ascend_grpo.train import run_spec


def _by_check(rows):
    return {row["check"]: row for row in rows}


# --- verl_config_check: the check before a launch ------------------------------------------------------------------

def test_the_check_without_a_verl_tree_names_the_train_stages_setting(tmp_path):
    names = role_setting_names("grpo_train", "verl_config_check")
    result = run_module("verl_config_check", dict(overrides=[], cards=[0], state_dir=str(tmp_path),
                                                  inventory="-i inventories/sim", setting_names=names))
    assert result["failed"]
    assert "--tags deps). Or set grpo_train_verl_dir to the folder that holds verl/." in result["msg"], result["msg"]
    assert "{" not in result["msg"]


def test_without_a_mapping_the_check_names_the_option(tmp_path):
    result = run_module("verl_config_check", dict(overrides=[], cards=[0], state_dir=str(tmp_path)))
    assert result["failed"] and "Or set verl_dir to the folder that holds verl/." in result["msg"], result["msg"]


@pytest.fixture(scope="module")
def verl_634(tmp_path_factory):
    """verl@634bd935's tree with its trainer configuration only (the check reads nothing else)."""
    return verl_trainer_config(tmp_path_factory.mktemp("verl634"))


def _too_big_for_the_disk(tmp_path, verl_dir):
    """The check's parameters for a run whose model (a config.json of some hundred trillion parameters) leaves no disk
    for its checkpoints; the rest passes."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "max_position_embeddings": 4096, "vocab_size": 150000, "hidden_size": 65536, "intermediate_size": 262144,
        "num_hidden_layers": 400, "num_attention_heads": 64}))
    for name in ("train.parquet", "test.parquet"):
        (tmp_path / name).write_bytes(b"")
    params = {"verl_dir": verl_dir, "run_dir": str(tmp_path / "run"), "cards": [0],
              "overrides": ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4",
                            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
                            "actor_rollout_ref.model.path=%s" % model,
                            "data.train_files=%s" % (tmp_path / "train.parquet"),
                            "data.val_files=%s" % (tmp_path / "test.parquet"),
                            "trainer.default_local_dir=%s" % (tmp_path / "checkpoints"),
                            "trainer.device=cpu", "trainer.n_gpus_per_node=1"]}
    return params


def test_a_run_too_big_for_the_disk_names_the_checkpoint_settings_refused_or_warned(tmp_path, verl_634, capfd):
    names = role_setting_names("grpo_train", "verl_config_check")
    fix = ("keep fewer checkpoints (grpo_max_actor_ckpt_to_keep), free space, or point grpo_train_checkpoint_dir at "
           "a larger disk")
    params = _too_big_for_the_disk(tmp_path, verl_634)
    refused = run_module("verl_config_check", dict(params, setting_names=names), check=True)
    assert refused["failed"] and fix in refused["msg"], refused["msg"]
    assert [e["key"] for e in refused["errors"]] == ["trainer.max_actor_ckpt_to_keep"]
    assert fix in refused["errors"][0]["message"]
    # grpo_train_validate false: the same problem, warned, names the same settings
    warned = run_module("verl_config_check", dict(params, setting_names=names, enforce=False), check=True)
    assert not warned.get("failed") and fix in warned["errors"][0]["message"], warned
    # module.warn's text: in the result, or shown at once when an earlier test left Ansible's display set up
    captured = capfd.readouterr()
    assert fix in json.dumps(warned.get("warnings", [])) + captured.out + captured.err
    # without a mapping: the options
    plain = run_module("verl_config_check", params, check=True)
    assert "keep fewer checkpoints (max_actor_ckpt_to_keep), free space, or point checkpoint_dir at" in plain["msg"]


# --- grpo_train_status: why a run ended ----------------------------------------------------------------------------

def _failed_on_a_full_disk(tmp_path):
    """A train job whose log ends in the error of a save on a full disk, and has ended."""
    state, run = tmp_path / "state", tmp_path / "run"
    failed_train_job(state, run, ["Traceback (most recent call last):", '  File "main_ppo.py", line 1, in <module>',
                                  "OSError: [Errno 28] No space left on device"])
    return {"state_dir": str(state), "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c")}


@pytest.mark.parametrize("role", ["grpo_train", "grpo_eval"])
def test_a_run_that_filled_its_disk_names_the_setting_that_keeps_fewer_checkpoints(tmp_path, role):
    params = _failed_on_a_full_disk(tmp_path)
    result = run_module("grpo_train_status", dict(params, setting_names=role_setting_names(role, "grpo_train_status")))
    assert result["state"] == "failed", result
    assert result["error"].startswith("OSError: [Errno 28] No space left on device: the disk is full")
    assert ("Free space (older global_step_N folders; grpo_max_actor_ckpt_to_keep, trainer.max_actor_ckpt_to_keep, "
            "keeps fewer), then rerun: a rerun starts from the beginning") in result["error"], result["error"]
    assert "{" not in result["error"]


def test_without_a_mapping_the_status_names_the_option(tmp_path):
    result = run_module("grpo_train_status", _failed_on_a_full_disk(tmp_path))
    assert "; max_actor_ckpt_to_keep, trainer.max_actor_ckpt_to_keep, keeps fewer" in result["error"], result["error"]


# --- grpo_doctor: the environment the run gets ---------------------------------------------------------------------

def _doctor_params(tmp_path, environment, **changes):
    """The doctor's parameters as the role's task gives them, for a run whose spec is written (a CPU run)."""
    spec = run_spec.build({}, [], {})
    spec["summary"].update({"trainer.device": "cpu", "trainer.n_gpus_per_node": 1, "trainer.nnodes": 1,
                            "actor_rollout_ref.rollout.free_cache_engine": False,
                            "actor_rollout_ref.rollout.gpu_memory_utilization": 0.5})
    run_spec.write(str(tmp_path / ".grpo"), spec)
    with open(FIXTURES + "/npu_smi/910b_1card_23.txt", encoding="utf-8") as handle:
        smi = handle.read()
    params = {"python": sys.executable, "environment": environment, "run_dir": str(tmp_path),
              "state_dir": str(tmp_path / ".grpo"), "cards": [0], "deadline": 30, "npu_smi": smi,
              "setting_names": role_setting_names("grpo_train", "grpo_doctor")}
    params.update(changes)
    return params


def test_a_missing_stack_python_names_the_settings_it_comes_from_in_the_result_and_the_record(tmp_path):
    python = str(tmp_path / "venvs" / "stack" / "bin" / "python")
    result = run_module("grpo_doctor", _doctor_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=0\n", python=python))
    row = result["rows"][0]
    assert row["check"] == "the training environment's Python" and not result["passed"]
    assert ("the stack's Python (grpo_common_python: %s) could not run: it does not exist in the training "
            "environment; it comes from npu_container_stack_venv (grpo_stack_venv)" % python) in row["detail"]
    kept = json.loads((tmp_path / ".grpo" / "doctor.json").read_text(encoding="utf-8"))
    assert kept["rows"] == result["rows"]  # the record says what the result says


def test_the_doctors_fixes_name_the_train_stages_settings_and_the_container_stages(tmp_path):
    params = _doctor_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=1\n", npu_smi="", npu_smi_rc=2,
                            npu_smi_error="[Errno 2] No such file or directory: b'npu-smi'")
    result = run_module("grpo_doctor", params)
    rows = _by_check(result["rows"])
    assert rows["npu-smi"]["fix"].startswith("set npu_container_npu_smi to the NPU host's npu-smi")
    nz = rows["VLLM_ASCEND_ENABLE_NZ=0"]["fix"]
    assert nz.startswith("set VLLM_ASCEND_ENABLE_NZ: '0' in grpo_train_env: with the NZ weight layout")
    # as the launch's refusal shows them (molecule/default/verify/doctor.yml matches this line)
    assert "      fix: set VLLM_ASCEND_ENABLE_NZ: '0' in grpo_train_env: with the NZ weight layout vllm-ascend's " \
           "rollouts come out garbled (vllm-ascend #5747)" in result["failures"]
    assert not [line for line in result["lines"] if "{" in line and "fix:" in line]


def test_without_a_mapping_the_doctor_names_the_options(tmp_path):
    params = _doctor_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=1\n", npu_smi="", npu_smi_rc=2,
                            npu_smi_error="[Errno 2] No such file or directory: b'npu-smi'")
    del params["setting_names"]
    rows = _by_check(run_module("grpo_doctor", params)["rows"])
    assert rows["npu-smi"]["fix"].startswith("set host_npu_smi to the NPU host's npu-smi")
    assert rows["VLLM_ASCEND_ENABLE_NZ=0"]["fix"].startswith("set VLLM_ASCEND_ENABLE_NZ: '0' in environment: ")
