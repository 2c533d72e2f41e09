"""The eval stage's report, the rendered OpenCompass configuration and the OpenCompass venv profiles."""

import ast
import copy
import hashlib
import json
import os
import subprocess
import tarfile

import jinja2
import pytest
import yaml
from grpo_testkit import ROOT, SAMPLE_COMMIT, need_sample_tarball

from ascend_grpo.assets import math_data
from ascend_grpo.common import settings
from ascend_grpo.deps import pins
from ascend_grpo.eval import result_report

import eval_filters  # noqa: E402


# --- the report --------------------------------------------------------------------------------------------------

def _result(name, accuracy, correct, problems=5000):
    return {"name": name, "model": name, "accuracy": accuracy, "correct": correct, "problems": problems,
            "result_file": "/ws/eval/%s/results/%s/math.json" % (name, name), "result_sha256": "ab" * 32,
            "evaluated_at": "20261202_100000", "settings": {}, "key": "k"}


with open(os.path.join(ROOT, "roles", "grpo_eval", "files", "reference.yml"), encoding="utf-8") as _fh:
    REFERENCE = yaml.safe_load(_fh)

# Transcribed from the sample's README (cann-recipes-train@93819a74, llm_rl/qwen2_5/verl_npu_demo/README.md, its
# OpenCompass table) and DOMAIN.md ("Evaluation", "The guide's chat template"), not from the data file.
SAMPLE_BASE, SAMPLE_STEP, SAMPLE_TRAINED = 43.48, 280, 55.06
SAMPLE_SOURCE = "cann-recipes-train@93819a74, llm_rl/qwen2_5/verl_npu_demo/README.md"
SAMPLE_RUN = ("run_qwen2_5_1_5b.sh: 4 cards, rollout tensor parallel size 2, train batch size 256, save_freq 20, "
              "10 epochs")
INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."
# the sample's own run (run_qwen2_5_1_5b.sh) and the reference single-card run (the train stage's default)
SAMPLE_OVERRIDES = ["algorithm.adv_estimator=grpo", "data.train_batch_size=256", "trainer.nnodes=1",
                    "trainer.n_gpus_per_node=4", "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
                    "trainer.save_freq=20", "trainer.total_epochs=10"]
SINGLE_OVERRIDES = ["algorithm.adv_estimator=grpo", "data.train_batch_size=256", "trainer.nnodes=1",
                    "trainer.n_gpus_per_node=1", "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
                    "trainer.save_freq=70", "trainer.total_epochs=5"]


def _sample_tokenizer_config():
    with tarfile.open(need_sample_tarball()) as archive:
        member = [m for m in archive.getmembers()
                  if m.name.endswith("/llm_rl/qwen2_5/verl_npu_demo/tokenizer_config.json")][0]
        return json.loads(archive.extractfile(member).read())


def _sample_template_sha256():
    return hashlib.sha256(_sample_tokenizer_config()["chat_template"].encode("utf-8")).hexdigest()


def _spec(overrides, **summary):
    """The run's spec as the train stage's check writes it (ascend_grpo.train.run_spec): the composed values of
    these overrides (verl's own null total_training_steps where they leave it out)."""
    values = {"trainer.total_training_steps": None}
    for item in overrides:
        key, _, value = item.partition("=")
        values[key] = int(value) if value.isdigit() else value
    values.update(summary)
    return {"version": 1, "argv": list(overrides), "summary": values}


def _meta(model="Qwen/Qwen2.5-1.5B-Instruct", data="DigitalLearningGmbH/MATH-lighteval", step=280,
          overrides=None, template=None, reference=None):
    overrides = SAMPLE_OVERRIDES if overrides is None else overrides
    return {"dataset": "math_gen_a58d9d", "model": model, "data": data,
            "checkpoint": {"step": step, "dir": "/ws/checkpoints/p/e", "saved": [140, 280]},
            "settings": {"max_out_len": 1024, "batch_size": 16},
            "training": {"started_at": "2026-12-01T10:00:00+0000", "profile": "npu-single",
                         "overrides": overrides},
            "run_spec": _spec(overrides),
            "reference": REFERENCE if reference is None else reference,
            "chat_template": template or {"source": "sample", "sha256": _sample_template_sha256(),
                                          "origin": "https://mirror.example/tokenizer_config.json"},
            "instruction": INSTRUCTION, "train_rows": 7500}


