"""The eval stage's engine: checkpoint pick and merge plan (result keys and OpenCompass result files:
test_evaluation_results.py; the report and the rendered configuration: test_evaluation_report.py)."""

import json
import os

import pytest
from grpo_testkit import write_file as _write

from ascend_grpo.eval import checkpoint_pick


def _checkpoints(root, steps, latest=None, hf=True):
    for step in steps:
        actor = os.path.join(root, "global_step_%d" % step, "actor")
        _write(os.path.join(actor, "model_world_size_1_rank_0.pt"), "model %d" % step)
        _write(os.path.join(actor, "optim_world_size_1_rank_0.pt"), "optim %d" % step)
        _write(os.path.join(root, "global_step_%d" % step, "data.pt"), "dataloader %d" % step)
        if hf:
            _write(os.path.join(actor, "huggingface", "config.json"), "{}")
            _write(os.path.join(actor, "huggingface", "chat_template.jinja"), "{{ messages }}")
    if latest is not None:
        _write(os.path.join(root, checkpoint_pick.LATEST), "%d\n" % latest)
    return root


# --- which checkpoint ---------------------------------------------------------------------------------------------

def test_pick_takes_the_step_verl_recorded(tmp_path):
    ck = _checkpoints(str(tmp_path), [1, 2], latest=2)
    picked = checkpoint_pick.pick(ck)
    assert picked["step"] == 2 and picked["saved"] == [1, 2] and picked["latest"] == 2
    assert picked["actor_dir"] == os.path.join(ck, "global_step_2", "actor")


# verl's _save_checkpoint writes every rank's shards, then data.pt, then the record: a kill during a save leaves a
# step folder in one of these shapes, each cut (the record still names the step before)
@pytest.mark.parametrize("cut", ["rank 1 missing", "no data.pt", "beyond the record", "empty folder"])
def test_a_step_cut_during_its_save_is_neither_picked_nor_merged(tmp_path, cut):
    ck = _checkpoints(str(tmp_path), [1, 2], latest=2)
    step3 = os.path.join(ck, "global_step_3")
    if cut == "empty folder":
        os.makedirs(step3)
    else:
        for rank in (0, 1):
            _write(os.path.join(step3, "actor", "model_world_size_2_rank_%d.pt" % rank), "model 3")
        _write(os.path.join(step3, "data.pt"), "dataloader 3")
        if cut == "rank 1 missing":
            os.unlink(os.path.join(step3, "actor", "model_world_size_2_rank_1.pt"))
        elif cut == "no data.pt":
            os.unlink(os.path.join(step3, "data.pt"))
    steps = checkpoint_pick.checkpoint_steps(ck)
    assert steps == {"saved": [1, 2], "incomplete": [3], "latest": 2}
    assert checkpoint_pick.pick(ck)["step"] == 2
    with pytest.raises(checkpoint_pick.EvalError) as err:
        checkpoint_pick.pick(ck, 3)
    assert "{step}: step 3 in %s was cut during its save" % ck in str(err.value)
    assert "saved steps: 1, 2" in str(err.value)


def test_a_step_saved_whole_by_two_ranks_counts(tmp_path):
    ck = _checkpoints(str(tmp_path), [1], latest=2)
    for rank in (0, 1):
        _write(os.path.join(ck, "global_step_2", "actor", "model_world_size_2_rank_%d.pt" % rank), "model 2")
    _write(os.path.join(ck, "global_step_2", "data.pt"), "dataloader 2")
    assert checkpoint_pick.checkpoint_steps(ck) == {"saved": [1, 2], "incomplete": [], "latest": 2}


def test_pick_takes_a_given_step(tmp_path):
    ck = _checkpoints(str(tmp_path), [70, 140, 145], latest=145)
    assert checkpoint_pick.pick(ck, 140)["step"] == 140


def test_pick_refuses_a_step_that_was_not_saved_naming_the_saved_ones(tmp_path):
    ck = _checkpoints(str(tmp_path), [70, 140, 145], latest=145)
    with pytest.raises(checkpoint_pick.EvalError) as err:
        checkpoint_pick.pick(ck, 100)
    assert "{step}: step 100 was not saved" in str(err.value)
    assert "saved steps: 70, 140, 145" in str(err.value)


