"""verl's training log: steps and metrics, resume, checkpoints, final validation, the error of a failed run (the
status summary, the per-host table, the plot and why a run ended: test_verl_log_status.py; the logs and the line
builders: grpo_testkit/verl_logs.py).

The three logs under fixtures/verl_logs are real runs of verl@634bd935 with the vLLM 0.13.0 rollout on the simulated
host's CPU (2 steps; the same run resumed to 3 steps; a run that fails at start-up on tensor parallel size 2 with 1
worker); the other cases are built here.
"""

import pprint

import pytest
from grpo_testkit.verl_logs import FAILED_ERROR, ray, real_log, step_line

from ascend_grpo.train import run_log, status_view

def steps_of(parsed):
    return [entry["step"] for entry in parsed["steps"]]


# --- the real logs ---------------------------------------------------------------------------------------------

def test_two_step_run():
    parsed = run_log.parse(real_log("train_2_steps.log"))
    assert steps_of(parsed) == [1, 2]
    assert parsed["total_steps"] == 2
    assert parsed["resumed_from"] is None
    assert parsed["checkpoints_saved"] == [1, 2]
    assert parsed["finished"] is True and parsed["final_validation"] is None
    # The Ray start-up tracebacks (no 'acl' module on CPU) are logged by Ray and handled: not errors.
    assert parsed["error"] is None and parsed["traceback_tail"] is None

    # values as the step lines print them (verl@634bd935 prints the actor's metrics as np.float64(...))
    first, second = (entry["metrics"] for entry in parsed["steps"])
    assert len(first) == len(second) == 72
    assert second["critic/score/mean"] == 0.0
    assert second["response_length/mean"] == 16.0
    assert second["timing_s/step"] == 0.715178726000886
    assert second["perf/throughput"] == 1826.1169586277406
    assert second["actor/grad_norm"] == 0.0005987902404740453
    assert second["actor/kl_loss"] == 0.007354736328125
    assert second["training/global_step"] == 2
    assert second["training/rollout_probs_diff_max"] == 3.822625149041414e-05
    assert first["actor/grad_norm"] == 1.058514952659607 and first["timing_s/step"] == 30.790319353000086
    assert first["global_seqlen/min"] == 1278
    assert first["training/rollout_probs_diff_max"] == 3.250932786613703e-05

    assert status_view.summary(parsed) == {
        "state": "finished", "step": 2, "total_steps": 2, "progress_pct": 100.0, "epoch": 1, "total_epochs": 1,
        "eta_s": 0.0,
        "elapsed_s": None, "resumed_from": None, "last_checkpoint": 2, "error": None,
        "score_mean": 0.0, "kl_loss": 0.007354736328125, "response_length": 16.0,
        "step_time_s": 0.715178726000886, "throughput": 1826.1169586277406, "pg_loss": 0.0,
        "grad_norm": 0.0005987902404740453, "lr": 0.001, "rollout_diff_max": 3.822625149041414e-05,
        "mfu": 0.05325546731782089, "peak_memory_gb": 0.0, "reserved_memory_gb": 0.0,
        "cpu_memory_gb": 4.049953460693359,
        # verl times the save after timing_s/step: the whole is step 0.715 + save 0.036; "other" is the step's time
        # that gen, old_log_prob, ref, update_actor and reward do not cover
        "time_split": [{"part": part, "seconds": pytest.approx(seconds),
                        "share": round(seconds / (0.715178726000886 + 0.03563193499940098), 4)}
                       for part, seconds in (("generation", 0.3057130289998895), ("log-prob", 0.09156240700031049),
                                             ("reference", 0.06899386700024479), ("update", 0.23400399800084415),
                                             ("reward", 0.011686321999150096),
                                             ("checkpoint", 0.03563193499940098),
                                             ("other", 0.715178726000886 - (0.3057130289998895 + 0.09156240700031049
                                                                            + 0.06899386700024479 + 0.23400399800084415
                                                                            + 0.011686321999150096)))],
        # no validation: the simulated host's run had test_freq -1 and val_before_train false
        "val_metric": None, "val_score": None, "val_step": None, "best_val_score": None, "best_val_step": None,
        "validations": 0,
    }


