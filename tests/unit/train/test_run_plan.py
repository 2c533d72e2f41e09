"""The train stage's launch decision (a run at or past its total trains nothing) and the eval stage's gate (never
OpenCompass on the cards a going run holds), ascend_grpo.train.run_plan."""

import json
import os
import shlex

import pytest

from ascend_grpo.train import run_plan

import eval_filters  # noqa: E402
import train_filters  # noqa: E402

# The merged overrides as data (overrides.override_map), as the role hands them to the plan and a launch's record
# keeps them
SIM = {"data.train_files": "/data/grpo/data/math/train.parquet", "data.train_batch_size": 4,
       "actor_rollout_ref.model.path": "/data/grpo/models/tiny-qwen2", "trainer.total_epochs": 1,
       "trainer.total_training_steps": 2, "trainer.resume_mode": "auto"}


def _with(overrides, **changes):
    """``overrides`` with dotted keys replaced (None drops the key, as a null layer does in overrides.deep_merge)."""
    out = {k: v for k, v in overrides.items() if k.lstrip("+") not in changes}
    return dict(out, **{k: v for k, v in changes.items() if v is not None})


def _finished(saved, script="aaa", overrides=SIM, total=2, batches=6, epochs=1, state="finished"):
    """What grpo_train_status returns for a run that ended with ``saved`` steps whole."""
    return {"state": state, "running": False, "step": saved[-1] if saved else None, "total_steps": total,
            "checkpoints": {"saved": saved, "incomplete": [], "latest": saved[-1] if saved else None},
            "last_launch": {"script_sha1": script, "cards": "0"}, "launch_override_map": overrides,
            "last_log": {"total_steps": total, "batches_per_epoch": batches, "total_epochs": epochs}}


# --- the total a launch stops at -------------------------------------------------------------------------------------

def test_total_is_the_override_when_set():
    got = run_plan.planned_total(_with(SIM, **{"trainer.total_training_steps": 7}), SIM, {"total_steps": 2})
    assert got["total"] == 7 and got["raise"] == "trainer.total_training_steps in {overrides}"


def test_total_from_the_last_log_when_nothing_that_decides_it_changed():
    no_total = _with(SIM, **{"trainer.total_training_steps": None})
    changed_lr = _with(no_total, **{"actor_rollout_ref.actor.optim.lr": 0.001})
    got = run_plan.planned_total(changed_lr, no_total, {"total_steps": 6, "batches_per_epoch": 6})
    assert got["total"] == 6 and "trainer.total_epochs" in got["raise"]


def test_total_is_epochs_times_the_loader_when_only_the_epochs_changed():
    last = _with(SIM, **{"trainer.total_training_steps": None})
    new = _with(last, **{"trainer.total_epochs": 3})
    got = run_plan.planned_total(new, last, {"total_steps": 6, "batches_per_epoch": 6, "total_epochs": 1})
    assert got["total"] == 18 and "trainer.total_epochs=3 x 6 steps an epoch" in got["how"]


def test_total_unknown_when_the_data_changed_or_nothing_was_logged():
    last = _with(SIM, **{"trainer.total_training_steps": None})
    new = _with(last, **{"data.train_batch_size": 8})
    assert run_plan.planned_total(new, last, {"total_steps": 6, "batches_per_epoch": 6})["total"] is None
    assert run_plan.planned_total(last, None, None)["total"] is None
    assert run_plan.planned_total(last, last, {"total_steps": None, "batches_per_epoch": None})["total"] is None


def test_an_explicit_null_total_and_a_plus_key_are_read():
    # a '+' in front is Hydra's mark, not part of the setting: +trainer.total_training_steps is the total
    assert run_plan.planned_total({"+trainer.x": "a b", "+trainer.total_training_steps": 7}, None,
                                  None)["total"] == 7
    assert run_plan.planned_total({"trainer.total_training_steps": None, "trainer.total_epochs": 2}, None,
                                  None)["total"] is None


