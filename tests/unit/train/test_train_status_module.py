"""grpo_train_status counts saved steps as the eval stage does: one definition of a saved step."""

import os

from grpo_testkit import run_module
from grpo_testkit.jobs import failed_train_job

from ascend_grpo.train import run_status

# the module's defaults (its main() is this spec and a call into run_status.watch)
PARAMS = {"job": "train", "wait": 0, "plot": None, "triage": [], "records_dir": "", "inventory": "",
          "tensorboard_dir": None, "compare_root": None}


def test_a_half_written_step_is_not_a_saved_step(tmp_path):
    ckpt = tmp_path / "ckpt"
    for step, shards in ((1, True), (2, True), (3, False)):  # step 3: the folder a save cut short leaves behind
        actor = ckpt / ("global_step_%d" % step) / "actor"
        actor.mkdir(parents=True)
        if shards:
            (actor / "model_world_size_1_rank_0.pt").write_bytes(b"x")
            (actor.parent / "data.pt").write_bytes(b"x")  # verl's _save_checkpoint: after every rank's shards
    (ckpt / "latest_checkpointed_iteration.txt").write_text("2\n")
    (tmp_path / "run" / "logs").mkdir(parents=True)
    (tmp_path / "state").mkdir()
    result = run_status.watch(dict(PARAMS, state_dir=str(tmp_path / "state"), run_dir=str(tmp_path / "run"),
                                    checkpoint_dir=str(ckpt)))  # in-process: the module's engine
    assert result["checkpoints"] == {"dir": str(ckpt), "saved": [1, 2], "incomplete": [3], "latest": 2}
    assert result["state"] == "absent" and os.listdir(tmp_path / "state") == []


def test_a_run_before_its_first_step_says_so(tmp_path):
    state, run = tmp_path / "state", tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    log = run / "logs" / "latest.log"  # where run_grpo.sh tees verl's output
    started = run_module("grpo_job", {"name": "train", "state_dir": str(state), "state": "started",
                                      "command": ["sh", "-c", "echo 'Total training steps: 2' > %s; sleep 60" % log]})
    assert started["running"], started
    try:
        params = {"state_dir": str(state), "job": "train", "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c"),
                  "wait": 2}
        result = run_module("grpo_train_status", params)
        assert result["progress"] == "running: no step logged yet (of 2)", result
    finally:
        run_module("grpo_job", {"name": "train", "state_dir": str(state), "state": "stopped"})


def test_a_failed_run_says_why_and_what_to_change_with_the_runs_values(tmp_path):
    """The catalogue as the train stage passes it: the failure named, the fix with the run's value from its spec."""
    import yaml
    from grpo_testkit import ROOT

    from ascend_grpo.train import run_spec

    state, run, records = tmp_path / "state", tmp_path / "run", tmp_path / "ws" / ".grpo"
    (run / "logs").mkdir(parents=True)
    # the run's spec, as the train stage's check writes it (data.max_response_length composed, not overridden)
    run_spec.write(str(records), run_spec.build({"data": {"max_response_length": 1024}}, [],
                                                {"actor_rollout_ref.rollout.gpu_memory_utilization": 0.8}))
    # what vLLM 0.13.0 raises (kv_cache_utils.check_enough_kv_cache_memory), then Ray's wrapper in the driver
    failed_train_job(state, run, [
        "(WorkerDict pid=7) ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task."])
    with open(os.path.join(ROOT, "roles", "grpo_train", "files", "triage.yml"), encoding="utf-8") as handle:
        catalogue = yaml.safe_load(handle)
    result = run_module("grpo_train_status", {"state_dir": str(state), "job": "train", "run_dir": str(run),
                                              "checkpoint_dir": str(tmp_path / "c"), "triage": catalogue,
                                              "records_dir": str(records)})
    assert result["state"] == "failed", result
    why = result["triage"]
    assert why["id"] == "kv_cache_does_not_fit" and why["line"] == 1, why
    assert "actor_rollout_ref.rollout.gpu_memory_utilization, now 0.8," in why["fix"]
    assert "data.max_response_length, now 1024" in why["fix"]  # the spec's composed value, never overridden
    # a run without a spec (launched by an older version): the fix says its values are unknown, and how to write it
    (records / "run-spec.json").unlink()
    unknown = run_module("grpo_train_status", {"state_dir": str(state), "job": "train", "run_dir": str(run),
                                               "checkpoint_dir": str(tmp_path / "c"), "triage": catalogue,
                                               "records_dir": str(records), "inventory": "-i inventories/sim"})
    assert ("the run's values are not known: %s is missing" % (records / "run-spec.json")) in unknown["triage"]["fix"]
    assert "ansible-playbook site.yml -i inventories/sim --tags train" in unknown["triage"]["fix"]
    assert why["upstream"] == ["https://github.com/vllm-project/vllm/blob/v0.13.0/vllm/v1/core/kv_cache_utils.py"]
    # without the catalogue: as before, no triage
    assert "triage" not in run_module("grpo_train_status", {"state_dir": str(state), "job": "train",
                                                            "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c")})


