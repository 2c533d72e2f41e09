"""The eval stage's engine: checkpoint pick, merge plan, result keys, OpenCompass result files, the report."""

import ast
import calendar
import importlib.util
import json
import os
import shutil
import time

import jinja2
import pytest
import yaml
from conftest import ROOT

from ascend_grpo import evaluation, pins

_SPEC = importlib.util.spec_from_file_location(
    "eval_filters", os.path.join(ROOT, "python_plugins", "filter_plugins", "evaluation.py"))
eval_filters = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(eval_filters)
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "opencompass")


def _write(path, text="x"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


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
        _write(os.path.join(root, evaluation.LATEST), "%d\n" % latest)
    return root


# --- which checkpoint ---------------------------------------------------------------------------------------------

def test_pick_takes_the_step_verl_recorded(tmp_path):
    ck = _checkpoints(str(tmp_path), [1, 2], latest=2)
    picked = evaluation.pick(ck)
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
    steps = evaluation.checkpoint_steps(ck)
    assert steps == {"saved": [1, 2], "incomplete": [3], "latest": 2}
    assert evaluation.pick(ck)["step"] == 2
    with pytest.raises(evaluation.EvalError) as err:
        evaluation.pick(ck, 3)
    assert "grpo_eval_step: step 3 in %s was cut during its save" % ck in str(err.value)
    assert "saved steps: 1, 2" in str(err.value)


def test_a_step_saved_whole_by_two_ranks_counts(tmp_path):
    ck = _checkpoints(str(tmp_path), [1], latest=2)
    for rank in (0, 1):
        _write(os.path.join(ck, "global_step_2", "actor", "model_world_size_2_rank_%d.pt" % rank), "model 2")
    _write(os.path.join(ck, "global_step_2", "data.pt"), "dataloader 2")
    assert evaluation.checkpoint_steps(ck) == {"saved": [1, 2], "incomplete": [], "latest": 2}


def test_pick_takes_a_given_step(tmp_path):
    ck = _checkpoints(str(tmp_path), [70, 140, 145], latest=145)
    assert evaluation.pick(ck, 140)["step"] == 140


def test_pick_refuses_a_step_that_was_not_saved_naming_the_saved_ones(tmp_path):
    ck = _checkpoints(str(tmp_path), [70, 140, 145], latest=145)
    with pytest.raises(evaluation.EvalError) as err:
        evaluation.pick(ck, 100)
    assert "grpo_eval_step: step 100 was not saved" in str(err.value)
    assert "saved steps: 70, 140, 145" in str(err.value)


def test_pick_ignores_a_step_folder_without_model_shards(tmp_path):
    ck = _checkpoints(str(tmp_path), [1, 2], latest=2)
    os.unlink(os.path.join(ck, "global_step_2", "actor", "model_world_size_1_rank_0.pt"))
    assert evaluation.saved_steps(ck) == [1]
    # the record names a step whose save was cut (as after someone deleted its shards): the newest whole one
    assert evaluation.pick(ck)["step"] == 1
    with pytest.raises(evaluation.EvalError, match="step 2 .* was cut during its save.*saved steps: 1"):
        evaluation.pick(ck, 2)


def test_pick_without_record_takes_the_newest_saved(tmp_path):
    ck = _checkpoints(str(tmp_path), [3, 12, 7])
    assert evaluation.pick(ck)["step"] == 12


def test_pick_refuses_a_missing_folder_and_an_empty_one(tmp_path):
    with pytest.raises(evaluation.EvalError, match="grpo_eval_checkpoint_dir: .* does not exist. Train first"):
        evaluation.pick(str(tmp_path / "none"))
    os.makedirs(tmp_path / "empty" / "global_step_1")
    with pytest.raises(evaluation.EvalError, match="holds no saved step"):
        evaluation.pick(str(tmp_path / "empty"))


# --- whether the merge is current --------------------------------------------------------------------------------

def _merge(actor, target, step):
    """What the module does after verl's merger: files in place, then the record."""
    plan = evaluation.merge_plan(actor, target, step)
    os.makedirs(target, exist_ok=True)
    _write(os.path.join(target, "model.safetensors"), "weights of %d" % step)
    _write(os.path.join(target, "config.json"), "{}")
    record = evaluation.merge_record(target, step, actor, plan["source_fingerprint"], "now")
    _write(os.path.join(target, evaluation.MERGE_MANIFEST), json.dumps(record))
    return plan


def test_merge_plan_first_merge_then_current(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    plan = _merge(actor, target, 2)
    assert plan["action"] == "merge" and not plan["backup"] and plan["reason"] == "no merged folder yet"
    again = evaluation.merge_plan(actor, target, 2)
    assert again["action"] == "none" and again["reason"] == "it matches step 2's checkpoint"


def test_merge_plan_notices_a_rewritten_checkpoint(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    shard = os.path.join(actor, "model_world_size_1_rank_0.pt")
    stat = os.stat(shard)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    plan = evaluation.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"]
    assert "another checkpoint" in plan["reason"] or "written since" in plan["reason"]


def test_merge_plan_ignores_the_optimizer_state(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    _write(os.path.join(actor, "optim_world_size_1_rank_0.pt"), "another optimizer state")
    assert evaluation.merge_plan(actor, target, 2)["action"] == "none"


def test_merge_plan_keeps_an_edited_merged_folder_aside(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(actor, target, 2)
    _write(os.path.join(target, "config.json"), '{"edited": true}')
    plan = evaluation.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "changed since the merge" in plan["reason"]


def test_merge_plan_keeps_a_foreign_folder_aside(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [2], latest=2)
    actor = os.path.join(ck, "global_step_2", "actor")
    target = str(tmp_path / "merged" / "global_step_2")
    _write(os.path.join(target, "notes.txt"), "mine")
    plan = evaluation.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "no merge record" in plan["reason"]
    os.unlink(os.path.join(target, "notes.txt"))
    plan = evaluation.merge_plan(actor, target, 2)
    assert plan["action"] == "merge" and not plan["backup"]  # an empty folder is nobody's work


def test_merge_plan_notices_a_merge_of_another_step(tmp_path):
    ck = _checkpoints(str(tmp_path / "ck"), [1, 2], latest=2)
    target = str(tmp_path / "merged" / "global_step_2")
    _merge(os.path.join(ck, "global_step_1", "actor"), target, 1)
    plan = evaluation.merge_plan(os.path.join(ck, "global_step_2", "actor"), target, 2)
    assert plan["action"] == "merge" and plan["backup"] and "step 1" in plan["reason"]


def test_writable_problem(tmp_path, monkeypatch):
    assert evaluation.writable_problem(str(tmp_path / "a" / "b" / "global_step_2")) is None
    assert not (tmp_path / "a").exists()  # the probe leaves nothing behind
    _write(str(tmp_path / "file"))
    assert "is not a folder" in evaluation.writable_problem(str(tmp_path / "file" / "global_step_2"))

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(evaluation.tempfile, "mkstemp", read_only)
    problem = evaluation.writable_problem(str(tmp_path / "x" / "global_step_2"))
    assert problem == "%s cannot be written (Read-only file system)" % tmp_path


# --- what decides a result ---------------------------------------------------------------------------------------

def _model(root):
    for name, text in (("model.safetensors", "w"), ("config.json", "{}"), ("tokenizer_config.json", "{}"),
                       ("chat_template.jinja", "t"), (".grpo-weights.json", "{}")):
        _write(os.path.join(root, name), text)
    return root


def test_eval_key_changes_with_what_decides_the_figures(tmp_path):
    model = _model(str(tmp_path / "m"))
    fp = evaluation.model_fingerprint(model)
    settings = {"max_out_len": 1024, "batch_size": 16, "limit": 0}
    key = evaluation.eval_key(fp, "d" * 64, settings)
    assert key == evaluation.eval_key(fp, "d" * 64, dict(reversed(list(settings.items()))))
    assert key != evaluation.eval_key(fp, "e" * 64, settings)
    assert key != evaluation.eval_key(fp, "d" * 64, dict(settings, max_out_len=512))
    # our own manifests do not count; a changed template does
    _write(os.path.join(model, ".grpo-weights.json"), '{"other": 1}')
    _write(os.path.join(model, evaluation.MERGE_MANIFEST), "{}")
    assert evaluation.model_fingerprint(model) == fp
    _write(os.path.join(model, "chat_template.jinja"), "another template")
    assert evaluation.model_fingerprint(model) != fp


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
    got = evaluation.read_result(str(tmp_path))
    assert (got["accuracy"], got["problems"], got["correct"], got["abbr"]) == (0.0, 8, 0, "trained")
    assert got["summary_accuracy"] == 0.0 and got["run"] == "20261202_221511"
    assert got["predictions_file"] is None
    assert len(got["result_sha256"]) == 64


def test_read_result_counts_the_verdicts(tmp_path):
    _run(str(tmp_path), "20261201_100000", "trained", 37.5, [True, False, True, False, False, True, False, False])
    got = evaluation.read_result(str(tmp_path))
    assert (got["accuracy"], got["problems"], got["correct"], got["summary_accuracy"]) == (37.5, 8, 3, 37.5)
    assert got["predictions_file"].endswith("predictions/trained/math.json")


def test_read_result_takes_the_newest_run_only(tmp_path):
    _run(str(tmp_path), "20261201_100000", "base", 50.0, [True, False])
    os.makedirs(tmp_path / "20261202_100000" / "predictions")  # a later run that wrote no result
    with pytest.raises(evaluation.EvalError, match="wrote no math result"):
        evaluation.read_result(str(tmp_path))


def test_read_result_refuses_a_run_without_accuracy_or_with_two_models(tmp_path):
    run = _run(str(tmp_path / "a"), "20261201_100000", "base", 50.0, [True, False])
    _write(os.path.join(run, "results", "base", "math.json"), json.dumps({"error": "no predictions"}))
    with pytest.raises(evaluation.EvalError, match="no accuracy .*no predictions"):
        evaluation.read_result(str(tmp_path / "a"))
    run = _run(str(tmp_path / "b"), "20261201_100000", "base", 50.0, [True, False])
    _write(os.path.join(run, "results", "other", "math.json"), "{}")
    with pytest.raises(evaluation.EvalError, match="several models"):
        evaluation.read_result(str(tmp_path / "b"))


def test_verdicts_as_bools_or_lists():
    assert evaluation._is_correct(True) and evaluation._is_correct([True])
    assert not evaluation._is_correct([True, False]) and not evaluation._is_correct([])
    assert not evaluation._is_correct(None) and not evaluation._is_correct("true")


# --- the configuration behind a checkpoint -----------------------------------------------------------------------

def test_launch_for_takes_the_last_launch_before_the_save():
    launches = [{"started_at": "2026-12-02T10:00:00+0000", "overrides": ["a=1"]},
                {"started_at": "2026-12-02T12:00:00+0000", "overrides": ["a=2"]},
                {"started_at": "garbage"}]
    at = lambda text: calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))  # noqa: E731
    assert evaluation.launch_for(launches, at("2026-12-02T11:00:00"))["overrides"] == ["a=1"]
    assert evaluation.launch_for(launches, at("2026-12-02T13:00:00"))["overrides"] == ["a=2"]
    assert evaluation.launch_for(launches, at("2026-12-02T09:00:00")) is None


def test_read_launches_skips_broken_lines(tmp_path):
    path = tmp_path / "launches.jsonl"
    path.write_text('{"started_at": "2026-12-02T10:00:00+0000"}\nnot json\n[1]\n')
    assert evaluation.read_launches(str(path)) == [{"started_at": "2026-12-02T10:00:00+0000"}]
    assert evaluation.read_launches(str(tmp_path / "none")) == []


# --- the report --------------------------------------------------------------------------------------------------

def _result(name, accuracy, correct, problems=5000):
    return {"name": name, "model": name, "accuracy": accuracy, "correct": correct, "problems": problems,
            "result_file": "/ws/eval/%s/results/%s/math.json" % (name, name), "result_sha256": "ab" * 32,
            "evaluated_at": "20261202_100000", "settings": {}, "key": "k"}


def _meta(model="Qwen/Qwen2.5-1.5B-Instruct", data="DigitalLearningGmbH/MATH-lighteval", step=280):
    return {"dataset": "math_gen_a58d9d", "model": model, "data": data,
            "checkpoint": {"step": step, "dir": "/ws/checkpoints/p/e", "saved": [140, 280]},
            "settings": {"max_out_len": 1024, "batch_size": 16},
            "training": {"started_at": "2026-12-01T10:00:00+0000", "profile": "npu-single",
                         "overrides": ["algorithm.adv_estimator=grpo", "trainer.total_epochs=5"]}}


def test_report_with_the_sample_figures_beside_ours():
    report = eval_filters.eval_report({"base": _result("base", 44.1, 2205), "trained": _result("trained", 54.9, 2745)},
                                      _meta())
    assert report["difference"] == 10.8
    assert report["reference"]["base"] == 43.48 and report["reference"]["trained"] == 55.06
    assert report["base"]["accuracy"] == 44.1 and report["trained"]["correct"] == 2745
    assert report["problems"] == 5000 and report["checkpoint"]["step"] == 280
    text = eval_filters.eval_report_markdown(report)
    assert "| base | 44.10 | 2205 / 5000 | 43.48 |" in text
    assert "| trained: step 280 | 54.90 | 2745 / 5000 | 55.06 |" in text
    assert "| difference | +10.80 | | +11.58 |" in text
    assert "algorithm.adv_estimator=grpo" in text and "- max_out_len: `1024`" in text


def test_report_names_the_sample_steps_when_ours_differs():
    report = evaluation.build_report(_result("base", 44.0, 2200), _result("trained", 40.0, 2000), _meta(step=70))
    assert report["difference"] == -4.0
    assert report["reference"]["trained"] is None and "steps 140, 280, not step 70" in report["reference"]["note"]
    assert "| trained: step 70 | 40.00 | 2000 / 5000 | - |" in evaluation.render_markdown(report)


def test_report_without_the_sample_figures_for_another_model_or_data():
    for meta in (_meta(model="/data/grpo/sources/tiny-qwen2"), _meta(data="/data/grpo/sources/math")):
        report = evaluation.build_report(_result("base", 0.0, 0, 8), _result("trained", 12.5, 1, 8), meta)
        assert report["reference"] is None
        text = evaluation.render_markdown(report)
        assert "sample" not in text and "| difference | +12.50 | |" in text


def test_report_names_the_folders_evaluated_and_where_the_base_came_from():
    """The base row is the assets stage's copy (what OpenCompass loaded), not the source it was fetched from."""
    meta = dict(_meta(model="/data/grpo/sources/tiny-qwen2"), base_dir="/data/grpo/models/tiny-qwen2",
                checkpoint={"step": 2, "dir": "/data/grpo/checkpoints/sim/e",
                            "merged": "/data/grpo/models/merged/sim/e/global_step_2"})
    report = evaluation.build_report(_result("base", 0.0, 0, 8), _result("trained", 0.0, 0, 8), meta)
    assert report["base"]["model"] == "/data/grpo/models/tiny-qwen2"
    assert report["base"]["source"] == "/data/grpo/sources/tiny-qwen2"
    assert report["trained"]["model"] == "/data/grpo/models/merged/sim/e/global_step_2"
    text = evaluation.render_markdown(report)
    assert "- base: `/data/grpo/models/tiny-qwen2`, the weights from `/data/grpo/sources/tiny-qwen2`" in text
    assert ("- trained: `/data/grpo/models/merged/sim/e/global_step_2`, step 2 of `/data/grpo/checkpoints/sim/e`"
            in text)
    # a hub model: the folder evaluated, then the id
    hub = dict(_meta(), base_dir="/ws/models/Qwen2.5-1.5B-Instruct")
    text = evaluation.render_markdown(evaluation.build_report(_result("base", 44.1, 2205),
                                                              _result("trained", 54.9, 2745), hub))
    assert "- base: `/ws/models/Qwen2.5-1.5B-Instruct`, the weights from `Qwen/Qwen2.5-1.5B-Instruct`" in text


def test_report_notes_what_the_figures_cannot_say():
    meta = dict(_meta(model="/s/tiny"), settings={"max_out_len": 16}, note="The simulated host's model is random.")
    notes = evaluation.build_report(_result("base", 0.0, 0, 8), _result("trained", 0.0, 0, 8), meta)["notes"]
    assert notes == ["8 problems: one problem is 12.50 points of accuracy.",
                     "Neither model solved a problem, so the difference says nothing about the training (answers "
                     "are cut at max_out_len = 16 tokens).",
                     "The simulated host's model is random."]
    # one solved: no such warning, and no note the inventory did not give
    notes = evaluation.build_report(_result("base", 0.0, 0, 8), _result("trained", 12.5, 1, 8), _meta())["notes"]
    assert notes == ["8 problems: one problem is 12.50 points of accuracy."]


def test_the_console_report_has_the_whole_table_and_the_settings():
    report = evaluation.build_report(_result("base", 44.1, 2205), _result("trained", 54.9, 2745),
                                     dict(_meta(), base_dir="/ws/models/q"))
    brief, whole = evaluation.render_markdown(report, brief=True), evaluation.render_markdown(report)
    assert whole.startswith(brief)
    for line in ("| base | 44.10 | 2205 / 5000 | 43.48 |", "| trained: step 280 | 54.90 | 2745 / 5000 | 55.06 |",
                 "| difference | +10.80 | | +11.58 |", "- base: `/ws/models/q`", "- max_out_len: `1024`",
                 "Note: 5000 problems: one problem is 0.02 points of accuracy."):
        assert line in brief
    assert "algorithm.adv_estimator=grpo" not in brief and "algorithm.adv_estimator=grpo" in whole


def test_report_says_when_the_training_configuration_is_unknown():
    meta = dict(_meta(), training={})
    text = evaluation.render_markdown(evaluation.build_report(_result("base", 1.0, 50), _result("trained", 2.0, 100),
                                                              meta))
    assert "Training configuration: not on record" in text


# --- the rendered OpenCompass configuration ----------------------------------------------------------------------

@pytest.mark.parametrize("value", [{"device_map": "cpu", "torch_dtype": "torch.float"}, {"do_sample": False},
                                   "it's a \"path\" \\ with quotes", [1, 2.5, None, True]])
def test_python_literal_round_trips(value):
    assert ast.literal_eval(eval_filters.python_literal(value)) == value


def test_opencompass_config_renders_as_python():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "templates")), undefined=jinja2.StrictUndefined)
    env.filters.update(python_literal=eval_filters.python_literal, dirname=os.path.dirname,
                       basename=os.path.basename)
    text = env.get_template("opencompass_eval.py.j2").render(
        _grpo_eval_model={"name": "trained", "model_dir": "/data/grpo/models/merged/p/e's/global_step_2"},
        grpo_eval_assets={"math_json": "/data/grpo/data/math/math.json"},
        grpo_eval_settings={"model_kwargs": {"device_map": "cpu"}, "generation_kwargs": {"do_sample": False},
                            "num_gpus": 0},
        grpo_eval_limit=8, grpo_eval_max_out_len=16, grpo_eval_batch_size=4)
    tree = ast.parse(text)
    assert "path='/data/grpo/data/math'" in text and "file_name='math.json'" in text
    assert "test_range='[0:8]'" in text and "max_out_len=16" in text
    assert "path=\"/data/grpo/models/merged/p/e's/global_step_2\"" in text
    assert {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets} == {"datasets", "models"}


# --- the OpenCompass venv profiles -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["opencompass-npu", "opencompass-cpu"])
def test_opencompass_profiles(name):
    with open(os.path.join(ROOT, "roles", "grpo_eval", "files", "profiles", name + ".yml"), encoding="utf-8") as fh:
        profile = yaml.safe_load(fh)
    assert pins.validate_profile(profile) == []
    wanted = [r for phase in profile["phases"] for r in phase.get("requirements", [])]
    # every exact requirement agrees with the pins (the drift report checks the pins after install)
    for req in wanted:
        if "==" in req:
            package, version = req.split("==")
            package = package.split("[")[0]
            assert profile["pins"].get(package) == version, req
    assert profile["pins"]["opencompass"] == "0.5.2" and profile["pins"]["transformers"] == "4.57.6"
    assert set(profile["run"]) == {"num_gpus", "model_kwargs", "env"}