def test_resumed_run():
    parsed = run_log.parse(real_log("resume_to_3.log"))
    assert steps_of(parsed) == [3]
    assert parsed["total_steps"] == 3
    # verl logs training/epoch:0 at step 3 (its loop restarts at 0 on a resume); the loader has 6 batches
    assert (parsed["batches_per_epoch"], parsed["total_epochs"]) == (6, 1)
    assert (status_view.summary(parsed)["epoch"], status_view.summary(parsed)["total_epochs"]) == (1, 1)
    assert parsed["resumed_from"] == 2
    assert parsed["checkpoints_saved"] == [3]
    assert parsed["finished"] is True and parsed["error"] is None
    metrics = parsed["steps"][0]["metrics"]
    assert metrics["critic/score/mean"] == 0.0008008333388715982 and metrics["response_length/mean"] == 16.0
    assert metrics["timing_s/step"] == 12.74005721299909
    assert metrics["actor/grad_norm"] == 1.0605045557022095
    status = status_view.summary(parsed)
    assert (status["state"], status["step"], status["total_steps"], status["resumed_from"]) == ("finished", 3, 3, 2)


def test_failed_run():
    parsed = run_log.parse(real_log("failed_tp.log"))
    assert parsed["steps"] == [] and parsed["total_steps"] == 2 and parsed["finished"] is False
    # The innermost cause, not one of the two ray.exceptions.RayTaskError(AssertionError) wrappers around it.
    assert parsed["error"] == FAILED_ERROR
    assert parsed["first_error"] == FAILED_ERROR  # one failure: where it began is where it ended
    tail = parsed["traceback_tail"]
    assert len(tail) == run_log.TAIL_LINES and tail[-1] == FAILED_ERROR
    assert tail[5].startswith("ray.exceptions.RayTaskError(AssertionError): ray::WorkerDict.actor_rollout_init_model()")
    assert not any("\x1b" in line or "WorkerDict pid=" in line for line in tail)  # no ANSI, no interleaved line
    status = status_view.summary(parsed)
    assert (status["state"], status["step"], status["eta_s"], status["error"]) == ("failed", 0, None, FAILED_ERROR)


def test_start_up_only():
    """The failed run's log before it fails: set-up lines and the handled Ray tracebacks, no step."""
    text = real_log("failed_tp.log")
    text = text[:text.index("Error executing job")]
    parsed = run_log.parse(text)
    assert parsed == {"steps": [], "validations": [], "total_steps": 2, "batches_per_epoch": 6, "total_epochs": 1,
                      "resumed_from": None, "checkpoints_saved": [], "lease_saves": [],
                      "final_validation": None, "finished": False, "validating": False, "error": None,
                      "traceback_tail": None, "first_error": None}
    status = status_view.summary(parsed)
    assert (status["state"], status["step"], status["progress_pct"], status["eta_s"]) == ("starting", 0, 0.0, None)


def test_empty_log():
    parsed = run_log.parse("")
    assert parsed == {"steps": [], "validations": [], "total_steps": None, "batches_per_epoch": None,
                      "total_epochs": None,
                      "resumed_from": None, "checkpoints_saved": [], "lease_saves": [],
                      "final_validation": None, "finished": False, "validating": False, "error": None,
                      "traceback_tail": None, "first_error": None}
    status = status_view.summary(parsed)
    assert (status["state"], status["step"], status["total_steps"], status["progress_pct"], status["eta_s"],
            status["score_mean"]) == ("starting", 0, None, None, None, None)


# --- incomplete and noisy logs -----------------------------------------------------------------------------------

def test_line_cut_mid_way_is_ignored():
    text = real_log("train_2_steps.log")
    start = text.index("step:2 - ")
    end = text.index("\n", start)
    cut = text[:start + 300]  # in the middle of step 2's metrics
    assert steps_of(run_log.parse(cut)) == [1]
    assert steps_of(run_log.parse(text[:end])) == [1]  # all of step 2's metrics, but no newline yet
    assert steps_of(run_log.parse(text[:end + 1])) == [1, 2]
    assert run_log.parse("step:1 - a:1.0\nstep:2 - a:2.0 - b:")["steps"] == [{"step": 1, "metrics": {"a": 1.0}}]


