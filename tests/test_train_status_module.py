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
