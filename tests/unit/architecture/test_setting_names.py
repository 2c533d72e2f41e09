"""Names a user sets that the package would ignore or obey wrongly (issue 44, item 6): a typo in a setting's prefix
(``grp_train_project``, ``npu_contianer_name``, ``asset_hub_endpoint``) was ignored as a variable of the user's own,
and a name the package sets itself (``ray_cluster_token_auth``, what the cluster preflight found) set in the
inventory passed the unknown-setting check and overrode the finding."""

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from ascend_grpo.common import settings
from grpo_testkit import ROOT, playbook

ANSIBLE_INVENTORY = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")


@pytest.fixture(scope="module")
def known():
    return _project_names()


@pytest.mark.parametrize("typo, meant", [("grp_train_project", "grpo_train_project"),
                                         ("npu_contianer_name", "npu_container_name"),
                                         ("asset_hub_endpoint", "assets_hub_endpoint"),
                                         ("ray_clustr_port", "ray_cluster_port")])
def test_a_name_close_to_a_setting_without_our_prefix_is_refused_naming_it(known, typo, meant):
    assert meant in known["settings"]  # the spec's setting, so the typo is one letter from a real one
    (problem,) = settings.unknown_settings([typo, meant], known)
    assert problem.startswith(typo + " is not a setting of any stage, so it would be ignored")
    assert "did you mean %s?" % meant in problem


def test_a_typo_in_a_prefix_is_refused_naming_the_prefix(known):
    (problem,) = settings.unknown_settings(["npu_contianer_zzz"], known)
    assert "close to npu_container_" in problem and "did you mean npu_container_zzz?" in problem


@pytest.mark.parametrize("name", ["ansible_host", "ansible_user", "ansible_become_password", "inventory_hostname",
                                  "group_names", "groups", "playbook_dir", "http_proxy", "https_proxy", "no_proxy",
                                  "asset_tag", "group_name", "docker_users", "ntp_servers", "timezone", "sim_root",
                                  "drill_train_overrides", "_private_fact", "discovered_interpreter_python",
                                  "module_setup", "gather_subset"])
def test_ansibles_own_and_ordinary_inventory_names_are_not_refused(known, name):
    assert settings.unknown_settings([name], known) == []
    assert settings.user_set_internal([name], known) == []


def _inventory_names(*sources):
    """Every variable name ansible-inventory shows for an inventory (hosts' and groups' variables)."""
    args = [ANSIBLE_INVENTORY, "--list"] + [word for source in sources for word in ("-i", os.path.join(ROOT, source))]
    out = json.loads(subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    names = set()
    for host_vars in out.get("_meta", {}).get("hostvars", {}).values():
        names.update(host_vars)
    for group in out.values():
        names.update((group or {}).get("vars", {}) if isinstance(group, dict) else {})
    return names


@pytest.mark.parametrize("sources", [("inventories/sim",), ("inventories/sim-multi",), ("inventories/cloud910b",),
                                     ("inventories/sim", "molecule/default/inventory"),
                                     ("inventories/sim-multi", "molecule/multinode/inventory")])
def test_the_packages_own_inventories_pass_both_checks(known, sources):
    names = _inventory_names(*sources)
    assert "ansible_connection" in names  # the inventory was read (cloud910b's settings are all commented out)
    assert settings.unknown_settings(names, known) == []
    assert settings.user_set_internal(names, known) == []


def test_the_names_the_molecule_plays_set_are_not_refused(known):
    """What converge, verify and the drills register or set_fact before a stage's own check runs in that play."""
    names = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
                    names.update(value)
                elif key == "register" and isinstance(value, str):
                    names.add(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for path in glob.glob(os.path.join(ROOT, "molecule", "**", "*.yml"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            walk(yaml.safe_load(handle))
    assert len(names) > 10
    assert settings.unknown_settings(names - {n for n in names if n.startswith(settings.PREFIXES)}, known) == []


@pytest.mark.parametrize("name", ["ray_cluster_token_auth", "grpo_common_cluster_enabled", "grpo_train_row",
                                  "grpo_env_ready"])
def test_a_name_the_package_sets_itself_is_refused_when_the_user_sets_it(known, name):
    (problem,) = settings.user_set_internal([name, "grpo_train_project", "sim_root", "ansible_connection"], known)
    assert problem.startswith(name + " is set by the package itself")
    assert "remove it from the inventory or -e" in problem


def test_the_first_play_refuses_a_user_set_finding_before_any_stage(tmp_path):
    """The issue's: a cluster finding set with -e; --tags status stops in the inventory check, before a host is
    reached (the status play would have read npu-smi on it)."""
    done = playbook(os.path.join(ROOT, "site.yml"), "-i", os.path.join(ROOT, "inventories", "sim"),
                    "--tags", "status", "-e", json.dumps({"ray_cluster_token_auth": True}))
    assert done.returncode != 0
    (host, task, msg), = done.failed
    assert (host, task) == ("localhost", "Refuse a name the package sets itself, set in the inventory or with -e")
    assert msg.startswith("ray_cluster_token_auth is set by the package itself")


def _project_names():
    """The project's names as the filter layer reads them (imported here, not at collection: it imports Ansible,
    whose sys.intern patch breaks a later import of torch in the same session)."""
    import common_filters

    return common_filters.project_names(ROOT)
