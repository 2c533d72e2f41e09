"""The checks before launch: each rule on its own, with the setting to change named."""

import copy
import json

import pytest
from grpo_testkit.setting_names import module_options, role_setting_names

from ascend_grpo.common import errors
from ascend_grpo.train import train_rules

CFG = {
    "algorithm": {"adv_estimator": "grpo"},
    "data": {"train_batch_size": 256, "max_prompt_length": 512, "max_response_length": 1024,
             "train_files": "/ws/data/train.parquet", "val_files": "/ws/data/test.parquet"},
    "actor_rollout_ref": {
        "model": {"path": "/ws/models/Qwen2.5-1.5B-Instruct"},
        "actor": {"ppo_mini_batch_size": 256, "ppo_micro_batch_size_per_gpu": 8,
                  "ulysses_sequence_parallel_size": 1},
        "rollout": {"n": 8, "tensor_model_parallel_size": 1}},
    "custom_reward_function": {"path": "/ws/reward/math_reward.py", "name": "compute_score"},
    "trainer": {"n_gpus_per_node": 1, "nnodes": 1, "default_local_dir": "/ws/checkpoints"},
}
ENV = {"cards": [0], "model_dir_exists": True,
       "model_config": {"max_position_embeddings": 32768, "torch_dtype": "bfloat16"},
       "weights_bytes": 3_087_467_144, "missing_files": [], "free_bytes": 200 * 2**30,
       "reward_text": "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n"}


def _with(cfg=None, env=None, **changes):
    cfg = copy.deepcopy(cfg or CFG)
    for dotted, value in changes.items():
        node = cfg
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[part]
        node[last] = value
    return train_rules.check(cfg, dict(ENV, **(env or {})))


def test_the_reference_settings_pass():
    assert train_rules.check(CFG, ENV) == []


