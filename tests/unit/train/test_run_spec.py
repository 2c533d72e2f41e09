"""The run's spec (issue 45): written once by the train stage's check, as data, in the workspace's state folder; the
readers (doctor, status and triage, eval, bundle) read it instead of parsing override strings or the run script."""

import json
import os

import pytest
from grpo_testkit import ROOT, run_module
from grpo_testkit.upstream import verl_trainer_config

from ascend_grpo.common import workspace
from ascend_grpo.train import overrides as ov
from ascend_grpo.train import run_spec

import train_filters  # noqa: E402

# The reference single-card run's values (DOMAIN.md "Training facts", run_qwen2_5_1_5b_single.sh).
REFERENCE_BATCH, REFERENCE_PROMPT, REFERENCE_RESPONSE = 256, 512, 1024


@pytest.fixture(scope="module")
def verl_634(tmp_path_factory):
    """verl@634bd935's tree with its trainer configuration only (the check reads nothing else)."""
    return verl_trainer_config(tmp_path_factory.mktemp("verl634"))


def _reference_overrides():
    import yaml

    with open(os.path.join(ROOT, "roles", "grpo_train", "files", "reference.yml"), encoding="utf-8") as handle:
        reference = yaml.safe_load(handle)
    return train_filters.train_overrides([reference["overrides"]])


def _spec(**summary):
    return run_spec.build({}, [], {}, run_dir="/ws/runs/p/e") | {"summary": dict(
        {key: None for key in run_spec.SUMMARY}, **summary)}


def test_write_read_and_check_mode(tmp_path):
    state = tmp_path / "ws" / ".grpo"
    spec = run_spec.build({"trainer": {"nnodes": 1}}, ["trainer.nnodes=1"], {"trainer.nnodes": 1}, run_dir="/r")
    assert spec["version"] == run_spec.VERSION and spec["argv"] == ["trainer.nnodes=1"]
    assert spec["summary"]["trainer.nnodes"] == 1 and spec["summary"]["trainer.save_freq"] is None
    changed, diff = run_spec.write(str(state), spec, check_mode=True)
    assert changed and diff["before"] == {} and diff["after"] == spec
    assert not state.exists()  # check mode writes nothing
    assert run_spec.write(str(state), spec)[0]
    assert json.loads((state / "run-spec.json").read_text()) == spec
    assert run_spec.read(str(state)) == spec
    assert run_spec.write(str(state), spec) == (False, run_spec.write(str(state), spec, check_mode=True)[1])


def test_a_missing_or_older_spec_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(run_spec.MissingSpec) as err:
        run_spec.read(str(tmp_path), "-i inventories/sim")
    assert "run-spec.json is missing" in str(err.value)
    assert "ansible-playbook site.yml -i inventories/sim --tags train" in str(err.value)
    (tmp_path / "run-spec.json").write_text(json.dumps({"version": 0}))
    with pytest.raises(run_spec.MissingSpec) as err:
        run_spec.read(str(tmp_path))
    assert "ansible-playbook site.yml -i <your inventory> --tags train" in str(err.value)


def test_a_spec_of_another_run_is_refused_when_the_reader_names_its_run(tmp_path):
    run_spec.write(str(tmp_path), run_spec.build({}, [], {}, run_dir="/ws/runs/p/a"))
    assert run_spec.read(str(tmp_path), run_dir="/ws/runs/p/a/")["run_dir"] == "/ws/runs/p/a"
    with pytest.raises(run_spec.MissingSpec) as err:
        run_spec.read(str(tmp_path), "-i inventories/sim", run_dir="/ws/runs/p/b")
    assert "describes another run (/ws/runs/p/a), not /ws/runs/p/b" in str(err.value)
    assert "ansible-playbook site.yml -i inventories/sim --tags train" in str(err.value)


