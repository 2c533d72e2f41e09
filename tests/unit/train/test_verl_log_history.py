"""What the status view shows beyond the latest step: validation scores, where a step's time goes, the history of a
run over all its launches, and runs side by side.

The line formats are transcribed from verl@634bd935: ``concat_dict_to_str`` (verl/utils/logger/aggregate_logger.py:
"step:{step}" then "key:{pprint.pformat(value)}" joined by " - "), the validation keys of ``RayPPOTrainer._validate``
("val-core/<data_source>/<acc|reward>/mean@<n>") logged at ``self.global_steps`` before training (0, or the step a
resume loaded) and merged into the step's metrics every ``test_freq`` steps, and the ``marked_timer`` names of
``RayPPOTrainer.fit`` (gen, reward, old_log_prob, ref, values, adv, update_critic, update_actor, testing,
save_checkpoint, all inside step).
"""

import os
import pprint

import pytest
from grpo_testkit import FIXTURES

from ascend_grpo.train import run_log, status_view

VAL = "val-core/DigitalLearningGmbH/MATH-lighteval/reward/mean@1"
AUX = "val-aux/DigitalLearningGmbH/MATH-lighteval/reward/std@1"
# timing_s/... of step 1 in fixtures/verl_logs/train_2_steps.log (a real run on the simulated host)
REAL_STEP_1 = {"timing_s/gen": 28.870131914000012, "timing_s/reward": 1.1009561250011757,
               "timing_s/old_log_prob": 0.12649400599912042, "timing_s/ref": 0.07014563700067811,
               "timing_s/adv": 0.0009425749994989019, "timing_s/update_actor": 0.6185676610002702,
               "timing_s/step": 30.790319353000086, "timing_s/save_checkpoint": 0.05875270700016699}


def line(step, metrics):
    """One console logger line, as verl's concat_dict_to_str prints it (numbers only), with Ray's prefix."""
    return "(TaskRunner pid=41) step:%d - %s\n" % (step, " - ".join("%s:%s" % (key, pprint.pformat(value))
                                                                  for key, value in metrics.items()))


def train(step, score, val=None, seconds=2.0):
    metrics = {"critic/score/mean": score, "timing_s/gen": seconds * 0.75, "timing_s/update_actor": seconds * 0.125,
               "timing_s/step": seconds, "training/global_step": step}
    if val is not None:
        metrics.update({VAL: val, AUX: 0.1})
    return line(step, metrics)


def test_real_step_split():
    parts = status_view.time_split(REAL_STEP_1)
    assert [part["part"] for part in parts] == ["generation", "log-prob", "reference", "update", "reward",
                                                "checkpoint", "other"]
    # RayPPOTrainer.fit: gen, reward, old_log_prob, ref, adv and update_actor inside the step's timer; the save
    # after it. The parts inside add up to 4 ms less than timing_s/step (adv and the driver's own work).
    step, save = REAL_STEP_1["timing_s/step"], REAL_STEP_1["timing_s/save_checkpoint"]
    inside = (28.870131914000012 + 0.12649400599912042 + 0.07014563700067811 + 0.6185676610002702
              + 1.1009561250011757)
    assert step - inside == pytest.approx(0.0040, abs=1e-4)
    whole = step + save
    shares = {part["part"]: part["share"] for part in parts}
    assert shares["generation"] == round(28.870131914000012 / whole, 4) == 0.9359
    assert shares["checkpoint"] == round(save / whole, 4)
    assert parts[-1]["seconds"] == pytest.approx(step - inside)
    assert sum(part["seconds"] for part in parts) == pytest.approx(whole)
    assert status_view.split_text(parts) == (
        "gen 94%, logp 0%, ref 0%, update 2%, reward 4%, ckpt 0%, other 0% of 30.8 s")