@pytest.mark.parametrize("changes, env, key, words", [
    ({"actor_rollout_ref__rollout__n": 1}, None, "actor_rollout_ref.rollout.n", "set actor_rollout_ref.rollout.n to 2"),
    ({"actor_rollout_ref__actor__ppo_mini_batch_size": 512}, None, "actor_rollout_ref.actor.ppo_mini_batch_size",
     "512 is larger than data.train_batch_size (256)"),
    ({"actor_rollout_ref__actor__ppo_mini_batch_size": 100}, None, "actor_rollout_ref.actor.ppo_mini_batch_size",
     "100 does not divide data.train_batch_size (256)"),
    ({"actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu": 48}, None,
     "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "48 does not divide the 2048 responses"),
    ({"trainer__n_gpus_per_node": 4}, None, "trainer.n_gpus_per_node", "has 1 visible card(s) (0): set it to 1"),
    ({"actor_rollout_ref__rollout__tensor_model_parallel_size": 2}, None,
     "actor_rollout_ref.rollout.tensor_model_parallel_size", "2 does not divide the 1 device(s)"),
    ({"data__max_response_length": 32768}, None, "data.max_response_length", "exceeds the model's"),
    ({}, {"model_dir_exists": False}, "actor_rollout_ref.model.path", "holds no config.json"),
    ({}, {"missing_files": [["data.train_files", "/ws/data/train.parquet"]]}, "data.train_files",
     "/ws/data/train.parquet does not exist"),
    ({}, {"reward_text": None}, "custom_reward_function.path", "does not exist"),
    ({}, {"reward_text": "def score(x):\n    return 1\n"}, "custom_reward_function.name", "defines no compute_score"),
    ({}, {"reward_text": "def compute_score(:\n"}, "custom_reward_function.name", "does not parse"),
    # the reference run keeping every save (3: steps 70, 140, 145) and its merged model: 3 x 18.5 + 3.1 GB
    ({}, {"free_bytes": 10 * 2**30}, "trainer.max_actor_ckpt_to_keep",
     "need about 54.6 GiB (checkpoints 3 x 18.5 GB"),
    ({"trainer__max_actor_ckpt_to_keep": 2}, {"free_bytes": 10 * 2**30}, "trainer.max_actor_ckpt_to_keep",
     "need about 37.4 GiB (checkpoints 2 x 18.5 GB"),
])
def test_each_rule_names_the_setting(changes, env, key, words):
    errors = _with(env=env, **changes)
    assert [e["key"] for e in errors] == [key], errors
    assert words in errors[0]["message"]


def test_two_cards_with_tensor_parallel_two_pass():
    assert _with(env={"cards": [2, 3]}, trainer__n_gpus_per_node=2,
                 actor_rollout_ref__rollout__tensor_model_parallel_size=2) == []


def test_every_problem_is_reported_at_once():
    errors = _with(actor_rollout_ref__rollout__n=1, trainer__n_gpus_per_node=2, env={"reward_text": None})
    assert len(errors) >= 3


def test_reward_defined_by_assignment_counts():
    assert train_rules.defines("from x import y\ncompute_score = y\n", "compute_score")
    assert not train_rules.defines("def other():\n    compute_score = 1\n", "compute_score")


def test_the_checkpoints_counted_follow_the_runs_length_and_what_verl_keeps():
    cfg = copy.deepcopy(CFG)
    cfg["trainer"].update(save_freq=70, total_epochs=5)
    # DOMAIN.md: 7,500 train problems, 256 a batch with drop_last: 29 steps an epoch, 145 steps, saves 70, 140, 145
    assert train_rules.checkpoints_on_disk(cfg, 7500)[0] == 3
    cfg["trainer"]["max_actor_ckpt_to_keep"] = 2
    count, how = train_rules.checkpoints_on_disk(cfg, 7500)
    assert count == 2 and how == "2 of the run's 3 saves (145 steps, save_freq 70), trainer.max_actor_ckpt_to_keep 2"
    cfg["trainer"].update(total_training_steps=2, save_freq=1, max_actor_ckpt_to_keep=None)
    assert train_rules.checkpoints_on_disk(cfg, None)[0] == 2
    # enough room for two checkpoints of the model, not for every save of the reference run
    roomy = dict(ENV, free_bytes=45 * 10**9, train_rows=7500)
    cfg = copy.deepcopy(CFG)
    cfg["trainer"].update(save_freq=70, total_epochs=5, max_actor_ckpt_to_keep=2)
    assert train_rules.check(cfg, roomy) == []
    cfg["trainer"]["max_actor_ckpt_to_keep"] = None
    assert [e["key"] for e in train_rules.check(cfg, roomy)] == ["trainer.max_actor_ckpt_to_keep"]
    message = train_rules.check(cfg, roomy)[0]["message"]
    assert "keep fewer checkpoints ({max_actor_ckpt_to_keep})" in message and "point {checkpoint_dir} at" in message
    # the check's module names them as the train stage's settings (its role's mapping)
    named = errors.name_fields(message, role_setting_names("grpo_train", "verl_config_check"),
                               module_options("verl_config_check"))
    assert "grpo_max_actor_ckpt_to_keep" in named and "or point grpo_train_checkpoint_dir at a larger disk" in named


def test_facts_from_the_host(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 512}))
    (model / "model.safetensors").write_bytes(b"x" * 1000)
    reward = tmp_path / "reward.py"
    reward.write_text("def compute_score(**kw):\n    return 0\n")
    cfg = copy.deepcopy(CFG)
    cfg["actor_rollout_ref"]["model"]["path"] = str(model)
    cfg["custom_reward_function"]["path"] = str(reward)
    cfg["data"]["train_files"] = str(reward)
    cfg["data"]["val_files"] = [str(tmp_path / "missing.parquet")]
    cfg["trainer"]["default_local_dir"] = str(tmp_path / "not" / "yet" / "there")
    found = train_rules.facts(cfg, [0])
    assert found["model_dir_exists"] and found["weights_bytes"] == 1000
    assert found["missing_files"] == [["data.val_files", str(tmp_path / "missing.parquet")]]
    assert found["reward_text"].startswith("def compute_score") and found["free_bytes"] > 0