def test_ansi_carriage_returns_and_garbage():
    text = "".join([
        "\x00\xff\ufffd binary junk \x1b[31m\n",
        ray("\rTraining Progress:   0%|          | 0/4 [00:00<?, ?it/s]"),
        ray("Total training steps: 4"),
        # a step line right after a progress frame, with and without the \r between them; CRLF line end
        ray("\rTraining Progress:  25%|##5       | 1/4 [00:01<00:03,  1.00s/it]\rstep:1 - critic/score/mean:0.25 - "
            "training/global_step:1\r"),
        ray("Training Progress:  50%|#####     | 2/4 [00:02<00:02]step:2 - critic/score/mean:\x1b[1m0.5\x1b[0m - "
            "timing_s/step:np.float64(1.5) - note:abc - :3 - actor/pg_loss:-0.125"),
        "step:x - a:1\n",  # not a step
        "the global_step:9 - is not a step line either\n",
        ray("step:3 - critic/score/mean:nan [repeated 2x across cluster] (Ray deduplicates logs by default.)"),
        ray("Checkpoint tracker file does not exist"),
        "garbage: Traceback (most recent call last):\n",
    ])
    parsed = run_log.parse(text)
    assert steps_of(parsed) == [1, 2, 3]
    assert parsed["steps"][0]["metrics"] == {"critic/score/mean": 0.25, "training/global_step": 1.0}
    assert parsed["steps"][1]["metrics"] == {"critic/score/mean": 0.5, "timing_s/step": 1.5, "actor/pg_loss": -0.125}
    score = parsed["steps"][2]["metrics"]["critic/score/mean"]
    assert score != score  # nan
    assert parsed["total_steps"] == 4 and parsed["error"] is None and parsed["finished"] is False


@pytest.mark.parametrize("name, final_steps", [("train_2_steps.log", [1, 2]), ("resume_to_3.log", [3]),
                                               ("failed_tp.log", [])])
def test_every_prefix_of_a_real_log_parses(name, final_steps):
    """As the log is being written: whatever has been written so far parses, and steps only accumulate."""
    text = real_log(name)
    seen = []
    for end in [*range(0, len(text), 1009), len(text)]:
        steps = steps_of(run_log.parse(text[:end]))
        assert steps[:len(seen)] == seen
        seen = steps
    assert seen == final_steps


def test_odd_final_validation_lines():
    parsed = run_log.parse(ray("(" * 300 + "Final validation metrics: x") + ray(step_line(1, {"a": 1.0})))
    assert parsed["finished"] is True and parsed["final_validation"] == "x"  # never closed: as text
    assert steps_of(parsed) == [1]
    assert run_log.parse(ray("(f(1), 'Final validation metrics: {}')"))["final_validation"] == "{}')"
    assert run_log.parse(ray("'Final validation metrics: {1: ['"))["final_validation"] == "{1: ["


def test_traceback_at_end_of_log_without_ray():
    text = ("Error executing job with overrides: ['trainer.total_epochs=1']\n"
            "Traceback (most recent call last):\n"
            '  File "main_ppo.py", line 1, in <module>\n'
            "KeyError: 'train_files'\n"
            "\n"
            "The above exception was the direct cause of the following exception:\n"
            "\n"
            "Traceback (most recent call last):\n"
            '  File "main_ppo.py", line 9, in <module>\n'
            "omegaconf.errors.ConfigAttributeError: Missing key train_files\n")
    parsed = run_log.parse(text)
    assert parsed["error"] == "omegaconf.errors.ConfigAttributeError: Missing key train_files"
    assert parsed["traceback_tail"][0] == "Traceback (most recent call last):"
    assert len(parsed["traceback_tail"]) == 9


# --- resume, checkpoints, final validation -------------------------------------------------------------------------

