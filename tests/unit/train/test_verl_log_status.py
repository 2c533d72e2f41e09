"""verl's training log read for the status view: the summary (epoch, ETA), the per-host table, the plot, and why a
run ended (the logs and the line builders: grpo_testkit/verl_logs.py)."""

import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from grpo_testkit import ROOT
from grpo_testkit.verl_logs import FAILED_ERROR, ray, real_log, step_line

from ascend_grpo.train import run_log, status_view


# --- summary -----------------------------------------------------------------------------------------------------

def verl_fit_epochs(total_epochs, batches, total_training_steps):
    """{global step: epoch from 1} as RayPPOTrainer.fit at 634bd935 walks them (transcribed from its loops:
    ``for epoch in range(total_epochs): for batch_dict in self.train_dataloader:`` one step per batch, from
    global step 1, returning after ``total_training_steps``)."""
    out, step = {}, 1
    for epoch in range(total_epochs):
        for _ in range(batches):
            out[step] = epoch + 1
            if step >= total_training_steps:
                return out
            step += 1
    return out


@pytest.mark.parametrize("total_epochs, batches, total_training_steps",
                         [(1, 6, 2), (1, 6, 6), (3, 4, 12), (2, 5, 7), (15, 1875, 1875 * 15)])
def test_epoch_as_verl_walks_them(total_epochs, batches, total_training_steps):
    walked = verl_fit_epochs(total_epochs, batches, total_training_steps)
    sample = sorted(walked)[:50] + sorted(walked)[-50:] + [s for s in walked if s % batches in (0, 1)][:200]
    for step in sample:
        assert status_view.epoch_of(step, batches, total_epochs) == walked[step], step
    assert status_view.epoch_of(0, batches, total_epochs) is None  # before the first step


def test_epoch_falls_back_on_the_logged_index():
    assert status_view.epoch_of(3, None, None, logged=0) == 1
    assert status_view.epoch_of(3, None, None) is None


def test_eta_from_the_last_five_step_times():
    text = ray("Total training steps: 10") + "".join(
        ray(step_line(n, {"timing_s/step": t, "training/epoch": 1}))
        for n, t in zip(range(1, 8), (10.0, 10.0, 1.0, 2.0, 3.0, 4.0, 5.0)))
    status = status_view.summary(run_log.parse(text))
    # no loader size in this log: the logged index 1 is the second epoch
    assert (status["state"], status["step"], status["progress_pct"], status["epoch"]) == ("training", 7, 70.0, 2)
    assert status["step_time_s"] == 5.0
    assert status["eta_s"] == 9.0  # mean(1..5) = 3 s x 3 steps left


def test_eta_from_elapsed_time_without_step_times():
    text = "".join([ray("Total training steps: 10"), ray("Load from checkpoint folder: /c/global_step_2"),
                    ray(step_line(3, {"critic/score/mean": 0.5})), ray(step_line(4, {"critic/score/mean": 0.5}))])
    parsed = run_log.parse(text)
    started = "2026-12-02T19:00:00+0000"  # as jobs.start records it
    now = datetime(2026, 12, 2, 19, 1, 40, tzinfo=timezone.utc)
    status = status_view.summary(parsed, now=now, started_at=started)
    assert status["elapsed_s"] == 100.0
    assert status["eta_s"] == 300.0  # 100 s for the 2 steps of this run -> 50 s x 6 steps left
    assert status_view.summary(parsed, now=1000.0, started_at=900)["eta_s"] == 300.0
    assert status_view.summary(parsed)["eta_s"] is None


# --- table -------------------------------------------------------------------------------------------------------

def test_render_table():
    running = run_log.parse(ray("Total training steps: 300") + ray("local_global_step_folder: /c/global_step_40")
                            + ray(step_line(42, {"critic/score/mean": 0.61234, "actor/kl_loss": 0.0012345,
                                                 "response_length/mean": 312.25, "timing_s/step": 48.5,
                                                 "perf/throughput": 1534.56, "training/epoch": 1})))
    rows = [
        dict(status_view.summary(run_log.parse(real_log("train_2_steps.log"))), host="node-a"),
        dict(status_view.summary(running), host="node-b.example.org", npu="8x 910B3 OK, 62% HBM"),
        dict(status_view.summary(run_log.parse(real_log("failed_tp.log"))), host="node-c"),
        {"host": "node-d", "state": "unreachable"},
    ]
    assert status_view.render_table(rows) == "\n".join([
        "HOST                STATE          STEP  EPOCH      ETA  SCORE  KL_LOSS  RESP_LEN  STEP_S  TOK/S  VAL  CKPT  "
        "NPU",
        "------------------  -----------  ------  -----  -------  -----  -------  --------  ------  -----  ---  ----  "
        "--------------------",
        "node-a              finished        2/2    1/1  0:00:00  0.000  0.00735      16.0    0.72   1826    -     2  -",
        # the step lines of train_2_steps.log: gen 0.306 s, ... of timing_s/step 0.715 s
        "    step time: gen 41%, logp 12%, ref 9%, update 31%, reward 2%, ckpt 5%, other 0% of 0.8 s; MFU 5.3%; "
        "peak memory 0.0 GB",
        "node-b.example.org  training     42/300    2/?  3:28:33  0.612  0.00123     312.2   48.50   1535    -    40  "
        "8x 910B3 OK, 62% HBM",  # ETA: 48.5 s x 258 steps = 12513 s
        "    step time: other 100% of 48.5 s",
        "node-c              failed          0/2      -        -      -        -         -       -      -    -     -  -",
        "    error: " + FAILED_ERROR,
        "node-d              unreachable       -      -        -      -        -         -       -      -    -     -  -",
    ])
    assert status_view.render_table([]) == "\n".join([
        "HOST  STATE  STEP  EPOCH  ETA  SCORE  KL_LOSS  RESP_LEN  STEP_S  TOK/S  VAL  CKPT",
        "----  -----  ----  -----  ---  -----  -------  --------  ------  -----  ---  ----",
    ])