def _write_log(run, name, text):
    path = run / "logs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_history_over_launches_compare_and_tensorboard(tmp_path):
    """Two launches of one run (the second resumed from step 2), a second experiment beside it, and the run's
    TensorBoard folder with one event file per launch (SummaryWriter opens a new file each time)."""
    from test_verl_log_history import VAL, line, train

    runs = tmp_path / "runs" / "proj"
    run, other = runs / "lr1e-6", runs / "lr3e-6"
    _write_log(run, "grpo-20261205-100000.log", line(0, {VAL: 0.1}) + train(1, 0.1) + train(2, 0.2, val=0.3)
               + "(TaskRunner pid=1) local_global_step_folder: /c/global_step_2\n" + train(3, 0.3))
    second = _write_log(run, "grpo-20261205-110000.log",
                        "(TaskRunner pid=2) Load from checkpoint folder: /c/global_step_2\n"
                        + line(2, {VAL: 0.3}) + train(3, 0.35) + train(4, 0.4, val=0.5))
    os.symlink(second.name, run / "logs" / "latest.log")
    _write_log(other, "grpo-20261205-120000.log", train(1, 0.1, val=0.2) + "(TaskRunner pid=3) Total training "
               "steps: 9\n")
    (runs / "no-log-yet" / "logs").mkdir(parents=True)
    board = tmp_path / "tensorboard" / "proj" / "lr1e-6"
    board.mkdir(parents=True)
    for stamp in ("1733392800", "1733396400"):
        (board / ("events.out.tfevents.%s.host.42.0" % stamp)).write_bytes(b"")
    (tmp_path / "state").mkdir()
    result = run_module("grpo_train_status", {
        "state_dir": str(tmp_path / "state"), "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c"),
        "tensorboard_dir": str(board), "compare_root": str(tmp_path / "runs")})
    assert result["history"] == {"segments": 2, "steps": [1, 2, 3, 4],
                                 "validations": [[0, 0.1], [2, 0.3], [4, 0.5]]}
    assert result["steps_logged"] == 2  # this launch's own steps (what a wait counts)
    summary = result["summary"]
    assert (summary["val_score"], summary["val_step"], summary["best_val_score"]) == (0.5, 4, 0.5)
    assert [part["part"] for part in summary["time_split"]] == ["generation", "update", "other"]
    assert result["tensorboard"] == {"dir": str(board), "event_files": 2}
    rows = {row["experiment"]: row for row in result["compare"]}
    assert sorted(rows) == ["lr1e-6", "lr3e-6"]
    assert (rows["lr1e-6"]["state"], rows["lr1e-6"]["step"], rows["lr1e-6"]["segments"]) == ("absent", 4, 2)
    assert (rows["lr3e-6"]["state"], rows["lr3e-6"]["best_val_score"], rows["lr3e-6"]["total_steps"]) == (
        "unfinished", 0.2, 9)
    table = result["compare_table"].splitlines()
    assert [cells.split()[1] for cells in table[2:4]] == ["lr1e-6", "lr3e-6"]
    assert table[2].split()[4] == "0.500@4"


