"""The run script the train stage renders: the simulated host's (npu-single + cpu-overlay) against a 910B's
(npu-single), and the sim's overrides against verl@634bd935's own configuration.

The script is rendered from the stage's own template with the stage's own filters, from the same layers the role
composes (reference, profiles in order, the assets stage's paths, the user's). What the overlay may change is read
from the overlay file itself: the sim's script must differ from the NPU script by exactly its keys and variables.
"""

import os
import re
import shlex
import subprocess

import jinja2
import pytest
import yaml
from grpo_testkit import ROOT
from grpo_testkit.upstream import verl_trainer_config

from ascend_grpo.train import overrides as ov


import common_filters as settings_filters  # noqa: E402
import train_filters  # noqa: E402

ROLE = os.path.join(ROOT, "roles", "grpo_train")
# what the assets stage records and the cards the container stage gives (the same on both hosts)
PATHS = {"data": {"train_files": "/data/grpo/data/math/train.parquet", "val_files": "/data/grpo/data/math/test.parquet"},
         "actor_rollout_ref": {"model": {"path": "/data/grpo/models/Qwen2.5-1.5B-Instruct"}},
         "trainer": {"project_name": "p", "experiment_name": "e", "default_local_dir": "/data/grpo/checkpoints/p/e",
                     "logger": ["console", "tensorboard"]},
         "custom_reward_function": {"path": "/data/grpo/reward/math_reward.py", "name": "compute_score"}}
CARDS_ENV = {"ASCEND_RT_VISIBLE_DEVICES": "0"}
# DOMAIN.md, the guide's run: "logger console+tensorboard"
LOGGERS = ["console", "tensorboard"]
TRACKING = train_filters.train_tracking(LOGGERS, "/data/grpo/tracking", "p", "e")


VENV = "/data/grpo/venvs/stack"


def test_the_script_runs_the_stack_venv_first_on_path():
    text, _ = render(["npu-single"])
    lines = text.splitlines()
    assert 'export PATH=/data/grpo/venvs/stack/bin:"$PATH"' in lines
    assert "    /data/grpo/venvs/stack/bin/python -m verl.trainer.main_ppo \\" in lines
    # after the Ascend environment scripts, which set PATH themselves
    assert lines.index('export PATH=/data/grpo/venvs/stack/bin:"$PATH"') > max(
        i for i, line in enumerate(lines) if "set_env.sh" in line)


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def render(profiles, user=None, cluster=None):
    """The run script as the train stage renders it; cluster: the cluster stage's record (several hosts)."""
    layers = [load(os.path.join(ROLE, "files", "profiles", name + ".yml")) for name in profiles]
    reference = load(os.path.join(ROLE, "files", "reference.yml"))
    override_list = train_filters.train_overrides(
        [reference["overrides"]] + [layer["overrides"] for layer in layers]
        + [PATHS, cluster_layer(cluster["nnodes"], cluster["n_gpus_per_node"]) if cluster else {}, user or {}])
    env = train_filters.train_env([reference["env"]] + [layer["env"] for layer in layers]
                                  + [TRACKING["env"], CARDS_ENV, {}])
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")),
                                     undefined=jinja2.StrictUndefined, trim_blocks=True)  # as Ansible renders
    environment.filters["quote"] = shlex.quote
    environment.filters.update(settings_filters.FilterModule().filters())
    text = environment.get_template("run_grpo.sh.j2").render(
        grpo_train_profiles=profiles, grpo_train_env_scripts=["/usr/local/Ascend/ascend-toolkit/set_env.sh"],
        grpo_train_env_merged=env, grpo_train_dir="/data/grpo/runs/p/e", grpo_train_override_list=override_list,
        grpo_stack_venv=VENV, grpo_common_python=VENV + "/bin/python", grpo_common_state_dir="/data/grpo/.grpo", grpo_common_cluster_enabled=bool(cluster),
        _grpo_train_cluster_handover={"records": {"cluster": cluster}}, grpo_train_loggers=LOGGERS,
        grpo_train_tracking=TRACKING)
    return text, override_list


def cluster_layer(nnodes, cards):
    """The layer tasks/compose.yml adds with several hosts, read from the task file, its counts filled in."""
    with open(os.path.join(ROLE, "tasks", "compose.yml"), encoding="utf-8") as handle:
        (layer,) = [task["vars"]["_grpo_train_cluster"] for task in yaml.safe_load(handle)
                    if "_grpo_train_cluster" in task.get("vars", {})]
    layer["trainer"] = {"nnodes": nnodes, "n_gpus_per_node": cards}
    return layer