def test_report_with_the_sample_figures_beside_ours():
    """The sample's own run, with the sample's prompt, evaluated at the sample's step: the figures and their source,
    and no difference to name."""
    report = eval_filters.eval_report({"base": _result("base", 44.1, 2205), "trained": _result("trained", 54.9, 2745)},
                                      _meta())
    assert report["difference"] == 10.8
    assert report["reference"]["base"] == SAMPLE_BASE and report["reference"]["trained"] == SAMPLE_TRAINED
    assert report["reference"]["trained_steps"] == [SAMPLE_STEP] and report["reference"]["differences"] == []
    assert report["base"]["accuracy"] == 44.1 and report["trained"]["correct"] == 2745
    assert report["problems"] == 5000 and report["checkpoint"]["step"] == 280
    text = eval_filters.eval_report_markdown(report)
    assert "| base | 44.10 | 2205 / 5000 | 43.48 |" in text
    assert "| trained: step 280 | 54.90 | 2745 / 5000 | 55.06 |" in text
    assert "| difference | +10.80 | | +11.58 |" in text
    assert "Sample figures: " + SAMPLE_SOURCE in text and SAMPLE_RUN in text
    assert "This run differs" not in text
    assert "algorithm.adv_estimator=grpo" in text and "- max_out_len: `1024`" in text


def test_the_default_single_card_run_says_how_it_differs_from_the_samples():
    """One card, 5 epochs of 29 steps: it ends near step 145, so the sample's step 280 is out of its reach; the
    base figure stands, the trained one has no counterpart, and the report says why beside them."""
    report = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500),
                                        _meta(step=145, overrides=SINGLE_OVERRIDES))
    ref = report["reference"]
    assert ref["base"] == SAMPLE_BASE and ref["trained"] is None
    assert ref["note"] == "the sample reports step 280, not step 145"
    assert ref["differences"] == [
        "1 card, the sample's run 4", "rollout tensor parallel size 1, the sample's 2",
        "it ends near step 145 (5 epochs of 29 steps, 7500 problems at 256 a batch), so the sample's step 280 is out "
        "of its reach"]
    text = result_report.render_markdown(report, brief=True)
    assert "| base | 44.00 | 2200 / 5000 | 43.48 |" in text
    assert "| trained: step 145 | 50.00 | 2500 / 5000 | - |" in text
    assert "This run differs from the sample's: 1 card, the sample's run 4; " in text
    assert "so the sample's step 280 is out of its reach." in text


def test_a_run_with_another_template_or_batch_says_so():
    meta = _meta(template={"source": "file", "sha256": "ab" * 32, "origin": "/ctl/roles/assets/files/x.jinja"},
                 overrides=[o.replace("=256", "=128") for o in SAMPLE_OVERRIDES])
    meta["instruction"] = "Solve it."
    ref = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500), meta)["reference"]
    assert ref["trained"] == SAMPLE_TRAINED  # the figures stand; what differs is said beside them
    assert ref["differences"] == [
        "its chat template is not the sample's (file: /ctl/roles/assets/files/x.jinja), so its prompts are not the "
        "sample's", "its prompts end with another instruction ('Solve it.')", "train batch size 128, the sample's 256"]
    # what is not on record is said, never taken as the sample's
    meta = dict(_meta(), chat_template={}, instruction="", training={}, run_spec={})
    ref = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500), meta)["reference"]
    assert [d.split(" (")[0].split(",")[0] for d in ref["differences"]] == [
        "its chat template is not on record", "the instruction its prompts end with is not on record",
        "its training configuration is not on record"]


def test_a_figure_without_a_public_source_is_never_printed():
    made_up = copy.deepcopy(REFERENCE)
    made_up["figures"] += [{"model": "trained", "step": 140, "accuracy": 99.99, "source": "a forum post"},
                           {"model": "trained", "step": 200, "accuracy": 98.76}]
    made_up["sources"]["no_commit"] = {"repository": "somewhere", "path": "README.md"}
    made_up["figures"].append({"model": "trained", "step": 100, "accuracy": 97.53, "source": "no_commit"})
    for step in (140, 200, 100):
        report = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500),
                                            _meta(step=step, reference=made_up))
        text = result_report.render_markdown(report)
        assert report["reference"]["trained"] is None and report["reference"]["trained_steps"] == [SAMPLE_STEP]
        assert not {"99.99", "98.76", "97.53"} & set(text.replace("|", " ").split())
    # a base figure without a source goes too: with nothing sourced left there is no sample column at all
    unsourced = dict(made_up, figures=[dict(f, source=None) for f in made_up["figures"]])
    report = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500),
                                        _meta(reference=unsourced))
    assert report["reference"] is None and "sample" not in result_report.render_markdown(report)


