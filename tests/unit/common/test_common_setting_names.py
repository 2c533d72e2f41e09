"""The shared checks name settings only through what the role layer hands them (issue 45, item 3): the owned
folders' engine takes the settings its layout starts from by field (the owned_folder_problems filter's
OWNED_LAYOUT), and the settings validator takes the renamed settings from the unknown_settings filter's table."""

import common_filters
from grpo_testkit import ROOT

from ascend_grpo.common import owned_folders, settings


def test_the_filter_names_both_settings_and_the_fix():
    values = {"grpo_workspace": "/data/grpo", "grpo_stack_venv": "/data/grpo/venvs/stack",
              "assets_data_dir": "/data/grpo/.grpo"}
    (problem,) = common_filters.owned_folder_problems(values, ["assets_data_dir"], {})
    assert problem.startswith("assets_data_dir (/data/grpo/.grpo) names a folder the package keeps for something "
                              "else: it is the folder grpo_common_state_dir names"), problem
    assert problem.endswith("give assets_data_dir a folder of its own, neither inside nor holding another one")


def test_the_engine_knows_the_layout_only_by_its_fields():
    """Any names will do: the engine reads the roots, the holder and the empty-means-a-folder setting from the
    layout, and names what the layout and the defaults name."""
    layout = {"workspace": "home", "stack_venv": "env", "verl_path": "tree_path"}
    texts = dict(owned_folders.empty_means(layout), cache_dir="{{ home }}/cache", state_dir="{{ home }}/.state")
    assert texts["tree_path"] == "{{ home }}/verl"
    assert owned_folders.owned(texts, layout) == {"home", "env", "tree_path", "cache_dir", "state_dir"}
    assert owned_folders.problems(["cache_dir"], {"home": "/w", "env": "/w/env"}, texts, layout) == []
    (problem,) = owned_folders.problems(["cache_dir"], {"home": "/w", "env": "", "tree_path": "",
                                                        "cache_dir": "/w/verl"}, texts, layout)
    assert "cache_dir (/w/verl) names a folder the package keeps for something else: it is the folder tree_path names" \
        in problem


def test_a_renamed_setting_is_named_from_the_role_layers_table():
    known = common_filters.project_names(ROOT)
    assert known["renamed"] is common_filters.RENAMED_SETTINGS
    (problem,) = settings.unknown_settings(["ray_cluster_head"], known)
    assert problem == ("ray_cluster_head was renamed to grpo_cluster_head (a setting every stage shares): set "
                       "grpo_cluster_head instead")


def test_without_the_table_the_old_name_is_still_refused_as_no_setting():
    known = dict(common_filters.project_names(ROOT), renamed={})
    (problem,) = settings.unknown_settings(["ray_cluster_head"], known)
    assert problem.startswith("ray_cluster_head is not a setting of any stage, so it would be ignored"), problem