def script_parts(text):
    """(the Hydra overrides as the shell passes them, {variable: value} exported) read back from the script."""
    body = text[text.index(VENV + "/bin/python -m verl.trainer.main_ppo"):text.index('"$@"')]
    words = shlex.split(body.replace("\\\n", " "))[3:]
    exports = dict(shlex.split(line)[1].split("=", 1) for line in text.splitlines() if line.startswith("export "))
    return words, exports


def key_of(override):
    return override.split("=", 1)[0].lstrip("+")


def test_the_sim_script_differs_from_the_npu_script_only_by_the_overlay():
    npu_text, _ = render(["npu-single"])
    sim_text, _ = render(["npu-single", "cpu-overlay"])
    npu, npu_env = script_parts(npu_text)
    sim, sim_env = script_parts(sim_text)
    overlay = load(os.path.join(ROLE, "files", "profiles", "cpu-overlay.yml"))
    overlay_keys = {key_of(key) for key, _ in ov.flatten(overlay["overrides"])}

    npu_by_key = {key_of(o): o for o in npu}
    sim_by_key = {key_of(o): o for o in sim}
    differing = {k for k in set(npu_by_key) | set(sim_by_key) if npu_by_key.get(k) != sim_by_key.get(k)}
    assert differing <= overlay_keys
    # every key of the overlay is in the sim's script; the ones it sets to what the reference has are the same
    assert overlay_keys <= set(sim_by_key)
    assert differing == {k for k in overlay_keys if npu_by_key.get(k) != sim_by_key[k]}
    assert {k for k in differing if k not in npu_by_key} == {
        "ray_kwargs.ray_init.num_gpus", "ray_kwargs.ray_init.resources.cpu", "ray_kwargs.ray_init.include_dashboard",
        "actor_rollout_ref.actor.strategy", "actor_rollout_ref.ref.strategy", "data.dataloader_num_workers",
        "actor_rollout_ref.rollout.free_cache_engine", "actor_rollout_ref.rollout.max_num_seqs",
        "actor_rollout_ref.rollout.max_num_batched_tokens", "actor_rollout_ref.rollout.calculate_log_probs",
        "trainer.n_gpus_per_node", "trainer.total_training_steps", "trainer.val_before_train",
        "ray_kwargs.ray_init.num_cpus"}
    # the keys Hydra does not know carry their +, the others do not
    assert {o.split("=", 1)[0] for o in sim if o.startswith("+")} == {
        "+ray_kwargs.ray_init.num_gpus", "+ray_kwargs.ray_init.resources.cpu", "+ray_kwargs.ray_init.include_dashboard"}

    env_differing = {k for k in set(npu_env) | set(sim_env) if npu_env.get(k) != sim_env.get(k)}
    assert env_differing == {k for k, v in overlay["env"].items() if npu_env.get(k) != str(v)}
    assert {k: sim_env[k] for k in overlay["env"]} == {k: str(v) for k, v in overlay["env"].items()}
    # outside the overrides and the exports, the two scripts are the same text
    strip = re.compile(r"^(?:export .*|        .*\\|# verl GRPO training, rendered .*)\n", re.M)
    assert strip.sub("", npu_text) == strip.sub("", sim_text)


def test_the_npu_script_keeps_the_guides_settings():
    """DOMAIN.md's reference single-card overrides (device npu, vLLM rollout, n 8, ...) survive in the NPU script."""
    npu, env = script_parts(render(["npu-single"])[0])
    for override in ("trainer.device=npu", "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=8",
                     "data.train_batch_size=256", "actor_rollout_ref.rollout.enforce_eager=True",
                     "actor_rollout_ref.rollout.gpu_memory_utilization=0.8", "trainer.save_freq=70"):
        assert override in npu
    assert env["VLLM_USE_V1"] == "1" and env["HCCL_CONNECT_TIMEOUT"] == "360"


@pytest.fixture(scope="module")
def verl_634_config(tmp_path_factory):
    return os.path.join(verl_trainer_config(tmp_path_factory.mktemp("verl634")), "verl", "trainer", "config")


@pytest.mark.parametrize("profiles", [["npu-single"], ["npu-single", "cpu-overlay"]])
def test_both_scripts_compose_with_verl_634bd935s_own_configuration(verl_634_config, profiles):
    _, override_list = render(profiles)
    assert ov.validate(verl_634_config, override_list) == []


