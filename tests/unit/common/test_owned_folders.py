"""A path setting may never name a folder the package owns for something else (issue 44: "a venv setting pointing at
another stage's venv or at the venvs folder itself, the checkpoint dir pointing at the state folder .grpo, the eval
output at the train dir"): before, the stage went on and made over, replaced or moved aside what it found there.
Each stage refuses it in its preflight, naming both settings, with the host's tree unchanged."""

import pytest
from common_filters import OWNED_LAYOUT, _yaml_files
from grpo_testkit import ROOT, run_role, tree_snapshot

from ascend_grpo.common import owned_folders

# the role layer's layout (the owned_folder_problems filter's): the engine takes its settings from it
TEXTS = owned_folders.defaults(_yaml_files("roles/*/defaults/main.yml", ROOT), OWNED_LAYOUT)
WS = {"grpo_workspace": "/data/grpo", "grpo_stack_venv": "/data/grpo/venvs/stack"}
TRAIN_DIR = "/data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single"  # the train stage's default


def _problems(own, **values):
    return owned_folders.problems(own, dict(WS, **values), TEXTS, OWNED_LAYOUT)


def test_the_owned_folders_come_from_the_defaults_not_a_list():
    names = owned_folders.owned(TEXTS, OWNED_LAYOUT)
    for name in ("grpo_common_state_dir", "grpo_common_jobs_dir", "deps_pinning_venv", "grpo_eval_venv",
                 "grpo_train_dir", "grpo_train_checkpoint_dir", "grpo_eval_dir", "assets_data_dir"):
        assert name in names, name
    # settings that are no folder of the workspace: a count, a name, a controller folder
    for name in ("grpo_train_project", "grpo_train_wait_minutes", "grpo_eval_report_dir", "grpo_common_python"):
        assert name not in names, name


@pytest.mark.parametrize("own", [["deps_pinning_venv", "deps_pinning_verl_path", "deps_pinning_download_cache"],
                                 ["assets_model_dir", "assets_data_dir", "assets_reward_path"],
                                 ["grpo_train_dir", "grpo_train_checkpoint_dir", "grpo_train_tracking_dir"],
                                 ["grpo_eval_venv", "grpo_eval_dir", "grpo_eval_merged_root"],
                                 ["grpo_common_state_dir", "grpo_common_jobs_dir"]])
def test_the_defaults_hold(own):
    """The stack venv is deps_pinning_venv by design, the jobs folder sits in the state folder by design."""
    assert _problems(own, deps_pinning_venv="/data/grpo/venvs/stack") == []


@pytest.mark.parametrize("own, values, words", [
    # a venv setting at another stage's venv
    (["grpo_eval_venv"], {"grpo_eval_venv": "/data/grpo/venvs/stack"},
     "grpo_eval_venv (/data/grpo/venvs/stack) names a folder the package keeps for something else: it is the "
     "folder grpo_stack_venv names"),
    (["deps_pinning_venv"], {"deps_pinning_venv": "/data/grpo/venvs/opencompass"},
     "deps_pinning_venv (/data/grpo/venvs/opencompass) names a folder the package keeps for something else: it is "
     "the folder grpo_eval_venv names"),
    # at the venvs folder itself
    (["deps_pinning_venv"], {"deps_pinning_venv": "/data/grpo/venvs"},
     "deps_pinning_venv (/data/grpo/venvs) names a folder the package keeps for something else: it holds "
     "grpo_eval_venv (/data/grpo/venvs/opencompass)"),
    # the checkpoint folder at the state folder, or inside it
    (["grpo_train_checkpoint_dir"], {"grpo_train_checkpoint_dir": "/data/grpo/.grpo"},
     "it is the folder grpo_common_state_dir names"),
    (["grpo_train_checkpoint_dir"], {"grpo_train_checkpoint_dir": "/data/grpo/.grpo/checkpoints"},
     "it is inside grpo_common_state_dir (/data/grpo/.grpo)"),
    # the eval output at the train dir, or inside it
    (["grpo_eval_dir"], {"grpo_eval_dir": TRAIN_DIR}, "it is the folder grpo_train_dir names"),
    (["grpo_eval_dir"], {"grpo_eval_dir": TRAIN_DIR + "/eval"}, "it is inside grpo_train_dir (%s)" % TRAIN_DIR),
    # the workspace itself
    (["assets_data_dir"], {"assets_data_dir": "/data/grpo/"}, "it is the folder grpo_workspace names"),
    # a verl tree set by the user, and another stage's setting the user set
    (["deps_pinning_verl_path"], {"deps_pinning_verl_path": TRAIN_DIR}, "it is the folder grpo_train_dir names"),
    (["grpo_train_dir"], {"grpo_eval_dir": "/data/grpo/out", "grpo_train_dir": "/data/grpo/out/run"},
     "it is inside grpo_eval_dir (/data/grpo/out)"),
])
def test_a_folder_owned_for_something_else_is_refused_naming_both(own, values, words):
    (problem,) = _problems(own, **values)
    assert problem.startswith(own[0] + " (") and words in problem, problem
    assert "give %s a folder of its own" % own[0] in problem


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    for folder in (".grpo/jobs", "venvs/stack/bin", "venvs/opencompass/bin", "checkpoints/p/e/global_step_2/actor",
                   "runs/p/e"):
        (ws / folder).mkdir(parents=True)
    (ws / ".grpo" / "deps.json").write_text('{"python": "/data/grpo/venvs/stack/bin/python"}\n')
    (ws / ".grpo" / "train.json").write_text('{"run_dir": "/data/grpo/runs/p/e"}\n')
    (ws / "venvs" / "opencompass" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "venvs" / "stack" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "checkpoints" / "p" / "e" / "global_step_2" / "actor" / "model.pt").write_bytes(b"\x01" * 32)
    (ws / "runs" / "p" / "e" / "run_grpo.sh").write_text("#!/bin/bash\n")
    return ws


