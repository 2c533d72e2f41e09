"""The modules that write into the workspace in one call: the reward function (deployed, kept, proven once),
rendered files with stage records, the eval report; and the import check's kept answer."""

import hashlib
import json
import os
import sys

from ascend_grpo.common import workspace
from ascend_grpo.patch import import_check
from grpo_testkit import ROOT, run_module
from grpo_testkit.setting_names import role_setting_names

REWARD = open(os.path.join(ROOT, "roles", "assets", "files", "math_reward.py"), encoding="utf-8").read()
ENGINE = open(os.path.join(ROOT, "roles", "assets", "files", "math_reward_engine.py"), encoding="utf-8").read()


def _reward(tmp_path, content=REWARD, **extra):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True, exist_ok=True)
    params = dict({"content": content, "engine_content": ENGINE, "dest": str(ws / "reward" / "math_reward.py"),
                   "name": "compute_score", "python": sys.executable, "workspace": str(ws), "state_dir": str(ws / ".grpo")}, **extra)
    return ws, params


def test_the_reward_is_deployed_proven_once_and_an_edit_kept(tmp_path):
    ws, params = _reward(tmp_path)
    first = run_module("reward_function", params)
    assert first["changed"] and first["deploy"] == "create" and first["scored"], first.get("msg")
    assert first["scores"]["right"] > 0.9 and first["scores"]["wrong"] == 0.0
    second = run_module("reward_function", params)
    assert not second["changed"] and second["deploy"] == "none"
    assert second["scored"] is False and second["scores"] == first["scores"]  # the kept proof stands
    dest = ws / "reward" / "math_reward.py"
    dest.write_text(REWARD + "\n# my edit\n")
    third = run_module("reward_function", params)
    # the package's text again: the proof kept for exactly this content stands
    assert third["changed"] and third["deploy"] == "replace" and third["scored"] is False
    assert third["backup"].startswith(str(dest) + ".bak-")
    assert open(third["backup"], encoding="utf-8").read().endswith("# my edit\n")
    assert dest.read_text() == REWARD


def test_a_new_stack_proves_the_reward_again(tmp_path):
    ws, params = _reward(tmp_path)
    assert run_module("reward_function", params)["scored"]
    workspace.write_json(str(ws / ".grpo" / "deps-installed.json"), {"profile_sha256": "another"})
    assert run_module("reward_function", params)["scored"] is True


def test_the_preflight_refuses_a_missing_function_and_an_unwritable_place(tmp_path):
    ws, params = _reward(tmp_path, state="planned", setting_names=role_setting_names("assets", "reward_function"))
    assert run_module("reward_function", params)["deploy"] == "create"
    missing = run_module("reward_function", dict(params, name="score_it"))
    assert missing["failed"] and missing["msg"].startswith("assets_reward_name: the reward file")
    assert "defines no score_it" in missing["msg"]
    outside = run_module("reward_function", dict(params, dest="/proc/nope/math_reward.py"))
    assert outside["failed"] and outside["msg"].startswith("assets_reward_path: /proc/nope is not a writable folder")
    assert not (ws / "reward").exists()


def test_a_reward_that_scores_wrong_fails_naming_the_file(tmp_path):
    ws, params = _reward(tmp_path, content="def compute_score(**kwargs):\n    return 0.5\n")
    result = run_module("reward_function", params)
    assert result["failed"] and "scored 0.500 for a right and 0.500 for a wrong answer" in result["msg"]
    assert not (ws / ".grpo" / "reward-check.json").exists()


def test_files_dirs_and_records_in_one_call_with_check_mode(tmp_path):
    script, state = tmp_path / "run" / "run_grpo.sh", tmp_path / ".grpo"
    params = {"dirs": [str(tmp_path / "run" / "logs")],
              "files": [{"path": str(script), "content": "echo one\n", "mode": "0755", "backup": True}],
              "state_dir": str(state), "records": {"train": {"run_dir": str(tmp_path / "run")}}}
    checked = run_module("grpo_files", params, check=True)
    assert checked["changed"] and not (tmp_path / "run").exists() and not state.exists()
    first = run_module("grpo_files", params)
    assert first["changed"] and (tmp_path / "run" / "logs").is_dir()
    assert script.read_text() == "echo one\n" and oct(script.stat().st_mode & 0o777) == "0o755"
    assert first["files"][0]["checksum"] == hashlib.sha1(b"echo one\n").hexdigest()  # as the copy module says
    assert workspace.read_record(str(state), "train") == {"run_dir": str(tmp_path / "run")}
    assert run_module("grpo_files", params)["changed"] is False
    script.write_text("echo edited\n")
    again = run_module("grpo_files", params)
    assert again["changed"] and again["files"][0]["backup"].startswith(str(script) + ".bak-")
    assert open(again["files"][0]["backup"], encoding="utf-8").read() == "echo edited\n"
    bad = run_module("grpo_files", dict(params, records={"deploy": {}}))
    assert bad["failed"] and "'deploy' is not a stage's record" in bad["msg"]