def test_resume_replaces_repeated_steps():
    first_run = "".join(ray("local_global_step_folder: /ckpt/global_step_%d" % n)
                        + ray(step_line(n, {"critic/score/mean": n / 10})) for n in (1, 2, 3))
    resumed = "".join([
        ray("Load from checkpoint folder: /ckpt/global_step_2"),
        ray("Setting global step to 2"),
        ray("local_global_step_folder: /ckpt/global_step_3"),
        ray(step_line(3, {"critic/score/mean": 0.9})),
        ray(step_line(4, {"critic/score/mean": 1.0})),
    ])
    parsed = run_log.parse(first_run + resumed)
    assert [(e["step"], e["metrics"]["critic/score/mean"]) for e in parsed["steps"]] == [
        (1, 0.1), (2, 0.2), (3, 0.9), (4, 1.0)]
    assert parsed["resumed_from"] == 2
    assert parsed["checkpoints_saved"] == [1, 2, 3]

    # Resumed from an older checkpoint: the steps after the repeated one belong to the abandoned run.
    older = first_run + ray("Load from checkpoint folder: /ckpt/global_step_1") + ray(step_line(2, {"x": 5.0}))
    parsed = run_log.parse(older)
    assert parsed["steps"] == [{"step": 1, "metrics": {"critic/score/mean": 0.1}}, {"step": 2, "metrics": {"x": 5.0}}]
    assert parsed["resumed_from"] == 1


def test_final_validation_metrics_wrapped_by_pprint():
    printed = ("Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': np.float64(0.25), "
               "'val-aux/openai/gsm8k/reward/std@1': np.float64(0.4330127018922193), 'val-aux/num_turns/min': "
               "np.int32(2)}")
    lines = pprint.pformat(printed).splitlines()
    assert len(lines) == 3
    text = ray(lines[0]) + ray("interleaved", source="WorkerDict pid=7") + "".join(ray(line) for line in lines[1:])
    parsed = run_log.parse(text)
    assert parsed["finished"] is True
    assert parsed["final_validation"] == {"val-core/openai/gsm8k/reward/mean@1": 0.25,
                                          "val-aux/openai/gsm8k/reward/std@1": 0.4330127018922193,
                                          "val-aux/num_turns/min": 2}
    # Cut inside the wrapped line: what was printed so far, as text.
    partial = run_log.parse(ray(lines[0]))
    assert partial["finished"] is True
    assert partial["final_validation"] == "{'val-core/openai/gsm8k/reward/mean@1': \""
    assert run_log.parse(ray("Final validation metrics: {'a': 1}"))["final_validation"] == {"a": 1}


def test_error_ignored_once_finished():
    text = ray("Traceback (most recent call last):", source="WorkerDict pid=7") + ray(
        "ValueError: retried", source="WorkerDict pid=7") + ray("'Final validation metrics: None'")
    parsed = run_log.parse(text)
    assert parsed["finished"] is True and parsed["error"] is None


def test_a_sample_print_is_never_read_as_verls_own_output():
    """verl's reward manager prints a sample of the data set (verl/workers/reward_manager/naive.py at 634bd935:
    "[prompt]", "[response]", "[ground_truth]", "[score]" lines); a problem whose text holds a step line and a
    traceback gives no step and no error."""
    text = ("(TaskRunner pid=7) [prompt] user\n"
            "(TaskRunner pid=7) step:40 - critic/score/mean:1.0 - response_length/mean:9.0\n"
            "(TaskRunner pid=7) Traceback (most recent call last):\n"
            "(TaskRunner pid=7)   File \"a.py\", line 1, in <module>\n"
            "(TaskRunner pid=7) AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2\n"
            "(TaskRunner pid=7) [response] 4\n"
            "(TaskRunner pid=7) [ground_truth] 4\n"
            "(TaskRunner pid=7) [score] 1.0\n"
            "(TaskRunner pid=7) step:1 - critic/score/mean:0.25\n")
    parsed = run_log.parse(text)
    assert [s["step"] for s in parsed["steps"]] == [1], parsed["steps"]
    assert parsed["error"] is None and parsed["first_error"] is None, parsed