def test_the_reference_data_is_what_the_samples_readme_and_run_script_say():
    """Each figure of roles/grpo_eval/files/reference.yml is in its source's table (the sample's README at the pinned
    commit, read in the shared copy of the sample's folder), and the run and prompt are the sample's."""
    assert REFERENCE["model"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert REFERENCE["data"] == "DigitalLearningGmbH/MATH-lighteval"
    assert [(f["model"], f["step"], f["accuracy"]) for f in REFERENCE["figures"]] == [
        ("base", 0, SAMPLE_BASE), ("trained", SAMPLE_STEP, SAMPLE_TRAINED)]
    with tarfile.open(need_sample_tarball()) as archive:
        commit = archive.pax_headers.get("comment")
        files = {m.name.split("/", 1)[1]: archive.extractfile(m).read().decode("utf-8")
                 for m in archive.getmembers() if m.isfile()}
    for figure in REFERENCE["figures"]:
        source = REFERENCE["sources"][figure["source"]]
        assert source["commit"] == commit == SAMPLE_COMMIT
        # its table's rows: | model | step | dataset | version | metric | mode | accuracy |
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in files[source["path"]].splitlines() if line.strip().startswith("|") and "a58d9d" in line]
        assert [row[1:] for row in rows if row[1] == str(figure["step"])] == [
            [str(figure["step"]), "MATH-lighteval", "a58d9d", "accuracy", "gen", "**%.2f**" % figure["accuracy"]]]
    script = files[REFERENCE["run"]["script"]]
    run = REFERENCE["run"]
    for line in ("trainer.nnodes=%d" % run["nnodes"], "trainer.n_gpus_per_node=%d" % run["n_gpus_per_node"],
                 "actor_rollout_ref.rollout.tensor_model_parallel_size=%d" % run["rollout_tp"],
                 "data.train_batch_size=%d" % run["train_batch_size"], "trainer.save_freq=%d" % run["save_freq"],
                 "trainer.total_epochs=%d" % run["total_epochs"]):
        assert line + " \\" in script, line
    assert (run["n_gpus_per_node"], run["rollout_tp"], run["save_freq"], run["total_epochs"]) == (4, 2, 20, 10)
    assert run["chat_template_sha256"] == _sample_template_sha256() and run["instruction"] == INSTRUCTION == \
        math_data.INSTRUCTION


