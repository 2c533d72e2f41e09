"""The publish engine against the hub stand-in (tests/fakehub.py) through huggingface_hub's real upload code: the
step chosen from the eval stage's reports, the model card, a first run that uploads every file, a second that
uploads nothing, a repository we did not make refused unless allowed, and an upload cut off halfway resumed without
sending again what the server holds."""

import json
import os

import pytest
import yaml

from ascend_grpo.common import errors
from ascend_grpo.eval import checkpoint_pick, result_report
from ascend_grpo.publish import model_publish
from grpo_testkit import ROOT
from fakehub import FakeHub

TOKEN = "hf_publishtesttoken0123456789abcdef"
REFERENCE = os.path.join(ROOT, "roles", "grpo_eval", "files", "reference.yml")
WEIGHTS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


def _merged(root, step):
    target = root / "merged" / ("global_step_%d" % step)
    target.mkdir(parents=True)
    for i, name in enumerate(WEIGHTS):
        (target / name).write_bytes(os.urandom(200_000 + i))
    (target / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    (target / "tokenizer_config.json").write_text("{}")
    record = checkpoint_pick.merge_record(str(target), step, "/ck/global_step_%d/actor" % step, "f" * 64,
                                          "2026-01-01T00:00:00+0000")
    (target / checkpoint_pick.MERGE_MANIFEST).write_text(json.dumps(record))
    return str(target)


def _report(tmp_path, step, base_acc=43.0, trained_acc=50.0):
    merged = _merged(tmp_path, step)
    res = lambda acc: {"accuracy": acc, "correct": int(acc), "problems": 100}  # noqa: E731
    with open(REFERENCE, encoding="utf-8") as handle:
        reference = yaml.safe_load(handle)
    report = result_report.build_report(res(base_acc), res(trained_acc), {
        "model": "Qwen/Qwen2.5-1.5B-Instruct", "data": "DigitalLearningGmbH/MATH-lighteval",
        "checkpoint": {"step": step, "merged": merged, "dir": "/ck"}, "settings": {"max_out_len": 1024},
        "reference": reference, "training": {"run_dir": "/ws/runs/p/e", "overrides": ["data.train_batch_size=4"]}})
    reports = tmp_path / "eval" / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    (reports / ("p-e-step_%d.json" % step)).write_text(json.dumps(report))
    return report


@pytest.fixture()
def hub(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)  # the token reaches the client as the module's option only
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    with FakeHub(str(tmp_path / "hub"), token=TOKEN) as server:
        # huggingface_hub reads HF_ENDPOINT once, at import (the role sets it for the module's process); its commit
        # result parses the repository's URL against it
        from huggingface_hub import constants
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        yield server


def _params(tmp_path, hub, **kw):
    return dict({"eval_dir": str(tmp_path / "eval"), "run_name": "p-e", "step": 0, "repo_id": "me/qwen-grpo",
                 "endpoint": hub.url, "private": False, "allow_foreign": False, "inventory": "-i inventories/sim",
                 "base_model": "Qwen/Qwen2.5-1.5B-Instruct", "datasets": ["DigitalLearningGmbH/MATH-lighteval"],
                 "run_spec": "", "token": TOKEN}, **kw)


def _api(hub, token=TOKEN):
    from huggingface_hub import HfApi
    return HfApi(endpoint=hub.url, token=token)


def test_round_trip_then_nothing(tmp_path, hub):
    _report(tmp_path, 2)
    _report(tmp_path, 4)
    first = model_publish.publish(_params(tmp_path, hub), api=_api(hub))
    assert first["changed"] and first["created"] and first["step"] == 4
    expected = sorted(list(WEIGHTS) + ["README.md", ".grpo-publish.json", "config.json", "tokenizer_config.json"])
    assert sorted(first["uploaded"]) == expected
    assert sorted(hub.puts) == sorted(set(hub.puts)) and len(hub.puts) == 2  # the two weights, by LFS
    on_hub = tmp_path / "hub" / "models" / "me" / "qwen-grpo"
    for name in WEIGHTS:
        assert (on_hub / name).read_bytes() == (tmp_path / "merged" / "global_step_4" / name).read_bytes()
    assert not (on_hub / checkpoint_pick.MERGE_MANIFEST).exists()
    assert first["record"]["commit"] and first["record"]["step"] == 4 and TOKEN not in json.dumps(first)
    puts, commits = len(hub.puts), len(hub.commits)
    second = model_publish.publish(_params(tmp_path, hub), api=_api(hub))
    assert not second["changed"] and second["uploaded"] == [] and len(second["unchanged"]) == len(expected)
    assert (len(hub.puts), len(hub.commits)) == (puts, commits)
    assert second["record"] == first["record"]
    # check mode on a new step says what it would upload and uploads nothing
    _report(tmp_path, 6)
    plan = model_publish.publish(_params(tmp_path, hub), check_mode=True, api=_api(hub))
    assert plan["changed"] and plan["step"] == 6 and "README.md" in plan["uploaded"]
    assert (len(hub.puts), len(hub.commits)) == (puts, commits)


def test_foreign_repository_refused_unless_allowed(tmp_path, hub):
    _report(tmp_path, 2)
    foreign = tmp_path / "hub" / "models" / "me" / "qwen-grpo"
    foreign.mkdir(parents=True)
    (foreign / "README.md").write_text("someone else's\n")
    with pytest.raises(errors.FieldError) as refused:
        model_publish.publish(_params(tmp_path, hub), api=_api(hub))
    assert refused.value.field == "repo_id" and "{allow_foreign}" in refused.value.msg
    assert hub.commits == [] and (foreign / "README.md").read_text() == "someone else's\n"
    done = model_publish.publish(_params(tmp_path, hub, allow_foreign=True), api=_api(hub))
    assert done["changed"] and not done["created"] and (foreign / model_publish.MARKER).is_file()
    # now marked as ours: a rerun without the override uploads nothing
    assert not model_publish.publish(_params(tmp_path, hub), api=_api(hub))["changed"]


def test_cut_off_upload_resumes(tmp_path, hub):
    _report(tmp_path, 2)
    hub.fail_puts_after = 1  # the link drops after the first weights file reached the server
    with pytest.raises(model_publish.PublishError) as stopped:
        model_publish.publish(_params(tmp_path, hub), api=_api(hub))
    assert "run the stage again" in stopped.value.msg and TOKEN not in stopped.value.msg
    assert len(hub.puts) == 1
    sent_first = hub.puts[0]
    hub.fail_puts_after = None
    done = model_publish.publish(_params(tmp_path, hub), api=_api(hub))  # no override: the marker went up first
    assert done["changed"] and not done["created"]
    assert len(hub.puts) == 2 and sent_first not in hub.puts[1:]  # what the server held was not sent again
    assert not model_publish.publish(_params(tmp_path, hub), api=_api(hub))["changed"]


def test_wrong_token_is_a_failure_without_the_token(tmp_path, hub):
    _report(tmp_path, 2)
    wrong = "hf_wrongwrongwrongwrongwrongwrong"
    with pytest.raises(model_publish.PublishError) as failed:
        model_publish.publish(_params(tmp_path, hub, token=wrong), api=_api(hub, wrong))
    assert "hf_wrong" not in failed.value.msg


def test_step_choice(tmp_path):
    with pytest.raises(errors.FieldError) as none:
        model_publish.pick_step(str(tmp_path / "eval"), "p-e", 0, "-i inventories/sim")
    assert "--tags eval" in none.value.msg and "-i inventories/sim" in none.value.msg
    _report(tmp_path, 2)
    _report(tmp_path, 10)
    assert model_publish.pick_step(str(tmp_path / "eval"), "p-e")[0] == 10
    assert model_publish.pick_step(str(tmp_path / "eval"), "p-e", 2)[0] == 2
    with pytest.raises(errors.FieldError) as missing:
        model_publish.pick_step(str(tmp_path / "eval"), "p-e", 5, "-i inventories/sim")
    assert missing.value.field == "step" and "-e {eval_step}=5" in missing.value.msg and "2, 10" in missing.value.msg
    (tmp_path / "merged" / "global_step_10" / "config.json").write_text("{}")  # changed since its merge
    os.utime(tmp_path / "merged" / "global_step_10" / "config.json", ns=(1, 1))
    with pytest.raises(errors.FieldError) as changed:
        model_publish.pick_step(str(tmp_path / "eval"), "p-e", 10)
    assert "changed since" in changed.value.msg


def test_model_card_from_the_report(tmp_path):
    report = _report(tmp_path, 280, base_acc=40.5, trained_acc=52.25)
    spec = {"version": 1, "run_dir": "/ws/runs/p/e", "summary": {"data.train_batch_size": 4, "trainer.nnodes": 1}}
    card = model_publish.model_card(report, "me/qwen-grpo", "Qwen/Qwen2.5-1.5B-Instruct",
                                    ["DigitalLearningGmbH/MATH-lighteval"], spec)
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["base_model"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert front["datasets"] == ["DigitalLearningGmbH/MATH-lighteval"] and front["metrics"] == ["accuracy"]
    values = [m["value"] for m in front["model-index"][0]["results"][0]["metrics"]]
    assert values == [52.25, 40.5]
    # the guide's figures (the sample README's OpenCompass table) with their source, as reference.yml names it
    assert "| base | 40.50 | 40 / 100 | 43.48 |" in card
    assert "| trained, step 280 | 52.25 | 52 / 100 | 55.06 |" in card
    assert "cann-recipes-train@93819a74, llm_rl/qwen2_5/verl_npu_demo/README.md" in card
    assert "data.train_batch_size: 4" in card and "- max_out_len: `1024`" in card
    # without this run's spec, the launch's overrides
    assert "data.train_batch_size=4" in model_publish.model_card(report, "me/x")


def test_the_module_takes_the_token_as_a_hidden_option_and_returns_no_trace_of_it(tmp_path, hub):
    from grpo_testkit import run_module
    _report(tmp_path, 2)
    params = dict(_params(tmp_path, hub), env={"NO_PROXY": "127.0.0.1"})
    result = run_module("grpo_publish", params)
    assert result["changed"] and "failed" not in result, result
    assert TOKEN not in json.dumps(result)
    assert not run_module("grpo_publish", params)["changed"]
