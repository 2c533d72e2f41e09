"""The eval stage's report, the rendered OpenCompass configuration and the OpenCompass venv profiles."""

import ast
import importlib.util
import os

import jinja2
import pytest
import yaml
from conftest import ROOT

from ascend_grpo import evaluation, pins, settings

_SPEC = importlib.util.spec_from_file_location(
    "eval_filters", os.path.join(ROOT, "python_plugins", "filter_plugins", "evaluation.py"))
eval_filters = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(eval_filters)


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
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "grpo_eval", "templates")), undefined=jinja2.StrictUndefined)
    env.filters.update(python_literal=eval_filters.python_literal, dirname=os.path.dirname,
                       basename=os.path.basename, shell_comment=settings.shell_comment)
    text = env.get_template("opencompass_eval.py.j2").render(
        _grpo_eval_model={"name": "trained\nimport os  # a name's newline stays in the comment", "model_dir": "/data/grpo/models/merged/p/e's/global_step_2"},
        grpo_eval_assets={"math_json": "/data/grpo/data/math/math.json"},
        grpo_eval_settings={"model_kwargs": {"device_map": "cpu"}, "generation_kwargs": {"do_sample": False},
                            "num_gpus": 0},
        grpo_eval_limit=8, grpo_eval_max_out_len=16, grpo_eval_batch_size=4)
    tree = ast.parse(text)
    assert "path='/data/grpo/data/math'" in text and "file_name='math.json'" in text
    assert "test_range='[0:8]'" in text and "max_out_len=16" in text
    assert "path=\"/data/grpo/models/merged/p/e's/global_step_2\"" in text
    assert {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets} == {"datasets", "models"}
    assert not [node for node in tree.body if isinstance(node, ast.Import)]


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