def test_files_alone_need_no_state_folder(tmp_path):
    """The assets stage writes the weights engine's files with dirs and files only (no records, no state_dir)."""
    target = tmp_path / "lib" / "ascend_grpo" / "weights.py"
    done = run_module("grpo_files", {"dirs": [str(target.parent)],
                                     "files": [{"path": str(target), "content": "X = 1\n", "mode": "0644"}]})
    assert not done.get("failed") and done["changed"] and target.read_text() == "X = 1\n", done
    without_state = run_module("grpo_files", {"records": {"train": {"run_dir": "/x"}}})
    assert without_state["failed"] and "state_dir" in without_state["msg"]


def test_the_report_is_written_once_per_change(tmp_path):
    params = {"state": "reported", "eval_dir": str(tmp_path), "report_name": "p-e-step_2",
              "reports": {"md": "# report\n", "json": json.dumps({"a": 1})}}
    first = run_module("grpo_eval_result", params)
    assert first["changed"] and first["paths"]["md"] == str(tmp_path / "reports" / "p-e-step_2.md")
    assert (tmp_path / "reports" / "p-e-step_2.json").read_text() == '{"a": 1}\n'
    assert run_module("grpo_eval_result", params)["changed"] is False
    elsewhere = run_module("grpo_eval_result", dict(params, report_dir=str(tmp_path / "controller" / "host")))
    assert elsewhere["changed"] and (tmp_path / "controller" / "host" / "p-e-step_2.md").read_text() == "# report\n"


def test_the_import_checks_fingerprint_follows_the_tree_the_packages_and_the_settings(tmp_path):
    tree, site = tmp_path / "tree", tmp_path / "site"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl" / "__init__.py").write_text("import vllm\n")
    site.mkdir()
    base = import_check.fingerprint(str(tree), [str(site)], {"entries": ["verl"]})
    assert import_check.fingerprint(str(tree), [str(site)], {"entries": ["verl"]}) == base
    assert import_check.fingerprint(str(tree), [str(site)], {"entries": ["verl", "x"]}) != base
    (site / "vllm-0.13.0.dist-info").mkdir()
    installed = import_check.fingerprint(str(tree), [str(site)], {"entries": ["verl"]})
    assert installed != base
    (tree / "verl" / "__init__.py").write_text("import vllm  # patched\n")
    assert import_check.fingerprint(str(tree), [str(site)], {"entries": ["verl"]}) != installed


def test_the_import_check_keeps_its_answer_until_something_changes(tmp_path):
    tree, site, state = tmp_path / "tree", tmp_path / "site", tmp_path / ".grpo"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl" / "__init__.py").write_text("from vllm.gone import thing\n")
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    params = {"root": str(tree), "state_dir": str(state), "paths": [str(site)], "watched": ["vllm"],
              "entries": ["verl"]}
    first = run_module("verl_import_check", params)
    assert first["failed"] and first["cached"] is False and "vllm.gone" in first["msg"]
    again = run_module("verl_import_check", params)
    assert again["failed"] and again["cached"] is True  # the same answer, from the kept check
    (site / "vllm" / "gone.py").write_text("thing = 1\n")
    (site / "vllm-0.13.0.dist-info").mkdir()  # an install changes the distributions
    fixed = run_module("verl_import_check", params)
    assert not fixed.get("failed") and fixed["cached"] is False and fixed["blocking"] == []


def test_a_script_made_owner_only_keeps_its_former_copy_owner_only_too(tmp_path):
    """The issue's: run_grpo.sh and its backups were 0755 and hold the run's environment values."""
    script = tmp_path / "run" / "run_grpo.sh"
    script.parent.mkdir()
    script.write_text("export HF_TOKEN=old\n")
    script.chmod(0o755)  # as an earlier release wrote it
    params = {"files": [{"path": str(script), "content": "export HF_TOKEN=new\n", "mode": "0700", "backup": True}],
              "state_dir": str(tmp_path / ".grpo")}
    done = run_module("grpo_files", params)
    assert done["changed"] and oct(script.stat().st_mode & 0o777) == "0o700"
    backup = done["files"][0]["backup"]
    assert open(backup, encoding="utf-8").read() == "export HF_TOKEN=old\n"
    assert oct(os.stat(backup).st_mode & 0o777) == "0o700"