# --- plot --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["train_2_steps.log", "resume_to_3.log"])  # 2 steps, and a single one
def test_plot_writes_a_png(tmp_path, name):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "progress.png")
    assert status_view.plot(run_log.parse(real_log(name)), path, title="GRPO on node-a") == path
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1024


def test_plot_without_steps(tmp_path):
    with pytest.raises(ValueError, match="no training step"):
        status_view.plot(run_log.parse(real_log("failed_tp.log")), str(tmp_path / "none.png"))
    assert not (tmp_path / "none.png").exists()


def test_import_needs_only_the_standard_library():
    code = ("import sys; sys.path.insert(0, %r); import ascend_grpo.train.run_log, ascend_grpo.train.status_view; "
            "names = {m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names); "
            "print(sorted(names - {'__main__', 'ascend_grpo'}))" % os.path.join(ROOT, "python_plugins", "module_utils"))
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- why a run ended (the fault drills' figures: SIGKILL leaves exit 137 through bash; a removed container leaves
# no exit status; a save on a full disk ends in OSError [Errno 28]) ----------------------------------------------

def test_a_killed_run_names_the_signal_and_the_resume_point():
    why = run_log.why_it_ended(137, None, "(TaskRunner pid=88) step:4 - ...", [1, 2, 3, 4])
    assert why == ("killed by SIGKILL (exit 137), from outside the run (the kernel's OOM killer, or someone); "
                   "a rerun resumes from step 4, the newest checkpoint whose save finished")


def test_a_run_whose_container_went_has_no_exit_status():
    why = run_log.why_it_ended(None, None, "step:5", [5])
    assert why.startswith("it ended without an exit status: its container was removed or restarted")
    assert why.endswith("a rerun resumes from step 5, the newest checkpoint whose save finished")
    assert run_log.why_it_ended(None, None, None, []).endswith("a rerun starts from the beginning (no save finished)")


def test_a_full_disk_during_a_save_says_what_to_free():
    error = "OSError: [Errno 28] No space left on device"
    why = run_log.why_it_ended(1, error, "x", [2], checkpoint_free_mb=0)
    assert why.startswith(error + ": the disk is full (0 MB free where checkpoints go). Free space")
    assert "{max_actor_ckpt_to_keep}, trainer.max_actor_ckpt_to_keep, keeps fewer" in why
    assert "trainer.max_actor_ckpt_to_keep" in why and why.endswith("resumes from step 2, the newest checkpoint "
                                                                    "whose save finished")


def test_an_exception_is_told_as_it_is():
    assert run_log.why_it_ended(1, "AssertionError: x", "y", []) == "AssertionError: x"
    assert run_log.why_it_ended(2, None, "last words", []) == "last words"


def test_a_save_that_failed_on_a_nearly_full_disk_is_told_so_whatever_torch_said():
    error = "RuntimeError: [enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0"
    why = run_log.why_it_ended(1, error, "x", [], checkpoint_free_mb=0)
    assert why.startswith(error + ": the disk is full (0 MB free where checkpoints go)")
    assert why.endswith("a rerun starts from the beginning (no save finished)")
    assert run_log.why_it_ended(1, error, "x", [], checkpoint_free_mb=50_000) == error


def test_the_validation_before_training_is_a_phase_of_its_own():
    """issue 43: the first step waits behind the validation of MATH's whole test split; the status says so."""
    from ascend_grpo.train import overrides, run_log as log

    started = "(TaskRunner pid=1) Size of train dataloader: 29\n(TaskRunner pid=1) test_gen_batch meta info: {'n': 1}\n"
    assert log.parse(started)["validating"] is True
    done = started + "(TaskRunner pid=1) step:0 - val-core/DigitalLearningGmbH/MATH-lighteval/reward/mean@1:0.43\n"
    assert log.parse(done)["validating"] is False
    assert log.parse(done + "(TaskRunner pid=1) test_gen_batch meta info: {'n': 1}\n")["validating"] is True
    # verl's default validates first; the wait for the first step adds its allowance then
    # (from the merged overrides as data, overrides.override_map: nothing parses the words back)
    assert overrides.validates_first({"trainer.save_freq": 70}) is True
    assert overrides.validates_first({"trainer.val_before_train": False}) is False
    assert overrides.first_step_wait_minutes({"trainer.total_epochs": 5}, 60, 60) == 120
    assert overrides.first_step_wait_minutes(
        overrides.override_map({"trainer": {"val_before_train": False}}), 60, 60) == 60