@pytest.mark.parametrize("role, extra, words", [
    ("deps_pinning", {"deps_pinning_venv": "{ws}/venvs/opencompass"},
     "deps_pinning_venv ({ws}/venvs/opencompass) names a folder the package keeps for something else: it is the "
     "folder grpo_eval_venv names"),
    ("grpo_train", {"grpo_train_project": "p", "grpo_train_experiment": "e", "grpo_train_checkpoint_dir": "{ws}/.grpo"},
     "grpo_train_checkpoint_dir ({ws}/.grpo) names a folder the package keeps for something else: it is the folder "
     "grpo_common_state_dir names"),
    ("grpo_eval", {"grpo_train_dir": "{ws}/runs/p/e", "grpo_eval_dir": "{ws}/runs/p/e"},
     "grpo_eval_dir ({ws}/runs/p/e) names a folder the package keeps for something else: it is the folder "
     "grpo_train_dir names"),
    ("assets", {"assets_data_dir": "{ws}/.grpo/jobs"},
     "assets_data_dir ({ws}/.grpo/jobs) names a folder the package keeps for something else: it is the folder "
     "grpo_common_jobs_dir names"),
])
def test_the_stage_refuses_it_before_anything_changes(tmp_path, role, extra, words):
    ws = _workspace(tmp_path)
    extra = {k: v.format(ws=ws) for k, v in extra.items()}
    before = tree_snapshot(str(ws))
    done = run_role(tmp_path, role, dict(extra, grpo_workspace=str(ws), grpo_stack_venv=str(ws / "venvs" / "stack")))
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Preflight | Refuse a path setting on a folder the package keeps for something else", msg
    assert words.format(ws=ws) in msg, msg
    assert tree_snapshot(str(ws)) == before


def test_another_stages_folder_is_rendered_with_what_the_user_set(tmp_path):
    """The eval stage does not have the train stage's defaults: grpo_train_dir is its default rendered with the
    project and experiment the user set."""
    ws = _workspace(tmp_path)
    before = tree_snapshot(str(ws))
    done = run_role(tmp_path, "grpo_eval", {"grpo_workspace": str(ws), "grpo_train_project": "p",
                                            "grpo_train_experiment": "e", "grpo_eval_dir": str(ws / "runs" / "p" / "e")})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Preflight | Refuse a path setting on a folder the package keeps for something else", msg
    assert "it is the folder grpo_train_dir names" in msg
    assert tree_snapshot(str(ws)) == before


def test_a_folder_set_empty_is_off_but_verls_tree_is_the_workspaces():
    """deps_pinning_venv empty: no venv (the environment's own Python), so no folder; deps_pinning_verl_path empty:
    verl's tree is <workspace>/verl (workspace.verl_dir), which is still a folder the deps stage owns."""
    paths = owned_folders.resolve(TEXTS, owned_folders.owned(TEXTS, OWNED_LAYOUT),
                                  {"grpo_workspace": "/data/grpo", "grpo_stack_venv": "", "deps_pinning_venv": "",
                                   "deps_pinning_verl_path": ""}, OWNED_LAYOUT)
    assert "deps_pinning_venv" not in paths and "grpo_stack_venv" not in paths
    assert paths["deps_pinning_verl_path"] == "/data/grpo/verl"
    (problem,) = owned_folders.problems(["grpo_eval_venv"], {"grpo_workspace": "/data/grpo", "grpo_stack_venv": "",
                                                             "deps_pinning_verl_path": "",
                                                             "grpo_eval_venv": "/data/grpo/verl"}, TEXTS,
                                        OWNED_LAYOUT)
    assert "it is the folder deps_pinning_verl_path names" in problem