def test_the_plan_decides_from_the_merged_mapping_as_verl_reads_its_words():
    """The plan takes the merged overrides as data (overrides.override_map), the mapping the run's words are written
    from: Hydra's own parser (verl's) reads exactly that mapping back from the words, values holding '=', lists and
    keys with '-' included, and the plan compares those values. The word parser it replaces kept Hydra's quoting and
    skipped a key with '-' (so a change there looked like no change of the data)."""
    from ascend_grpo.train import overrides as ov

    base = {"data": {"train_files": ["/d/math=v2/train.parquet", "/d/extra.parquet"], "+min-len": "len>=8",
                     "train_batch_size": 4},
            "actor_rollout_ref": {"model": {"path": "/m/tiny"}},
            "trainer": {"total_epochs": 1, "resume_mode": "auto"}}
    last = ov.override_map(base)
    assert ov.as_mapping(ov.render_overrides(base)) == last  # what verl gets, read by Hydra itself
    assert last["data.train_files"] == ["/d/math=v2/train.parquet", "/d/extra.parquet"]
    assert last["+data.min-len"] == "len>=8"
    logged = {"total_steps": 6, "batches_per_epoch": 6, "total_epochs": 1}
    recorded = json.loads(json.dumps(last))  # as the launch's record keeps it

    same_data = ov.override_map(base, {"actor_rollout_ref": {"actor": {"optim": {"lr": 0.5}}}})
    assert run_plan.planned_total(same_data, recorded, logged)["total"] == 6
    more_epochs = ov.override_map(base, {"trainer": {"total_epochs": 3}})
    assert run_plan.planned_total(more_epochs, recorded, logged)["total"] == 18
    for change in ({"data": {"train_files": ["/d/math=v3/train.parquet", "/d/extra.parquet"]}},
                   {"data": {"train_files": ["/d/math=v2/train.parquet"]}},
                   {"data": {"+min-len": "len>=16"}}):
        changed = ov.override_map(base, change)
        assert ov.as_mapping(ov.render_overrides(base, change)) == changed
        got = run_plan.planned_total(changed, recorded, logged)
        assert got["total"] is None and got["how"].startswith("unknown: the data or the epochs changed"), change
    # a finished run at its logged total: the same data trains nothing, another file list launches
    before = _finished([6], overrides=recorded, total=6)
    assert not run_plan.launch_plan(before, same_data, "bbb")["launch"]
    assert run_plan.launch_plan(before, ov.override_map(base, {"data": {"+min-len": "len>=16"}}), "bbb")["launch"]


def test_a_launch_recorded_with_words_only_leaves_the_total_unknown():
    """A launch record written before the records kept the mapping (launches.jsonl with ``overrides`` words only):
    the status has no ``launch_override_map`` for it, and the plan counts it as no earlier launch that logged the
    loader's size; the words are not parsed back, so a finished run without a step total launches (verl decides)."""
    no_total = _with(SIM, **{"trainer.total_training_steps": None})
    before = _finished([6], overrides=None, total=6)
    before["launch_overrides"] = ["%s=%s" % item for item in no_total.items()]  # the old record's words
    plan = run_plan.launch_plan(before, no_total, "bbb")
    assert plan["launch"] and plan["total"] is None
    got = run_plan.planned_total(no_total, before.get("launch_override_map"), before["last_log"])
    assert got["total"] is None and got["how"] == "unknown: no earlier launch logged the loader's size"
    # an explicit step total still decides without any record
    assert not run_plan.launch_plan(_finished([2], overrides=None), SIM, "bbb")["launch"]


# --- the launch decision ---------------------------------------------------------------------------------------------