def test_the_spec_is_never_written_through_a_link(tmp_path):
    state = tmp_path / "ws" / ".grpo"
    state.mkdir(parents=True)
    (state / "run-spec.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(workspace.LinkedPath):
        run_spec.write(str(state), _spec())
    assert not (tmp_path / "elsewhere.json").exists()


def test_values_are_the_composed_summary_with_the_overrides_over_it():
    spec = dict(_spec(**{"data.max_response_length": 1024}),
                overrides={"+trainer.x": "a b", "data.max_prompt_length": 192})
    values = run_spec.values(spec)
    assert values["data.max_response_length"] == 1024 and values["data.max_prompt_length"] == 192
    assert values["trainer.x"] == "a b"


def test_the_reference_run_composed_once_with_634bd935s_configuration(verl_634):
    words = _reference_overrides()
    cfg, errors = ov.check(os.path.join(verl_634, "verl", "trainer", "config"), words)
    assert errors == []
    from omegaconf import OmegaConf

    spec = run_spec.build(OmegaConf.to_container(cfg, resolve=True), words, ov.as_mapping(words))
    summary = spec["summary"]
    assert (summary["data.train_batch_size"], summary["data.max_prompt_length"],
            summary["data.max_response_length"]) == (REFERENCE_BATCH, REFERENCE_PROMPT, REFERENCE_RESPONSE)
    assert summary["algorithm.adv_estimator"] == "grpo"
    # not in the overrides: verl@634bd935's own default, filled in by the composition (rollout.yaml)
    assert "actor_rollout_ref.rollout.free_cache_engine" not in " ".join(words)
    assert summary["actor_rollout_ref.rollout.free_cache_engine"] is True
    assert spec["overrides"]["data.train_batch_size"] == REFERENCE_BATCH
    assert spec["argv"] == words


def test_the_check_module_writes_the_spec_once_with_check_mode_and_diff(tmp_path, verl_634):
    state = tmp_path / "ws" / ".grpo"
    state.mkdir(parents=True)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))
    for name in ("train.parquet", "test.parquet"):
        (tmp_path / name).write_bytes(b"")
    params = {"verl_dir": verl_634, "state_dir": str(state), "run_dir": "/ws/runs/p/e",
              "overrides": ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4",
                            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
                            "actor_rollout_ref.model.path=%s" % (tmp_path / "model"),
                            "data.train_files=%s" % (tmp_path / "train.parquet"),
                            "data.val_files=%s" % (tmp_path / "test.parquet"),
                            "trainer.device=cpu", "trainer.n_gpus_per_node=1"], "cards": [0]}
    would = run_module("verl_config_check", params, check=True)
    assert not would.get("failed"), would.get("msg")
    assert would["changed"] and not (state / "run-spec.json").exists()
    done = run_module("verl_config_check", params)
    assert done["changed"] and done["spec"] == str(state / "run-spec.json")
    spec = run_spec.read(str(state))
    assert spec["run_dir"] == "/ws/runs/p/e" and spec["overrides"]["actor_rollout_ref.rollout.n"] == 4
    assert spec["summary"]["actor_rollout_ref.rollout.n"] == 4 == done["summary"]["actor_rollout_ref.rollout.n"]
    # the rest in-process: the module is its argument spec (these defaults) and a call into run_spec.check_run
    params = dict(params, enforce=True, config_name="ppo_trainer", inventory="")
    assert not run_spec.check_run(params)[0]["changed"]
    # grpo_train_validate false: a problem is a warning, the spec is still written (the run then fails by itself)
    bad = dict(params, enforce=False, overrides=[
        o.replace("tensor_model_parallel_size=1", "tensor_model_parallel_size=2") for o in params["overrides"]])
    warned, warnings = run_spec.check_run(bad)
    assert warned["changed"] and warnings[0].startswith("actor_rollout_ref.rollout.tensor_model_parallel_size: 2 ")
    assert [e["key"] for e in warned["errors"]] == ["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert run_spec.read(str(state))["summary"]["actor_rollout_ref.rollout.tensor_model_parallel_size"] == 2
    with pytest.raises(run_spec.CheckFailed):
        run_spec.check_run(dict(bad, enforce=True))


def test_the_check_in_process_composes_writes_and_refuses(tmp_path, verl_634):
    state = tmp_path / "ws" / ".grpo"
    base = {"verl_dir": verl_634, "state_dir": str(state), "run_dir": "/r", "enforce": True, "cards": [0],
            "config_name": "ppo_trainer", "inventory": "-i inventories/sim",
            "overrides": ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=1"]}
    with pytest.raises(run_spec.CheckFailed) as err:
        run_spec.check_run(base)
    assert "actor_rollout_ref.rollout.n" in [e["key"] for e in err.value.errors]
    assert str(err.value).startswith("The run would fail; change: ")
    result, warnings = run_spec.check_run(dict(base, enforce=False), check_mode=True)
    assert result["changed"] and result["diff"]["after"]["summary"]["actor_rollout_ref.rollout.n"] == 1
    assert any(w.startswith("actor_rollout_ref.rollout.n: GRPO compares several responses") for w in warnings)
    assert not state.exists()
    with pytest.raises(run_spec.CheckFailed) as err:
        run_spec.check_run(dict(base, verl_dir=""))
    assert "deps.json is missing: run the deps stage first (ansible-playbook site.yml -i inventories/sim " \
           "--tags deps). Or set {verl_dir}" in str(err.value)
