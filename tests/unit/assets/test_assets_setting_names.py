"""The assets stage's modules name the stage's settings in their refusals, through the mapping the role's own tasks
pass (``setting_names``): the engines know only their options (issue 45, item 3)."""

import http.server
import json
import os
import threading

import pytest
import yaml
from ascend_grpo.assets import weights
from grpo_testkit import ROOT, run_module
from grpo_testkit.setting_names import role_setting_names


def test_a_missing_local_data_folder_names_the_assets_setting_and_its_fix(tmp_path):
    names = role_setting_names("assets", "math_dataset")
    result = run_module("math_dataset", dict(source="local", local_dir=str(tmp_path / "nowhere"),
                                             dest=str(tmp_path / "out"), setting_names=names), check=True)
    assert result["failed"] and result["field"] == "local_dir"
    assert "is not a folder. Fix: set assets_data_local_dir to a folder holding train*.parquet" in result["msg"]
    assert "{" not in result["msg"]


def test_without_a_mapping_the_message_names_the_option(tmp_path):
    result = run_module("math_dataset", dict(source="local", local_dir=str(tmp_path / "nowhere"),
                                             dest=str(tmp_path / "out")), check=True)
    assert "Fix: set local_dir to a folder" in result["msg"], result["msg"]


def _model_with_code(path):
    """A model folder that would run code of its own when loaded (an auto_map and the module it names)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2",
                                                  "auto_map": {"AutoConfig": "configuration_x.XConfig"}}))
    (path / "tokenizer.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"w" * 64)
    (path / "configuration_x.py").write_text("raise SystemExit('ran')\n")
    return path


def test_a_local_model_folder_without_weights_names_the_assets_setting_and_its_fix(tmp_path):
    result = run_module("model_weights", dict(source="local", local_dir=str(tmp_path / "nowhere"),
                                              dest=str(tmp_path / "model"),
                                              setting_names=role_setting_names("assets", "model_weights")))
    assert result["failed"] and result["field"] == "local_dir"
    assert result["msg"].endswith("Fix: set assets_model_local_dir to a folder with config.json, *.safetensors and "
                                  "the tokenizer files."), result["msg"]
    assert "{" not in result["msg"]


def test_a_model_that_carries_code_names_the_common_trust_setting(tmp_path):
    source = _model_with_code(tmp_path / "src")
    result = run_module("model_weights", dict(source="local", local_dir=str(source), dest=str(tmp_path / "model"),
                                              setting_names=role_setting_names("assets", "model_weights")))
    assert result["failed"] and result["field"] == "trust_remote_code"
    assert "the model source assets_model_local_dir (%s) carries code" % source in result["msg"], result["msg"]
    assert "the default assets_model_allow_patterns fetch no *.py" in result["msg"]
    assert "set grpo_trust_remote_code: true" in result["msg"] and "{" not in result["msg"]


def test_the_fetch_job_names_the_settings_the_plan_carries(tmp_path, capsys):
    """The detached fetch reads the role's mapping from the plan the role writes (roles/assets/tasks/fetch.yml)."""
    source, dest = _model_with_code(tmp_path / "src"), tmp_path / "model"
    files = {name: os.path.getsize(source / name) for name in ("config.json", "model.safetensors", "tokenizer.json")}
    step = {"source": "local", "repo": None, "revision": None, "local_dir": str(source), "allow": ["*"],
            "dest": str(dest), "endpoint": None, "fetch": "copy", "commit": None, "files": files,
            "missing": sorted(files), "reason": "copy", "trust_remote_code": False}
    for names, words in ((role_setting_names("assets", "model_weights"),
                          ["the model folder assets_model_dir", "set grpo_trust_remote_code: true"]),
                         ({}, ["the model folder dest", "set trust_remote_code: true"])):
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps(dict(step, setting_names=names)))
        assert weights.main(["fetch", "--plan", str(plan), "--interval", "60"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error (trust_remote_code): ") and all(w in err for w in words), err
        assert "{" not in err


def test_the_fetch_plan_task_hands_the_roles_mapping_to_the_job():
    with open(os.path.join(ROOT, "roles", "assets", "tasks", "fetch.yml"), encoding="utf-8") as handle:
        task = next(t for t in yaml.safe_load(handle) if t["name"] == "Weights | Write the plan")
    assert "'setting_names': assets_setting_names.model_weights" in task["ansible.builtin.copy"]["content"]


@pytest.fixture
def missing_url():
    """A URL whose server answers 404 (no retry after a 4xx: the download is refused at once)."""
    class NotThere(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  # http.server's name
            self.send_error(404)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotThere)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/t.json" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_sample_that_cannot_be_fetched_names_both_sample_settings(tmp_path, missing_url):
    result = run_module("chat_template", dict(model_dir=str(tmp_path), sample_url=missing_url,
                                              sample_sha256="0" * 64, cache_dir=str(tmp_path / "dl"),
                                              setting_names=role_setting_names("assets", "chat_template")))
    assert result["failed"] and result["msg"].startswith("assets_chat_template_sample_url: cannot download")
    assert "set assets_chat_template_sample_url to a mirror, or assets_chat_template_sample_file to a copy on the " \
           "host" in result["msg"]
    unnamed = run_module("chat_template", dict(model_dir=str(tmp_path), sample_url=missing_url,
                                               sample_sha256="0" * 64, cache_dir=str(tmp_path / "dl")))
    assert unnamed["msg"].startswith("sample_url: cannot download") and "or sample_file to a copy" in unnamed["msg"]


def test_a_reward_without_its_function_names_the_reward_settings(tmp_path):
    params = dict(content="def other():\n    return 0\n", dest=str(tmp_path / "reward" / "math_reward.py"),
                  name="compute_score", workspace=str(tmp_path), state_dir=str(tmp_path / ".grpo"), state="planned")
    result = run_module("reward_function", dict(params, setting_names=role_setting_names("assets", "reward_function")))
    assert result["failed"] and result["msg"] == (
        "assets_reward_name: the reward file (assets_reward_src) defines no compute_score at module level (or does "
        "not parse): set assets_reward_name to its scoring function.")
    unnamed = run_module("reward_function", params)
    assert unnamed["msg"].startswith("name: the reward file (content) defines no compute_score")