def test_a_finished_run_at_its_total_relaunched_with_a_changed_setting_trains_nothing():
    changed = _with(SIM, **{"actor_rollout_ref.actor.optim.lr": 0.002})
    plan = train_filters.train_launch_plan(_finished([1, 2]), changed, "bbb")
    assert plan["wanted"] and not plan["launch"] and plan["total"] == 2 and plan["newest"] == 2
    assert "newest whole checkpoint is step 2 and the run's total is 2 steps" in plan["message"]
    assert "would train step 3 past the end" in plan["message"]
    assert "raise trainer.total_training_steps in grpo_train_overrides above 2" in plan["message"]
    # the engine names the input; the train stage's filter, its setting
    assert "raise trainer.total_training_steps in {overrides} above 2" in run_plan.launch_plan(
        _finished([1, 2]), changed, "bbb")["message"]


def test_relaunch_does_not_train_past_the_total_either():
    plan = train_filters.train_launch_plan(_finished([1, 2]), SIM, "aaa", relaunch=True)
    assert plan["wanted"] and not plan["launch"]
    assert "although grpo_train_relaunch is set" in plan["message"]
    assert "although {relaunch} is set" in run_plan.launch_plan(_finished([1, 2]), SIM, "aaa", True)["message"]


def test_the_three_relaunches_that_left_5_of_2_now_train_nothing():
    """Issue 43: a run that already went past its total (5/2) stays there."""
    plan = run_plan.launch_plan(_finished([1, 2, 3, 4, 5], total=2), SIM, "ccc", relaunch=True)
    assert not plan["launch"] and "step 5" in plan["message"]


def test_raising_the_total_continues_from_the_checkpoint():
    plan = run_plan.launch_plan(_finished([1, 2]), _with(SIM, **{"trainer.total_training_steps": 3}), "bbb")
    assert plan["launch"] and plan["total"] == 3 and plan["message"] is None
    assert plan["why"] == "resumes from step 2 (total 3)"


def test_raising_the_epochs_with_no_step_total_continues():
    last = _with(SIM, **{"trainer.total_training_steps": None})
    before = _finished([6], overrides=last, total=6, batches=6, epochs=1)
    assert run_plan.launch_plan(before, _with(last, **{"trainer.total_epochs": 2}), "bbb")["launch"]
    stay = train_filters.train_launch_plan(before, _with(last, **{"actor_rollout_ref.actor.optim.lr": 0.5}), "bbb")
    assert not stay["launch"] and "raise trainer.total_epochs in grpo_train_overrides (or set " in stay["message"]


def test_the_same_script_finished_is_not_wanted():
    plan = run_plan.launch_plan(_finished([1, 2]), SIM, "aaa")
    assert not plan["wanted"] and not plan["launch"]
    assert plan["message"].startswith("The last run finished with this very script (2 of 2 steps)")
    assert plan["message"].endswith("or set {relaunch}=true.")
    assert train_filters.train_launch_plan(_finished([1, 2]), SIM, "aaa")["message"].endswith(
        "or set grpo_train_relaunch=true.")


def test_a_going_run_is_left_alone():
    before = dict(_finished([1]), running=True, state="running")
    plan = run_plan.launch_plan(before, _with(SIM, **{"trainer.total_training_steps": 9}), "bbb")
    assert not plan["wanted"] and not plan["launch"] and plan["message"] is None


@pytest.mark.parametrize("before", [
    {"state": "absent", "running": False, "checkpoints": {"saved": []}, "last_launch": {}},  # never launched
    _finished([], state="failed"),  # failed before a save
    _finished([1, 2, 3], total=2, state="failed"),  # ... also with steps past the total: resume_mode disable below
])
def test_launches_from_scratch_or_without_resume(before):
    overrides = SIM if not before["checkpoints"]["saved"] else _with(SIM, **{"trainer.resume_mode": "disable"})
    assert run_plan.launch_plan(before, overrides, "zzz")["launch"]


def test_a_failed_run_short_of_its_total_resumes_and_one_at_it_does_not():
    assert run_plan.launch_plan(_finished([1], state="failed"), SIM, "aaa")["launch"]
    assert not run_plan.launch_plan(_finished([1, 2], state="failed"), SIM, "aaa")["launch"]


