"""The eval stage loads no model code unless grpo_trust_remote_code says so.

- OpenCompass 0.5.2's HuggingFacewithChatTemplate (opencompass/models/huggingface_above_v4_33.py) loads the model
  with ``DEFAULT_MODEL_KWARGS = dict(device_map='auto', trust_remote_code=True)`` and the tokenizer with
  ``dict(padding_side='left', truncation_side='left', trust_remote_code=True)``, each updated with the config's
  ``model_kwargs`` / ``tokenizer_kwargs``: the generated config must say False in both.
- verl's merger (verl/model_merger/base_model_merger.py at 634bd935) takes ``--trust-remote-code``
  (``action="store_true"``): given only when the setting is on.
- A base or merged folder that carries code (an auto_map, *.py) is refused before OpenCompass or the merger loads it.
"""

import ast
import json
import os

import jinja2
import pytest

from ascend_grpo.common import settings
from grpo_testkit import ROOT, run_module
from grpo_testkit.setting_names import role_setting_names

import eval_filters  # noqa: E402

AUTO_MAP = {"AutoConfig": "configuration_x.XConfig"}


def _rendered_model(trust, model_kwargs=None):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROOT, "roles", "grpo_eval", "templates")),
                             undefined=jinja2.StrictUndefined)
    env.filters.update(python_literal=eval_filters.python_literal, dirname=os.path.dirname,
                       basename=os.path.basename, shell_comment=settings.shell_comment)
    text = env.get_template("opencompass_eval.py.j2").render(
        _grpo_eval_model={"name": "base", "model_dir": "/data/grpo/models/tiny"},
        grpo_eval_assets={"math_json": "/data/grpo/data/math/math.json"},
        grpo_eval_settings={"model_kwargs": model_kwargs or {"device_map": "cpu"},
                            "generation_kwargs": {"do_sample": False}, "num_gpus": 0},
        grpo_eval_limit=0, grpo_eval_max_out_len=16, grpo_eval_batch_size=4, grpo_eval_trust_remote_code=trust)
    models = [node for node in ast.parse(text).body if isinstance(node, ast.Assign)
              and node.targets[0].id == "models"][0]
    call = models.value.elts[0]
    # the keyword arguments OpenCompass receives, evaluated as Python would (dict(...) calls included)
    return {kw.arg: eval(compile(ast.Expression(kw.value), "cfg", "eval"), {"dict": dict})  # pylint: disable=eval-used
            for kw in call.keywords if kw.arg in ("model_kwargs", "tokenizer_kwargs")}


def test_opencompass_loads_with_remote_code_off_by_default():
    kwargs = _rendered_model(False)
    assert kwargs["model_kwargs"] == {"device_map": "cpu", "trust_remote_code": False}
    assert kwargs["tokenizer_kwargs"] == {"trust_remote_code": False}


def test_opencompass_loads_with_remote_code_on_when_the_setting_says_so():
    kwargs = _rendered_model(True)
    assert kwargs["model_kwargs"]["trust_remote_code"] is True
    assert kwargs["tokenizer_kwargs"] == {"trust_remote_code": True}


def test_grpo_eval_model_kwargs_cannot_turn_remote_code_on():
    kwargs = _rendered_model(False, {"device_map": "cpu", "trust_remote_code": True})
    assert kwargs["model_kwargs"]["trust_remote_code"] is False


def test_the_eval_stage_hands_the_setting_to_every_load():
    tasks = os.path.join(ROOT, "roles", "grpo_eval", "tasks")
    text = {name: open(os.path.join(tasks, name), encoding="utf-8").read()
            for name in ("preflight.yml", "merge.yml", "evaluate.yml", "opencompass.yml")}
    assert 'grpo_eval_trust_remote_code: "{{ grpo_trust_remote_code | bool }}"' in text["preflight.yml"]
    for module, name in (("grpo_eval_result", "preflight.yml"), ("grpo_checkpoint_info", "preflight.yml"),
                         ("grpo_checkpoint", "merge.yml"), ("grpo_eval_result", "evaluate.yml"),
                         ("grpo_eval_result", "opencompass.yml")):
        for block in text[name].split("\n- name: ")[1:]:
            if "\n  %s:\n" % module in block:
                assert 'trust_remote_code: "{{ grpo_eval_trust_remote_code }}"' in block, (name, block[:80])


# --- the eval's load check: the base or merged folder ------------------------------------------------------------

