"""The patch stage's modules name the stage's settings in their refusals, through the mapping the role's own tasks
pass (``setting_names``): the engines know only their options (issue 45, item 3). The tree hint names the deps
stage's settings through options of verl_patch that exist only to be named."""

import json
import os
import subprocess
import sys

from grpo_testkit import ROOT, run_module
from grpo_testkit.setting_names import role_setting_names

# a profile operation on a file the tree does not have, labelled as the stage labels a profile's operations
GONE = {"op": "rename", "file": "verl/gone.py", "symbol": "A", "to": "B", "profile": "mine", "tree": "verl@abc"}


def _tree(path):
    (path / "verl").mkdir(parents=True)
    (path / "verl" / "__init__.py").write_text("")
    return path


def test_a_profile_that_does_not_fit_the_tree_names_the_deps_and_patch_settings(tmp_path):
    root = _tree(tmp_path / "tree")
    result = run_module("verl_patch", {"root": str(root), "operations": [GONE],
                                       "setting_names": role_setting_names("verl_compat_patch", "verl_patch")})
    hint = ("mine is written for verl@abc; the tree at %s does not have the code it changes: check the deps stage's "
            "verl source (deps_pinning_verl_source, deps_pinning_verl_version), or set verl_compat_patch_profiles to "
            "the profiles for this tree" % root)
    assert result["failed"] and result["hints"] == [hint] and hint in result["msg"], result["msg"]
    assert result["problems"] == ["mine: verl/gone.py: file not found under %s" % root]


def test_no_tree_names_the_patch_stages_tree_setting_in_both_modules(tmp_path):
    for module, params in (("verl_patch", {"operations": []}),
                           ("verl_import_check", {"entries": ["verl.trainer.main_ppo"]})):
        names = role_setting_names("verl_compat_patch", module)
        result = run_module(module, dict(params, state_dir=str(tmp_path), setting_names=names))
        assert result["failed"] and result["msg"].endswith(
            "Or set verl_compat_patch_verl_dir to the folder that holds verl/."), result["msg"]


def test_without_a_mapping_the_messages_name_the_options(tmp_path):
    root = _tree(tmp_path / "tree")
    hinted = run_module("verl_patch", {"root": str(root), "operations": [GONE]})
    assert "verl source (verl_source, verl_version), or set operations to the profiles" in hinted["msg"]
    bare = run_module("verl_patch", {"root": str(tmp_path / "empty"), "operations": []})
    assert bare["msg"].endswith("or point root at the folder that holds verl/."), bare["msg"]


def test_the_command_line_names_its_own_flag_for_the_profiles(tmp_path):
    root, ops = _tree(tmp_path / "tree"), tmp_path / "ops.json"
    ops.write_text(json.dumps([GONE]))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_plugins", "module_utils"))
    cli = subprocess.run([sys.executable, "-m", "ascend_grpo.patch.ast_patch", "--root", str(root), "--profile",
                          str(ops)], capture_output=True, text=True, env=env, check=False)
    assert cli.returncode == 2
    assert "(verl_source, verl_version), or set --profile to the profiles for this tree" in cli.stderr, cli.stderr
