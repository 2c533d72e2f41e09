"""The user's overrides cannot reach what the run script sets itself (issue 44, item 5): verl hands
ray_kwargs.ray_init to ray.init() whole, so an override could open Ray's dashboard and job API on every interface
although the run script promises it never does, and trainer.default_local_dir moved the checkpoints past every check
of grpo_train_checkpoint_dir."""

import os
import re

import pytest
import yaml
from grpo_testkit import ROOT, run_role

from ascend_grpo.train import overrides

import train_filters  # noqa: E402

OWNED_CHECK = "Preflight | Refuse overrides of what the run script sets itself (Ray's dashboard, checkpoints, trackers)"


def test_verl_passes_every_ray_init_key_to_ray_init(upstream_634):
    """The spec: verl's main_ppo.py at the guide's commit gives ray.init the user's ray_kwargs.ray_init whole, so
    ray.init's own dashboard_host (Ray's default 127.0.0.1) is reachable through an override."""
    with open(os.path.join(upstream_634, "verl", "trainer", "main_ppo.py"), encoding="utf-8") as handle:
        text = handle.read()
    assert 'ray_init_kwargs = config.ray_kwargs.get("ray_init", {})' in text
    assert re.search(r"ray\.init\(\*\*OmegaConf\.to_container\(ray_init_kwargs\)\)", text)


@pytest.mark.parametrize("user, key, setting", [
    ({"ray_kwargs": {"ray_init": {"dashboard_host": "0.0.0.0"}}}, "ray_kwargs.ray_init.dashboard_host",
     "ray_cluster_dashboard"),
    ({"+ray_kwargs": {"ray_init": {"+include_dashboard": True}}}, "ray_kwargs.ray_init.include_dashboard",
     "ray_cluster_dashboard"),
    ({"ray_kwargs": {"ray_init": {"dashboard_port": 8265}}}, "ray_kwargs.ray_init.dashboard_port",
     "ray_cluster_dashboard_port"),
    ({"ray_kwargs": {"ray_init": {"address": "10.0.0.9:6379"}}}, "ray_kwargs.ray_init.address", "grpo_cluster_head"),
    ({"trainer": {"default_local_dir": "/tmp/elsewhere"}}, "trainer.default_local_dir", "grpo_train_checkpoint_dir"),
    ({"trainer": {"default_local_dir": None}}, "trainer.default_local_dir", "grpo_train_checkpoint_dir"),
    ({"trainer": {"logger": ["console", "wandb"]}}, "trainer.logger", "grpo_train_loggers"),
    ({"trainer": {"experiment_name": "../../x"}}, "trainer.experiment_name", "grpo_train_experiment"),
    # verl at 634bd935 (_generated_ppo_trainer.yaml): trust_remote_code under actor_rollout_ref.model, data,
    # critic.model and reward_model.model, false by default; on, a model folder's own code runs (issue 44)
    ({"actor_rollout_ref": {"model": {"trust_remote_code": True}}}, "actor_rollout_ref.model.trust_remote_code",
     "grpo_trust_remote_code"),
    ({"data": {"trust_remote_code": True}}, "data.trust_remote_code", "grpo_trust_remote_code"),
    ({"critic": {"model": {"trust_remote_code": True}}}, "critic.model.trust_remote_code", "grpo_trust_remote_code"),
])
def test_an_override_of_what_the_package_owns_is_refused_naming_the_setting(user, key, setting):
    problems = train_filters.train_owned_overrides(user)
    assert len(problems) == 1, problems
    assert problems[0].startswith("grpo_train_overrides sets %s: the run script sets it itself" % key)
    assert setting in problems[0]
    # the engine names its fields, the train stage's filter its settings
    (engine,) = overrides.owned_problems(user)
    assert engine.startswith("{overrides} sets %s: the run script sets it itself" % key) and setting not in engine


def test_replacing_the_mapping_that_holds_an_owned_key_is_refused():
    (problem,) = train_filters.train_owned_overrides({"ray_kwargs": {"ray_init": None}})[:1]
    assert problem.startswith("grpo_train_overrides sets ray_kwargs.ray_init (which holds ray_kwargs.ray_init.")


def test_the_overrides_the_package_itself_uses_pass():
    """The sim's overrides and the molecule refusals' (a model path, a corrupt train file, a reward path)."""
    with open(os.path.join(ROOT, "inventories", "sim", "group_vars", "all", "10-sim-overlay.yml"),
              encoding="utf-8") as handle:
        sim = yaml.safe_load(handle)
    for user in (sim["sim_train_overrides"], sim["sim_drill_overrides"], {"trainer": {"total_epochs": 2}},
                 {"actor_rollout_ref": {"model": {"path": "/data/grpo/models/none"}}},
                 {"data": {"train_files": "/data/grpo/corrupt.parquet"}},
                 {"ray_kwargs": {"ray_init": {"num_cpus": 4}}}):
        assert overrides.owned_problems(user) == [], user


def test_the_train_stage_refuses_a_dashboard_on_every_interface_before_anything(tmp_path):
    done = run_role(tmp_path, "grpo_train", {"grpo_train_overrides": {
        "ray_kwargs": {"ray_init": {"dashboard_host": "0.0.0.0"}}, "trainer": {"default_local_dir": "/tmp/x"}}})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == OWNED_CHECK
    assert "grpo_train_overrides sets ray_kwargs.ray_init.dashboard_host" in msg
    assert "grpo_train_overrides sets trainer.default_local_dir" in msg and "grpo_train_checkpoint_dir" in msg
    assert os.listdir(tmp_path) == ["grpo_train.yml"]  # nothing made


def test_a_profile_file_of_your_own_cannot_set_them_either_the_packages_own_profiles_may(tmp_path):
    """A run profile of one's own (grpo_train_profiles naming a file) is one more layer of overrides."""
    builtin = os.path.join(ROOT, "roles", "grpo_train", "files", "profiles")
    own = tmp_path / "mine.yml"
    data = {"overrides": {"ray_kwargs": {"ray_init": {"dashboard_host": "0.0.0.0"}}, "trainer": {"total_epochs": 1}}}
    own.write_text(yaml.safe_dump(data))
    (problem,) = train_filters.train_profile_owned([{"name": "mine", "path": str(own), "data": data}], builtin)
    assert problem.startswith("grpo_train_profiles (the profile file %s) sets ray_kwargs.ray_init.dashboard_host"
                              % own)
    assert "ray_cluster_dashboard and ray_cluster_dashboard_port" in problem
    (engine,) = overrides.owned_in_profiles([{"name": "mine", "path": str(own), "data": data}], builtin)
    assert engine.startswith("{profiles} (the profile file %s) sets" % own) and "{dashboard}" in engine
    packaged = []
    for name in sorted(os.listdir(builtin)):
        with open(os.path.join(builtin, name), encoding="utf-8") as handle:
            packaged.append({"name": name, "path": os.path.join(builtin, name), "data": yaml.safe_load(handle)})
    # the simulated host's overlay turns the dashboard off and sets its own card count: the package's choice
    assert any(overrides.owned_problems((p["data"] or {}).get("overrides") or {}) for p in packaged)
    assert overrides.owned_in_profiles(packaged, builtin) == []