def test_the_last_launch_overrides_and_what_its_log_says_of_the_runs_length(tmp_path):
    """What the train stage's launch decision reads (ascend_grpo.train.run_plan): the last line of launches.jsonl, and the
    totals the current log printed."""
    import json

    run = tmp_path / "run"
    _write_log(run, "grpo-1.log", "Size of train dataloader: 9, Size of val dataloader: 1\nTotal training steps: 9\n")
    _write_log(run, "grpo-2.log", "Size of train dataloader: 6, Size of val dataloader: 1\n"
                                  "{'trainer': {'total_epochs': 1,\nTotal training steps: 2\n")
    os.symlink("grpo-2.log", run / "logs" / "latest.log")
    # each record: the words (for people) and the merged mapping they were written from (what the plan reads)
    (run / "launches.jsonl").write_text(
        json.dumps({"overrides": ["trainer.total_training_steps=9"],
                    "override_map": {"trainer.total_training_steps": 9}}) + "\n"
        + json.dumps({"overrides": ["trainer.total_training_steps=2", "+data.x='a=b'"],
                      "override_map": {"trainer.total_training_steps": 2, "+data.x": "a=b"}}) + "\n")
    params = {"state_dir": str(tmp_path / "state"), "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c")}
    result = run_module("grpo_train_status", params)
    assert result["launch_overrides"] == ["trainer.total_training_steps=2", "+data.x='a=b'"]
    assert result["launch_override_map"] == {"trainer.total_training_steps": 2, "+data.x": "a=b"}
    assert result["last_log"] == {"total_steps": 2, "batches_per_epoch": 6, "total_epochs": 1}
    # a launch recorded before the records kept the mapping (words only): no mapping, its words not parsed back
    with open(run / "launches.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"overrides": ["trainer.total_training_steps=5"]}) + "\n")
    old = run_status.watch(dict(PARAMS, **params))
    assert old["launch_overrides"] == ["trainer.total_training_steps=5"] and old["launch_override_map"] is None
    (run / "launches.jsonl").unlink()
    gone = run_module("grpo_train_status", params)
    assert gone["launch_overrides"] is None and gone["launch_override_map"] is None


def test_the_status_returns_the_runs_spec_for_the_eval_report_and_never_another_runs(tmp_path):
    """The eval stage reads what its run is from the status it looks at anyway (``spec: true``): the spec the train
    stage's check wrote, only when it is this run's; otherwise {} and why, with the command that writes it."""
    from ascend_grpo.train import run_spec

    state, run, records = tmp_path / "state", tmp_path / "run", tmp_path / "ws" / ".grpo"
    (run / "logs").mkdir(parents=True)
    params = {"state_dir": str(state), "run_dir": str(run), "checkpoint_dir": str(tmp_path / "c"),
              "records_dir": str(records), "inventory": "-i inventories/sim", "spec": True}
    missing = run_module("grpo_train_status", params)
    assert missing["spec"] == {} and "ansible-playbook site.yml -i inventories/sim --tags train" in (
        missing["spec_problem"]), missing
    spec = run_spec.build({"trainer": {"n_gpus_per_node": 1}}, ["trainer.total_training_steps=2"],
                          {"trainer.total_training_steps": 2})
    spec["run_dir"] = str(run)
    run_spec.write(str(records), spec)
    found = run_module("grpo_train_status", params)
    assert found["spec"]["overrides"] == {"trainer.total_training_steps": 2} and "spec_problem" not in found
    spec["run_dir"] = str(tmp_path / "another")
    run_spec.write(str(records), spec)
    other = run_module("grpo_train_status", params)
    assert other["spec"] == {} and "describes another run" in other["spec_problem"], other
    assert "spec" not in run_module("grpo_train_status", dict(params, spec=False))