def test_an_unknown_total_launches_as_verl_alone_would():
    last = _with(SIM, **{"trainer.total_training_steps": None})
    before = _finished([6], overrides=last, total=6)
    plan = run_plan.launch_plan(before, _with(last, **{"data.train_batch_size": 8}), "bbb")
    assert plan["launch"] and plan["total"] is None


# --- the command to copy ---------------------------------------------------------------------------------------------

def test_the_command_to_copy_carries_the_inventories(tmp_path):
    # one builder (ascend_grpo.common.rerun) for every printed command, the gate's among them
    from ascend_grpo.common import rerun

    root = tmp_path / "project"
    (root / "inventories" / "sim").mkdir(parents=True)
    other = tmp_path / "elsewhere inv"
    inventory = rerun.inventory_args([str(root / "inventories" / "sim"), str(other)], str(root))
    assert shlex.split(rerun.command("status", inventory)) == [
        "ansible-playbook", "site.yml", "-i", "inventories/sim", "-i", str(other), "--tags", "status"]
    # the whole chain (no --tags), and never a command without an inventory: a placeholder the user fills in
    assert rerun.command(None, inventory) == "ansible-playbook site.yml -i inventories/sim -i %s" % shlex.quote(
        str(other))
    assert rerun.command(None, rerun.inventory_args([], None)) == "ansible-playbook site.yml -i <your inventory>"


# --- the eval stage's gate -------------------------------------------------------------------------------------------

def _cmd(tags):
    return "ansible-playbook site.yml -i inventories/sim" + (" --tags " + tags if tags else "")


def _going(saved, cards="0", step=1, total=2, eta=70.0):
    return {"state": "running", "running": True, "pid": 4242, "step": step, "total_steps": total,
            "steps_logged": step, "summary": {"eta_s": eta},
            "checkpoints": {"saved": saved, "incomplete": [], "latest": saved[-1] if saved else None, "dir": "/c"},
            "last_launch": {"cards": cards}}


def test_a_going_run_on_the_same_card_makes_the_eval_wait_and_say_so():
    gate = run_plan.eval_gate(_going([1]), "0", 0, "sim/tiny_qwen2_math", _cmd)
    assert gate["action"] == "wait" and gate["shared_cards"] == ["0"]
    text = "\n".join(gate["lines"])
    assert "The run sim/tiny_qwen2_math is going: step 1/2, ETA 0:01:10 (pid 4242)." in text
    assert "It holds card id 0, which OpenCompass would use here" in text
    assert "Watch it: ansible-playbook site.yml -i inventories/sim --tags status." in text
    assert "run the same command again (ansible-playbook site.yml -i inventories/sim, or " in text
    assert "ansible-playbook site.yml -i inventories/sim --tags stop" in text


def test_a_going_run_before_its_first_save_also_waits():
    gate = run_plan.eval_gate(dict(_going([], step=0), steps_logged=0), ["0"], 0, "p/e", _cmd)
    assert gate["action"] == "wait" and "no step logged yet (of 2)" in gate["lines"][0]


def test_an_explicit_step_while_the_run_holds_the_card_is_refused():
    gate = run_plan.eval_gate(_going([1]), "0", 1, "p/e", _cmd)
    assert gate["action"] == "refuse"
    assert "{step} 1 is not evaluated while it goes" in gate["lines"][1]
    assert "--tags stop" in gate["lines"][2]
    # the eval stage's filter names its setting
    shown = eval_filters.eval_gate(_going([1]), "0", 1, "p/e")
    assert shown["action"] == "refuse"
    assert "grpo_eval_step 1 is not evaluated while it goes" in shown["lines"][1]


def test_a_launch_without_recorded_cards_is_taken_to_hold_them_all():
    run = _going([1])
    run["last_launch"] = {}
    assert run_plan.eval_gate(run, "3", 0, "p/e", _cmd)["action"] == "wait"


