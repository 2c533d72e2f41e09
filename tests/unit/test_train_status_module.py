"""grpo_train_status counts saved steps as the eval stage does: one definition of a saved step."""

import os

from conftest import run_module


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
    result = run_module("grpo_train_status", {"state_dir": str(tmp_path / "state"), "job": "train",
                                              "run_dir": str(tmp_path / "run"), "checkpoint_dir": str(ckpt)})
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