def _model(path, config=None, extra=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(dict({"model_type": "qwen2"}, **(config or {}))))
    (path / "model.safetensors").write_bytes(b"w")
    for name, text in (extra or {}).items():
        (path / name).write_text(text)
    return path


def _query(tmp_path, model_dir, **kw):
    data = tmp_path / "math.json"
    data.write_text("{}")
    return run_module("grpo_eval_result", dict(name="base", model_dir=str(model_dir), model="tiny",
                                               data_file=str(data), settings={"max_out_len": 16},
                                               eval_dir=str(tmp_path / "eval"),
                                               setting_names=role_setting_names("grpo_eval", "grpo_eval_result"), **kw))


def test_the_eval_refuses_a_base_model_with_an_auto_map_naming_the_file(tmp_path):
    result = _query(tmp_path, _model(tmp_path / "m", config={"auto_map": AUTO_MAP}))
    assert result.get("failed"), result
    assert "config.json" in result["msg"] and "grpo_trust_remote_code: true" in result["msg"], result["msg"]
    assert not (tmp_path / "eval").exists()


def test_the_eval_refuses_a_model_with_a_code_file_and_takes_it_when_trusted(tmp_path):
    model = _model(tmp_path / "m", extra={"modeling_x.py": "raise SystemExit('ran')\n"})
    refused = _query(tmp_path, model)
    assert refused.get("failed") and "modeling_x.py" in refused["msg"], refused
    trusted = _query(tmp_path, model, trust_remote_code=True)
    assert not trusted.get("failed") and trusted["found"] is False, trusted


def test_the_eval_takes_a_clean_model(tmp_path):
    result = _query(tmp_path, _model(tmp_path / "m"))
    assert not result.get("failed") and result["found"] is False, result


# --- the merge ---------------------------------------------------------------------------------------------------

# Records its arguments and writes what verl's merger writes (see test_checkpoint_module).
ARGV_PYTHON = r'''#!/usr/bin/env python3
import json, os, shutil, sys
args = sys.argv[1:]
local, target = args[args.index("--local_dir") + 1], args[args.index("--target_dir") + 1]
with open(os.environ["ARGV_LOG"], "w") as fh:
    json.dump(args, fh)
os.makedirs(target)
open(os.path.join(target, "model.safetensors"), "w").write("w")
for name in os.listdir(os.path.join(local, "huggingface")):
    shutil.copy(os.path.join(local, "huggingface", name), target)
'''


@pytest.fixture()
def checkpoint(tmp_path):
    python = tmp_path / "fake-python"
    python.write_text(ARGV_PYTHON)
    python.chmod(0o755)
    ck = tmp_path / "ck"
    actor = ck / "global_step_1" / "actor"
    (actor / "huggingface").mkdir(parents=True)
    (actor / "model_world_size_1_rank_0.pt").write_text("weights")
    (actor.parent / "data.pt").write_text("dataloader")
    (actor / "huggingface" / "config.json").write_text("{}")
    (ck / "latest_checkpointed_iteration.txt").write_text("1")
    log = tmp_path / "argv.json"

    def merge(module="grpo_checkpoint", **args):
        params = dict(checkpoint_dir=str(ck), target_root=str(tmp_path / "merged"),
                      setting_names=role_setting_names("grpo_eval", module), **args)
        if module == "grpo_checkpoint":
            params["python"] = str(python)
        return run_module(module, params, env={"ARGV_LOG": str(log)})

    merge.actor, merge.log, merge.target = actor, log, tmp_path / "merged" / "global_step_1"
    return merge


def test_the_merger_runs_with_remote_code_off(checkpoint):
    result = checkpoint()
    assert result["changed"] and not result.get("failed"), result
    assert "--trust-remote-code" not in json.loads(checkpoint.log.read_text())


def test_the_merger_is_told_to_trust_remote_code_when_the_setting_is_on(checkpoint):
    result = checkpoint(trust_remote_code=True)
    assert result["changed"] and not result.get("failed"), result
    assert json.loads(checkpoint.log.read_text())[-1] == "--trust-remote-code"


@pytest.mark.parametrize("module", ["grpo_checkpoint", "grpo_checkpoint_info"])
def test_a_checkpoint_whose_config_asks_for_code_is_refused_before_the_merger_runs(checkpoint, module):
    (checkpoint.actor / "huggingface" / "config.json").write_text(json.dumps({"auto_map": AUTO_MAP}))
    result = checkpoint(module)
    assert result.get("failed") and "config.json" in result["msg"], result
    assert "grpo_trust_remote_code" in result["msg"]
    assert not checkpoint.log.exists() and not checkpoint.target.exists()