def test_other_cards_evaluate_a_saved_step_while_the_run_goes():
    gate = run_plan.eval_gate(_going([1], cards="0,1"), "2", 0, "p/e", _cmd)
    assert gate["action"] == "evaluate" and gate["shared_cards"] == []
    assert "It runs on card(s) 0, 1, OpenCompass on 2" in gate["lines"][1]
    nothing_yet = run_plan.eval_gate(_going([], cards="0,1"), "2", 0, "p/e", _cmd)
    assert nothing_yet["action"] == "wait" and "no step is saved yet" in nothing_yet["lines"][1]


def test_a_finished_run_is_evaluated_without_a_word():
    assert run_plan.eval_gate(_finished([1, 2]), "0", 0, "p/e", _cmd) == {
        "action": "evaluate", "lines": [], "shared_cards": ["0"], "run_cards": ["0"]}


def test_a_failed_run_is_evaluated_at_its_newest_whole_checkpoint_and_says_so():
    run = dict(_finished([1, 2, 3], total=8, state="failed"), error="killed by SIGKILL (exit 137)")
    gate = run_plan.eval_gate(run, "0", 0, "p/e", _cmd)
    assert gate["action"] == "evaluate"
    assert gate["lines"] == ["The run p/e failed at step 3/8 (killed by SIGKILL (exit 137)): evaluating its newest "
                             "whole checkpoint, step 3."]
    stopped = run_plan.eval_gate(dict(run, state="stopped", error=None), "0", 2, "p/e", _cmd)
    assert stopped["lines"][0].endswith("evaluating step 2, as asked.")


def test_nothing_saved_and_nothing_going_is_refused_naming_the_train_stage():
    never = run_plan.eval_gate({"state": "absent", "running": False, "checkpoints": {"saved": []}}, "0", 0, "", _cmd)
    assert never["action"] == "refuse"
    assert never["lines"] == ["No run was launched in this workspace and no step is saved: nothing to evaluate. "
                              "Train first: ansible-playbook site.yml -i inventories/sim --tags train."]
    failed = run_plan.eval_gate(dict(_finished([], state="failed"), error="AssertionError: x"), "0", 0, "p/e", _cmd)
    assert failed["action"] == "refuse" and "The run p/e failed (AssertionError: x) before any step" in failed["lines"][0]
    assert run_plan.eval_gate(None, "0", 0, "", _cmd)["action"] == "refuse"


def test_checkpoints_without_a_recorded_run_are_evaluated():
    gate = run_plan.eval_gate({"state": "absent", "running": False,
                               "checkpoints": {"saved": [5], "dir": "/elsewhere"}}, "0", 0, "", _cmd)
    assert gate["action"] == "evaluate" and "/elsewhere" in gate["lines"][0]


def test_card_list():
    assert run_plan.card_list("0, 1,") == ["0", "1"] and run_plan.card_list([2, 3]) == ["2", "3"]
    assert run_plan.card_list(None) == [] and run_plan.card_list("") == []


def test_no_ansible_import():
    with open(run_plan.__file__, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert not [line for line in lines if line.startswith(("import ansible", "from ansible"))]


def test_the_filters_over_the_engine(tmp_path):
    """The roles' filters (train_launch_plan, eval_gate) hand plain values to the engine and build the commands from
    the inventories the user ran with."""
    from grpo_testkit import ROOT

    import eval_filters
    import train_filters

    inventory = os.path.join(ROOT, "inventories", "sim")
    gate = eval_filters.eval_gate(_going([1]), "0", "0", "sim/tiny_qwen2_math", [inventory], ROOT)
    assert gate["action"] == "wait"
    assert "Watch it: ansible-playbook site.yml -i inventories/sim --tags status." in gate["lines"]
    plan = train_filters.train_launch_plan(_finished([1, 2]), dict(SIM, x=1), "bbb", False)
    assert plan["wanted"] and not plan["launch"]