def test_validation_and_the_save_come_after_the_steps_timer():
    parts = status_view.time_split({"timing_s/gen": 6.0, "timing_s/update_actor": 1.0, "timing_s/update_critic": 0.5,
                                    "timing_s/testing": 1.5, "timing_s/step": 10.0})
    # the iteration took 10 s of step plus 1.5 s of validation; 2.5 s of the step is none of the parts
    assert [(part["part"], part["seconds"], part["share"]) for part in parts] == [
        ("generation", 6.0, round(6 / 11.5, 4)), ("update", 1.5, round(1.5 / 11.5, 4)),
        ("validation", 1.5, round(1.5 / 11.5, 4)), ("other", 2.5, round(2.5 / 11.5, 4))]
    assert status_view.split_text(parts) == "gen 52%, update 13%, val 13%, other 22% of 11.5 s"


def test_real_log_has_split_and_no_validation():
    with open(os.path.join(FIXTURES, "verl_logs", "train_2_steps.log"), encoding="utf-8") as handle:
        status = status_view.summary(run_log.parse(handle.read()))
    assert [part["part"] for part in status["time_split"]][0] == "generation"
    assert status["val_score"] is None and status["validations"] == 0 and status["val_metric"] is None
    assert status["mfu"] == pytest.approx(0.0, abs=1) and status["peak_memory_gb"] == 0.0
    assert status["cpu_memory_gb"] > 0


def test_no_step_time_no_split():
    assert status_view.time_split({"timing_s/gen": 1.0}) == []
    assert status_view.split_text([]) == ""


def test_validation_before_training_is_not_a_step():
    text = line(0, {VAL: 0.125, AUX: 0.3}) + train(1, 0.2) + train(2, 0.4, val=0.25)
    parsed = run_log.parse(text)
    assert [entry["step"] for entry in parsed["steps"]] == [1, 2]
    assert [(entry["step"], entry["metrics"][VAL]) for entry in parsed["validations"]] == [(0, 0.125), (2, 0.25)]
    assert set(parsed["validations"][1]["metrics"]) == {VAL, AUX}
    status = status_view.summary(parsed)
    assert (status["val_score"], status["val_step"], status["best_val_score"], status["best_val_step"]) == (
        0.25, 2, 0.25, 2)
    assert status["val_metric"] == VAL and status["validations"] == 2


def test_best_validation_is_the_earliest_of_a_tie():
    text = line(0, {VAL: 0.5}) + train(1, 0.2, val=0.25) + train(2, 0.4, val=0.5)
    status = status_view.summary(run_log.parse(text))
    assert (status["best_val_score"], status["best_val_step"], status["val_step"]) == (0.5, 0, 2)


def test_resume_history_over_launches():
    # launch 1: validation before training, steps 1-5 (saves at 2 and 4), validation every 2 steps; it dies at 5
    first = (line(0, {VAL: 0.1}) + train(1, 0.1) + train(2, 0.2, val=0.2)
             + "(TaskRunner pid=41) local_global_step_folder: /ws/ckpt/global_step_2\n"
             + train(3, 0.3) + train(4, 0.4, val=0.3)
             + "(TaskRunner pid=41) local_global_step_folder: /ws/ckpt/global_step_4\n" + train(5, 0.5))
    # launch 2 resumes from 4: its validation before training is logged at step 4, then steps 5-6
    second = ("(TaskRunner pid=77) Load from checkpoint folder: /ws/ckpt/global_step_4\n"
              + line(4, {VAL: 0.35}) + train(5, 0.55) + train(6, 0.6, val=0.45))
    parsed = [run_log.parse(first), run_log.parse(second)]
    assert [entry["step"] for entry in parsed[1]["steps"]] == [5, 6]  # the second log alone lost steps 1-4
    history = run_log.merge(parsed)
    assert [entry["step"] for entry in history["steps"]] == [1, 2, 3, 4, 5, 6]
    assert history["steps"][4]["metrics"]["critic/score/mean"] == 0.55  # step 5 of the timeline that went on
    assert [(entry["step"], entry["metrics"][VAL]) for entry in history["validations"]] == [
        (0, 0.1), (2, 0.2), (4, 0.35), (6, 0.45)]
    assert history["segments"] == 2 and history["resumed_from"] == 4
    assert history["checkpoints_saved"] == [2, 4]
    status = status_view.summary(history)
    assert (status["step"], status["best_val_score"], status["best_val_step"]) == (6, 0.45, 6)


