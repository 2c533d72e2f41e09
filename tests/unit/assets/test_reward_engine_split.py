"""The reward users edit is short: the rules in roles/assets/files/math_reward.py (the file verl's
custom_reward_function.path names), the speed engine beside it (math_reward_engine.py), loaded by the rules file from
its own folder, since verl loads the rules file by path (importlib, module name custom_module) and its folder is not
importable. The deploy carries, stages and proves both, and keeps an edit of either.

The scores compared here are the sample's, from benchmarks/reward_baseline.py (the reference the other reward tests
use); the interface an edited rules file relies on is the engine's docstring's."""

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from grpo_testkit import ROOT

from ascend_grpo.assets import reward_deploy

FILES = os.path.join(ROOT, "roles", "assets", "files")
RULES = os.path.join(FILES, "math_reward.py")
ENGINE = os.path.join(FILES, "math_reward_engine.py")
RIGHT = "<think>\nStep 1: We solve the equation.\nStep 2: Therefore x = 3.\nStep 3: Thus done.\n</think>\n" \
        "<answer>\n\\boxed{3}\n</answer>"


def _text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _verl_loads(path, cwd):
    """What verl@634bd935's get_custom_reward_fn does with custom_reward_function.path (verl/trainer/ppo/reward.py),
    in a fresh interpreter whose working directory and sys.path hold neither file; prints compute_score's results
    as JSON."""
    script = textwrap.dedent("""
        import importlib.util, json, sys
        spec = importlib.util.spec_from_file_location("custom_module", sys.argv[1])
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        spec.loader.exec_module(module)
        right, truth = json.loads(sys.argv[2])
        print(json.dumps([module.compute_score(data_source="m", solution_str=right, ground_truth=truth),
                          module.compute_score(data_source="m", solution_str=right, ground_truth="4")]))
    """)
    return subprocess.run([sys.executable, "-I", "-c", script, path, json.dumps([RIGHT, "3"])], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def _deployed(tmp_path, rules=None, engine=None):
    folder = tmp_path / "reward"
    folder.mkdir(exist_ok=True)
    (folder / "math_reward.py").write_text(_text(RULES) if rules is None else rules, encoding="utf-8")
    (folder / "math_reward_engine.py").write_text(_text(ENGINE) if engine is None else engine, encoding="utf-8")
    return folder


def test_the_rules_file_is_short_and_holds_only_the_rules():
    tree = ast.parse(_text(RULES))
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"compute_score", "compute_score_batch", "format_score", "reasoning_score"} <= functions
    assert len(_text(RULES).splitlines()) <= 200
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {node.module.split(".")[0] for node in ast.walk(tree)
                                            if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {"subprocess", "math_verify", "sympy", "pickle", "select", "concurrent"}
    assert os.path.isfile(ENGINE)


def test_verl_loading_the_rules_file_by_path_finds_its_engine_beside_it(tmp_path):
    """A folder that is not on sys.path, a relative path from another working directory: the sample's scores."""
    folder = _deployed(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    done = _verl_loads(os.path.join("..", "reward", "math_reward.py"), cwd=str(tmp_path / "elsewhere"))
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import reward_baseline as reference
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    expected = [reference.compute_score("m", RIGHT, "3"), reference.compute_score("m", RIGHT, "4")]
    assert done.stdout.split("\n")[-2] == "[%r, %r]" % tuple(expected)
    assert expected[0] > 0.9 and expected[1] == 0.0
    assert os.path.isfile(folder / "math_reward_engine.py")


def test_a_rules_file_without_its_engine_fails_when_verl_loads_it_naming_the_engine(tmp_path):
    (tmp_path / "reward").mkdir()
    shutil.copy(RULES, tmp_path / "reward" / "math_reward.py")
    done = _verl_loads(str(tmp_path / "reward" / "math_reward.py"), cwd=str(tmp_path))
    assert done.returncode != 0
    assert "math_reward_engine.py is missing" in done.stderr


def test_an_edited_rules_file_works_with_a_newer_engine(tmp_path):
    """The user's edit (another weight for a correct answer, no keyword counts: no reasoning points) and an
    engine that offers a newer interface beside the one the rules ask for: the edit decides the score."""
    rules = _text(RULES).replace("CORRECT = 0.7", "CORRECT = 0.5").replace('KEYWORDS = (', 'KEYWORDS = () and (')
    assert rules != _text(RULES)
    newer = _text(ENGINE).replace("API_VERSIONS = (1,)", "API_VERSIONS = (1, 2)")
    assert newer != _text(ENGINE)
    folder = _deployed(tmp_path, rules=rules, engine=newer)
    done = _verl_loads(str(folder / "math_reward.py"), cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[%r, 0.0]" % (0.5 + (0.05 + 0.05 + 0.05 + 0.05) + 0.0)


def test_an_engine_without_the_rules_interface_is_refused_when_verl_loads_the_file(tmp_path):
    folder = _deployed(tmp_path, engine=_text(ENGINE).replace("API_VERSIONS = (1,)", "API_VERSIONS = (2,)"))
    done = _verl_loads(str(folder / "math_reward.py"), cwd=str(tmp_path))
    assert done.returncode != 0
    assert "offers interfaces (2,); this reward needs 1" in done.stderr


def _params(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True, exist_ok=True)
    return ws, ws / "reward" / "math_reward.py"


def test_the_deploy_carries_and_proves_both_files_and_keeps_an_edit_of_the_rules(tmp_path):
    ws, dest = _params(tmp_path)
    rules, engine = _text(RULES), _text(ENGINE)
    assert reward_deploy.plan(rules, str(dest), "compute_score", str(ws), engine) == "create"
    first = reward_deploy.deploy(rules, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"),
                                 engine=engine)
    assert first["deploy"] == "create" and first["scored"] and first["scores"]["right"] > 0.9
    assert dest.read_text() == rules and (ws / "reward" / "math_reward_engine.py").read_text() == engine
    assert reward_deploy.plan(rules, str(dest), "compute_score", str(ws), engine) == "none"
    # the user's edit of the rules file is kept when the package's text comes back
    dest.write_text(rules + "\n# my edit\n")
    again = reward_deploy.deploy(rules, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"),
                                 engine=engine)
    assert again["deploy"] == "replace" and again["scored"] is False and again["engine_backup"] is None
    assert open(again["backup"], encoding="utf-8").read().endswith("# my edit\n") and dest.read_text() == rules
    # a new engine alone is a change: proven again (from the staging copy), the former one kept
    newer = engine + "\n# a newer engine\n"
    assert reward_deploy.plan(rules, str(dest), "compute_score", str(ws), newer) == "replace"
    third = reward_deploy.deploy(rules, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"),
                                 engine=newer)
    assert third["deploy"] == "replace" and third["scored"] is True and third["backup"] is None
    assert open(third["engine_backup"], encoding="utf-8").read() == engine
    assert (ws / "reward" / "math_reward_engine.py").read_text() == newer


def test_a_new_engine_that_fails_is_proven_from_the_staging_copy_and_changes_nothing(tmp_path):
    ws, dest = _params(tmp_path)
    rules, engine = _text(RULES), _text(ENGINE)
    reward_deploy.deploy(rules, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"), engine=engine)
    broken = engine.replace("API_VERSIONS = (1,)", "API_VERSIONS = ()")
    with pytest.raises(reward_deploy.RewardError) as err:
        reward_deploy.deploy(rules, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"),
                             engine=broken)
    assert "this reward needs 1" in str(err.value)
    assert (ws / "reward" / "math_reward_engine.py").read_text() == engine
    assert sorted(os.listdir(ws / "reward")) == ["math_reward.py", "math_reward_engine.py"]


def test_the_preflight_refuses_a_reward_path_that_takes_the_engines_name(tmp_path):
    ws, _dest = _params(tmp_path)
    with pytest.raises(reward_deploy.RewardError) as err:
        reward_deploy.plan(_text(RULES), str(ws / "reward" / "math_reward_engine.py"), "compute_score", str(ws),
                           _text(ENGINE))
    assert str(err.value).startswith("{dest}: ")