def test_pick_ignores_a_step_folder_without_model_shards(tmp_path):
    ck = _checkpoints(str(tmp_path), [1, 2], latest=2)
    os.unlink(os.path.join(ck, "global_step_2", "actor", "model_world_size_1_rank_0.pt"))
    assert checkpoint_pick.saved_steps(ck) == [1]
    # the record names a step whose save was cut (as after someone deleted its shards): the newest whole one
    assert checkpoint_pick.pick(ck)["step"] == 1
    with pytest.raises(checkpoint_pick.EvalError, match="step 2 .* was cut during its save.*saved steps: 1"):
        checkpoint_pick.pick(ck, 2)


def test_pick_without_record_takes_the_newest_saved(tmp_path):
    ck = _checkpoints(str(tmp_path), [3, 12, 7])
    assert checkpoint_pick.pick(ck)["step"] == 12


def test_pick_refuses_a_missing_folder_and_an_empty_one(tmp_path):
    with pytest.raises(checkpoint_pick.EvalError, match=r"\{checkpoint_dir\}: .* does not exist. Train first"):
        checkpoint_pick.pick(str(tmp_path / "none"))
    os.makedirs(tmp_path / "empty" / "global_step_1")
    with pytest.raises(checkpoint_pick.EvalError, match="holds no saved step"):
        checkpoint_pick.pick(str(tmp_path / "empty"))


# --- whether the merge is current --------------------------------------------------------------------------------

def _merge(actor, target, step):
    """What the module does after verl's merger: files in place, then the record."""
    plan = checkpoint_pick.merge_plan(actor, target, step)
    os.makedirs(target, exist_ok=True)
    _write(os.path.join(target, "model.safetensors"), "weights of %d" % step)
    _write(os.path.join(target, "config.json"), "{}")
    record = checkpoint_pick.merge_record(target, step, actor, plan["source_fingerprint"], "now")
    _write(os.path.join(target, checkpoint_pick.MERGE_MANIFEST), json.dumps(record))
    return plan


def test_merge_plan_first_merge_then_current(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    plan = _merge(actor, target, 2)
    assert plan["action"] == "merge" and not plan["backup"] and plan["reason"] == "no merged folder yet"
    again = checkpoint_pick.merge_plan(actor, target, 2)
    assert again["action"] == "none" and again["reason"] == "it matches step 2's checkpoint"


def test_merge_plan_notices_a_rewritten_checkpoint(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    shard = os.path.join(actor, "model_world_size_1_rank_0.pt")
    stat = os.stat(shard)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    plan = checkpoint_pick.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"]
    assert "another checkpoint" in plan["reason"] or "written since" in plan["reason"]


def test_merge_plan_ignores_the_optimizer_state(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    _write(os.path.join(actor, "optim_world_size_1_rank_0.pt"), "another optimizer state")
    assert checkpoint_pick.merge_plan(actor, target, 2)["action"] == "none"


def test_merge_plan_keeps_an_edited_merged_folder_aside(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    _write(os.path.join(target, "config.json"), '{"edited": true}')
    plan = checkpoint_pick.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "changed since the merge" in plan["reason"]


def test_merge_plan_keeps_a_foreign_folder_aside(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _write(os.path.join(target, "notes.txt"), "mine")
    plan = checkpoint_pick.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "no merge record" in plan["reason"]
    os.unlink(os.path.join(target, "notes.txt"))
    plan = checkpoint_pick.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and not plan["backup"]  # an empty folder is nobody's work


def test_merge_plan_notices_a_merge_of_another_step(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [1, 2], latest=2)
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(os.path.join(ck, "global_step_1", "actor"), target, 1)
    plan = checkpoint_pick.merge_plan(os.path.join(ck, "global_step_2", "actor"), target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "step 1" in plan["reason"]


def test_writable_problem(tmp_path, monkeypatch):
    assert checkpoint_pick.writable_problem(str(tmp_path / "a" / "b" / "global_step_2")) is None
    assert not (tmp_path / "a").exists()  # the probe leaves nothing behind
    _write(str(tmp_path / "file"))
    assert "is not a folder" in checkpoint_pick.writable_problem(str(tmp_path / "file" / "global_step_2"))

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(checkpoint_pick.tempfile, "mkstemp", read_only)
    problem = checkpoint_pick.writable_problem(str(tmp_path / "x" / "global_step_2"))
    assert problem == "%s cannot be written (Read-only file system)" % tmp_path