def test_a_resume_drops_the_abandoned_steps_before_its_first_step():
    first = train(1, 0.1) + train(2, 0.2) + train(3, 0.3, val=0.3)
    second = "(TaskRunner pid=77) Load from checkpoint folder: /ws/ckpt/global_step_2\n"  # still loading
    history = run_log.merge([run_log.parse(first), run_log.parse(second)])
    assert [entry["step"] for entry in history["steps"]] == [1, 2]
    assert history["validations"] == []
    assert status_view.summary(history)["step"] == 2


def test_a_fresh_start_replaces_the_history():
    history = run_log.merge([run_log.parse(train(1, 0.1) + train(2, 0.2)), run_log.parse(train(1, 0.9))])
    assert [(entry["step"], entry["metrics"]["critic/score/mean"]) for entry in history["steps"]] == [(1, 0.9)]


def test_merge_of_nothing():
    history = run_log.merge([])
    assert history["steps"] == [] and history["segments"] == 0


def test_state_comes_from_the_last_launch():
    failed = train(1, 0.1) + "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: boom\n"
    history = run_log.merge([run_log.parse(failed), run_log.parse(train(2, 0.2))])
    assert history["error"] is None
    assert status_view.summary(history)["state"] == "training"


def test_table_shows_validation_split_mfu_memory():
    metrics = dict(REAL_STEP_1, **{"perf/mfu/actor": 0.019, "perf/max_memory_allocated_gb": 41.25,
                                   "critic/score/mean": 0.5})
    text = line(0, {VAL: 0.125}) + line(1, metrics) + line(2, dict(metrics, **{VAL: 0.375}))
    row = dict(status_view.summary(run_log.parse(text)), host="sim910b")
    table = status_view.render_table([row]).splitlines()
    assert table[0].split()[-3:] == ["TOK/S", "VAL", "CKPT"]
    assert table[2].split()[-2] == "0.375@2"
    assert table[3] == ("    step time: gen 94%, logp 0%, ref 0%, update 2%, reward 4%, ckpt 0%, other 0% of 30.8 s; "
                        "MFU 1.9%; peak memory 41.2 GB")
    assert table[4] == "    validation: best 0.375@2 of 2 logged (%s)" % VAL


def test_compare_puts_the_best_first():
    rows = []
    for experiment, vals in (("lr1e-6", [0.1, 0.3]), ("lr3e-6", [0.1, 0.4, 0.35]), ("tiny", [])):
        text = "".join(train(i + 1, 0.1 * i, val=val) for i, val in enumerate(vals)) or train(1, 0.0)
        parsed = run_log.parse(text)
        rows.append(dict(status_view.summary(parsed), project="p", experiment=experiment, segments=1,
                         mean_step_time_s=status_view.mean_step_time(parsed["steps"])))
    table = status_view.render_compare(rows).splitlines()
    assert table[0].split() == ["PROJECT", "EXPERIMENT", "STATE", "STEP", "BEST_VAL", "VAL", "SCORE", "STEP_S",
                                "LOGS"]
    assert [cells.split()[1] for cells in table[2:5]] == ["lr3e-6", "lr1e-6", "tiny"]
    assert table[2].split()[4:6] == ["0.400@2", "0.350@3"]
    assert table[4].split()[4:6] == ["-", "-"]
    assert table[2].split()[7] == "2.00"
    assert table[5] == "validation: %s" % VAL


def test_plot_has_the_validation_and_split_panels(tmp_path):
    pytest.importorskip("matplotlib")
    text = line(0, {VAL: 0.125}) + train(1, 0.2) + train(2, 0.4, val=0.25)
    path = str(tmp_path / "status.png")
    status_view.plot(run_log.parse(text), path, title="t")
    with open(path, "rb") as handle:
        head = handle.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (800, 1400)