def test_no_figure_without_a_public_source_anywhere_in_the_package():
    """DOMAIN.md withdrew a figure at step 140 that no public source gives: neither it nor anything made from it
    is left in the package."""
    withdrawn = "53." + "26"
    hits = subprocess.run(["git", "grep", "-n", "-F", withdrawn], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout
    assert hits == "", hits


def test_report_without_the_sample_figures_for_another_model_or_data():
    for meta in (_meta(model="/data/grpo/sources/tiny-qwen2"), _meta(data="/data/grpo/sources/math")):
        report = result_report.build_report(_result("base", 0.0, 0, 8), _result("trained", 12.5, 1, 8), meta)
        assert report["reference"] is None
        text = result_report.render_markdown(report)
        assert "sample" not in text and "| difference | +12.50 | |" in text


def test_report_names_the_folders_evaluated_and_where_the_base_came_from():
    """The base row is the assets stage's copy (what OpenCompass loaded), not the source it was fetched from."""
    meta = dict(_meta(model="/data/grpo/sources/tiny-qwen2"), base_dir="/data/grpo/models/tiny-qwen2",
                checkpoint={"step": 2, "dir": "/data/grpo/checkpoints/sim/e",
                            "merged": "/data/grpo/models/merged/sim/e/global_step_2"})
    report = result_report.build_report(_result("base", 0.0, 0, 8), _result("trained", 0.0, 0, 8), meta)
    assert report["base"]["model"] == "/data/grpo/models/tiny-qwen2"
    assert report["base"]["source"] == "/data/grpo/sources/tiny-qwen2"
    assert report["trained"]["model"] == "/data/grpo/models/merged/sim/e/global_step_2"
    text = result_report.render_markdown(report)
    assert "- base: `/data/grpo/models/tiny-qwen2`, the weights from `/data/grpo/sources/tiny-qwen2`" in text
    assert ("- trained: `/data/grpo/models/merged/sim/e/global_step_2`, step 2 of `/data/grpo/checkpoints/sim/e`"
            in text)
    # a hub model: the folder evaluated, then the id
    hub = dict(_meta(), base_dir="/ws/models/Qwen2.5-1.5B-Instruct")
    text = result_report.render_markdown(result_report.build_report(_result("base", 44.1, 2205),
                                                                    _result("trained", 54.9, 2745), hub))
    assert "- base: `/ws/models/Qwen2.5-1.5B-Instruct`, the weights from `Qwen/Qwen2.5-1.5B-Instruct`" in text


def test_report_notes_what_the_figures_cannot_say():
    meta = dict(_meta(model="/s/tiny"), settings={"max_out_len": 16}, note="The simulated host's model is random.")
    notes = result_report.build_report(_result("base", 0.0, 0, 8), _result("trained", 0.0, 0, 8), meta)["notes"]
    assert notes == ["8 problems: one problem is 12.50 points of accuracy.",
                     "Neither model solved a problem, so the difference says nothing about the training (answers "
                     "are cut at max_out_len = 16 tokens).",
                     "The simulated host's model is random."]
    # one solved: no such warning, and no note the inventory did not give
    notes = result_report.build_report(_result("base", 0.0, 0, 8), _result("trained", 12.5, 1, 8), _meta())["notes"]
    assert notes == ["8 problems: one problem is 12.50 points of accuracy."]


def test_the_console_report_has_the_whole_table_and_the_settings():
    report = result_report.build_report(_result("base", 44.1, 2205), _result("trained", 54.9, 2745),
                                        dict(_meta(), base_dir="/ws/models/q"))
    brief, whole = result_report.render_markdown(report, brief=True), result_report.render_markdown(report)
    assert whole.startswith(brief)
    for line in ("| base | 44.10 | 2205 / 5000 | 43.48 |", "| trained: step 280 | 54.90 | 2745 / 5000 | 55.06 |",
                 "| difference | +10.80 | | +11.58 |", "- base: `/ws/models/q`", "- max_out_len: `1024`",
                 "Note: 5000 problems: one problem is 0.02 points of accuracy."):
        assert line in brief
    assert "algorithm.adv_estimator=grpo" not in brief and "algorithm.adv_estimator=grpo" in whole


def test_what_the_run_is_comes_from_its_spec_not_its_launch_strings():
    # the launch record names no card count; the spec's composed value (verl's default n_gpus_per_node 8, as
    # ppo_trainer.yaml has it) is what the run is: parsing the launch's strings could only have guessed 1
    meta = dict(_meta(), training={"started_at": "2026-12-01T10:00:00+0000", "overrides": ["trainer.save_freq=20"]},
                run_spec=_spec(SAMPLE_OVERRIDES, **{"trainer.n_gpus_per_node": 8}))
    ref = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500), meta)["reference"]
    assert ref["differences"] == ["8 cards, the sample's run 4"]
    # the workspace's spec of another run (the last one checked) is not this run's
    meta = dict(meta, run_dir="/ws/runs/p/e", run_spec=dict(meta["run_spec"], run_dir="/ws/runs/p/other"))
    ref = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500), meta)["reference"]
    assert ref["differences"][0].startswith("its training configuration is not on record")
    # a run launched by an older version has no spec: said, with the command that writes it
    meta = dict(_meta(), run_spec={}, inventory="-i inventories/sim")
    ref = result_report.build_report(_result("base", 44.0, 2200), _result("trained", 50.0, 2500), meta)["reference"]
    assert ref["differences"] == [
        "its training configuration is not on record, so its cards, batch size and steps cannot be compared with the "
        "sample's (the run's spec is written by the train stage's check: ansible-playbook site.yml -i "
        "inventories/sim --tags train)"]


def test_report_says_when_the_training_configuration_is_unknown():
    meta = dict(_meta(), training={})
    text = result_report.render_markdown(result_report.build_report(_result("base", 1.0, 50),
                                                                    _result("trained", 2.0, 100), meta))
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
        grpo_eval_limit=8, grpo_eval_max_out_len=16, grpo_eval_batch_size=4, grpo_eval_trust_remote_code=False)
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