def test_a_typo_in_an_overlay_key_is_named_by_634bd935s_configuration(verl_634_config):
    _, override_list = render(["npu-single", "cpu-overlay"], {"actor_rollout_ref": {"rollout": {"max_num_seq": 4}}})
    errors = ov.validate(verl_634_config, override_list)
    assert [e["key"] for e in errors] == ["actor_rollout_ref.rollout.max_num_seq"]


def test_with_several_hosts_the_run_attaches_to_the_cluster_with_the_inventorys_counts():
    """verl's multinode docs: main_ppo with trainer.nnodes=N trainer.n_gpus_per_node=M, attached through
    RAY_ADDRESS; ray.init attaching to a cluster refuses num_cpus/num_gpus (ValueError), so none is passed."""
    record = {"nnodes": 2, "n_gpus_per_node": 8, "head": "qwen-grpo@npu-a", "head_ip": "10.0.0.11", "port": 6379,
              "auth": "token", "token_path": "/data/grpo/.grpo/ray/auth_token"}
    text, overrides = render(["npu-single", "cpu-overlay"], cluster=record)
    assert "trainer.nnodes=2" in overrides and "trainer.n_gpus_per_node=8" in overrides
    assert not [o for o in overrides if "ray_init.num_" in o or "ray_init.resources" in o
                or "ray_init.include_dashboard" in o]
    assert "\nexport RAY_ADDRESS=10.0.0.11:6379\n" in text
    assert "\nexport RAY_AUTH_MODE=token\nexport RAY_AUTH_TOKEN_PATH=/data/grpo/.grpo/ray/auth_token\n" in text
    single, single_overrides = render(["npu-single", "cpu-overlay"])
    assert "RAY_ADDRESS" not in single and "+ray_kwargs.ray_init.num_gpus=1" in single_overrides
    no_token, _ = render(["npu-single"], cluster=dict(record, auth="none", token_path=""))
    assert "RAY_ADDRESS=10.0.0.11:6379" in no_token and "RAY_AUTH" not in no_token


def test_the_guides_trackers_write_into_the_workspace():
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["grpo_train_loggers"] == LOGGERS
    text, overrides = render(["npu-single"])
    words, exports = script_parts(text)
    assert "trainer.logger=[console,tensorboard]" in words
    # verl's _TensorboardAdapter reads TENSORBOARD_DIR; without it the events land under the folder the run starts in
    assert exports["TENSORBOARD_DIR"] == "/data/grpo/tracking/tensorboard/p/e"
    assert "mkdir -p /data/grpo/tracking/tensorboard/p/e" in text.splitlines()
    assert "VERL_FILE_LOGGER_PATH" not in text


def test_each_tracker_gets_a_place_in_the_workspace_and_the_file_tracker_one_file_per_launch(tmp_path):
    tracking = train_filters.train_tracking(["console", "swanlab", "mlflow", "wandb", "file"], str(tmp_path / "t"),
                                            "p", "e")
    # verl/utils/tracking.py reads these (SWANLAB_MODE defaults to cloud: it would upload)
    assert tracking["env"] == {"SWANLAB_MODE": "offline", "SWANLAB_LOG_DIR": "%s/t/swanlab/p/e" % tmp_path,
                               "MLFLOW_TRACKING_URI": "sqlite:///%s/t/mlflow/mlflow.db" % tmp_path,
                               "WANDB_DIR": "%s/t/wandb/p/e" % tmp_path}
    global TRACKING
    saved, TRACKING = TRACKING, tracking
    try:
        text, _ = render(["npu-single"])
    finally:
        TRACKING = saved
    # run the script's own lines up to the launch, twice (two launches), and look at what the file tracker gets
    head = text[:text.index("train() {")]
    head = head.replace('cd /data/grpo/runs/p/e', 'cd %s' % tmp_path)
    seen = []
    for second in ("01", "02"):
        out = subprocess.run(["bash", "-c", head.replace('$(date +%Y%m%d-%H%M%S)', '20261205-1000' + second)
                              + '\necho "$VERL_FILE_LOGGER_PATH"'], capture_output=True, text=True, check=True)
        seen.append(out.stdout.strip().splitlines()[-1])
    assert seen == ["%s/t/file/p/e/grpo-20261205-100001.jsonl" % tmp_path,
                    "%s/t/file/p/e/grpo-20261205-100002.jsonl" % tmp_path]
    assert sorted(os.listdir(tmp_path / "t")) == ["file", "mlflow", "swanlab", "wandb"]
