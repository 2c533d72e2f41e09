"""The eval stage's engine: what decides a result, OpenCompass's own result files, the configuration behind a
checkpoint (the file writer: grpo_testkit.write_file)."""

import calendar
import json
import os
import shutil
import time

import pytest
from grpo_testkit import ROOT, write_file as _write

from ascend_grpo.eval import checkpoint_pick, result_report

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "opencompass")


# --- what decides a result ---------------------------------------------------------------------------------------

def _model(root):
    for name, text in (("model.safetensors", "w"), ("config.json", "{}"), ("tokenizer_config.json", "{}"),
                       ("chat_template.jinja", "t"), (".grpo-weights.json", "{}")):
        _write(os.path.join(root, name), text)
    return root


def test_eval_key_changes_with_what_decides_the_figures(tmp_path):
    model = _model(str(tmp_path / "m"))
    fp = checkpoint_pick.model_fingerprint(model)
    settings = {"max_out_len": 1024, "batch_size": 16, "limit": 0}
    key = result_report.eval_key(fp, "d" * 64, settings)
    assert key == result_report.eval_key(fp, "d" * 64, dict(reversed(list(settings.items()))))
    assert key != result_report.eval_key(fp, "e" * 64, settings)
    assert key != result_report.eval_key(fp, "d" * 64, dict(settings, max_out_len=512))
    # our own manifests do not count; a changed template does
    _write(os.path.join(model, ".grpo-weights.json"), '{"other": 1}')
    _write(os.path.join(model, checkpoint_pick.MERGE_MANIFEST), "{}")
    assert checkpoint_pick.model_fingerprint(model) == fp
    _write(os.path.join(model, "chat_template.jinja"), "another template")
    assert checkpoint_pick.model_fingerprint(model) != fp


# --- OpenCompass's own result files ------------------------------------------------------------------------------

def _run(work, stamp, abbr, accuracy, verdicts, summary=True):
    run = os.path.join(work, stamp)
    details = [{"example_abbr": "math_test_%d" % i, "pred": ["[1]"], "answer": ["[1]"], "correct": [v]}
               for i, v in enumerate(verdicts)]
    _write(os.path.join(run, "results", abbr, "math.json"), json.dumps({"accuracy": accuracy, "details": details}))
    _write(os.path.join(run, "predictions", abbr, "math.json"), "{}")
    if summary:
        _write(os.path.join(run, "summary", "summary_%s.csv" % stamp),
               "dataset,version,metric,mode,%s\nmath,a58d9d,accuracy,gen,%.2f\n" % (abbr, accuracy))
    return run


def test_read_result_from_a_real_opencompass_run(tmp_path):
    """The files OpenCompass 0.5.2 wrote for the sim's tiny model (8 problems, nothing right)."""
    run = tmp_path / "20261202_221511"
    os.makedirs(run / "results" / "trained")
    os.makedirs(run / "summary")
    shutil.copy(os.path.join(FIXTURES, "results_math.json"), run / "results" / "trained" / "math.json")
    shutil.copy(os.path.join(FIXTURES, "summary.csv"), run / "summary" / "summary_20261202_221511.csv")
    got = result_report.read_result(str(tmp_path))
    assert (got["accuracy"], got["problems"], got["correct"], got["abbr"]) == (0.0, 8, 0, "trained")
    assert got["summary_accuracy"] == 0.0 and got["run"] == "20261202_221511"
    assert got["predictions_file"] is None
    assert len(got["result_sha256"]) == 64


def test_read_result_counts_the_verdicts(tmp_path):
    _run(str(tmp_path), "20261201_100000", "trained", 37.5, [True, False, True, False, False, True, False, False])
    got = result_report.read_result(str(tmp_path))
    assert (got["accuracy"], got["problems"], got["correct"], got["summary_accuracy"]) == (37.5, 8, 3, 37.5)
    assert got["predictions_file"].endswith("predictions/trained/math.json")


def test_read_result_takes_the_newest_run_only(tmp_path):
    _run(str(tmp_path), "20261201_100000", "base", 50.0, [True, False])
    os.makedirs(tmp_path / "20261202_100000" / "predictions")  # a later run that wrote no result
    with pytest.raises(checkpoint_pick.EvalError, match="wrote no math result"):
        result_report.read_result(str(tmp_path))


def test_read_result_refuses_a_run_without_accuracy_or_with_two_models(tmp_path):
    run = _run(str(tmp_path / "a"), "20261201_100000", "base", 50.0, [True, False])
    _write(os.path.join(run, "results", "base", "math.json"), json.dumps({"error": "no predictions"}))
    with pytest.raises(checkpoint_pick.EvalError, match="no accuracy .*no predictions"):
        result_report.read_result(str(tmp_path / "a"))
    run = _run(str(tmp_path / "b"), "20261201_100000", "base", 50.0, [True, False])
    _write(os.path.join(run, "results", "other", "math.json"), "{}")
    with pytest.raises(checkpoint_pick.EvalError, match="several models"):
        result_report.read_result(str(tmp_path / "b"))


def test_verdicts_as_bools_or_lists():
    assert result_report._is_correct(True) and result_report._is_correct([True])
    assert not result_report._is_correct([True, False]) and not result_report._is_correct([])
    assert not result_report._is_correct(None) and not result_report._is_correct("true")


# --- the configuration behind a checkpoint -----------------------------------------------------------------------

def test_launch_for_takes_the_last_launch_before_the_save():
    launches = [{"started_at": "2026-12-02T10:00:00+0000", "overrides": ["a=1"]},
                {"started_at": "2026-12-02T12:00:00+0000", "overrides": ["a=2"]},
                {"started_at": "garbage"}]
    at = lambda text: calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))  # noqa: E731
    assert checkpoint_pick.launch_for(launches, at("2026-12-02T11:00:00"))["overrides"] == ["a=1"]
    assert checkpoint_pick.launch_for(launches, at("2026-12-02T13:00:00"))["overrides"] == ["a=2"]
    assert checkpoint_pick.launch_for(launches, at("2026-12-02T09:00:00")) is None


def test_read_launches_skips_broken_lines(tmp_path):
    path = tmp_path / "launches.jsonl"
    path.write_text('{"started_at": "2026-12-02T10:00:00+0000"}\nnot json\n[1]\n')
    assert checkpoint_pick.read_launches(str(path)) == [{"started_at": "2026-12-02T10:00:00+0000"}]
    assert checkpoint_pick.read_launches(str(tmp_path / "none")) == []
