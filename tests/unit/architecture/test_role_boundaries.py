"""Roles that stand alone: a role reads only its own settings and the shared ones (grpo_common's, grpo_*), every
file it uses lives in it (no symlink, no path climbing out of role_path), and its defaults and its argument specs list the same
settings.

Variables are found as Jinja finds them: every template, and every expression of the YAML files (a value holding
{{ }}, and the bare conditions of when/that/failed_when/changed_when/until), parsed with jinja2, so a setting named
in a message's text (advice such as "set npu_container_python") is not a read.
"""

import glob
import os
import re
import subprocess

import jinja2
import jinja2.nodes
import pytest
import yaml
from grpo_testkit import ROOT

# Each stage's prefix; grpo_common_ and the other grpo_* names are the shared layer every role may use.
STAGES = {"npu_container": "npu_container_", "deps_pinning": "deps_pinning_", "verl_compat_patch": "verl_compat_patch_",
          "assets": "assets_", "ray_cluster": "ray_cluster_", "grpo_train": "grpo_train_", "grpo_eval": "grpo_eval_",
          "grpo_bundle": "grpo_bundle_"}
CONDITIONS = {"when", "that", "failed_when", "changed_when", "until"}
# A read of another stage's names that is an interface, with the reason.
ALLOWED = {
    # the cluster stage calls the train stage's cluster_env tasks (include_role, public) so that every node's Ray
    # runs with the environment the run exports, and proves the run's checkpoint folder is shared: it uses what
    # those tasks compose, which is the train stage's by design
    ("ray_cluster", "grpo_train_env_merged"), ("ray_cluster", "grpo_train_env_scripts"),
    ("ray_cluster", "grpo_train_checkpoint_dir"),
    # one host is locked as a cluster is (issue 44): the container stage loads the cluster's table in the container
    # it makes and refuses one host on the host's network, and the train stage refuses to launch where the table is
    # missing, all under the cluster stage's two firewall settings (one switch for every host count)
    ("npu_container", "ray_cluster_firewall"), ("npu_container", "ray_cluster_accept_open_ports_without_auth"),
    ("grpo_train", "ray_cluster_firewall"),
}
_ENV = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])


def _names(source):
    """The variables an expression or template reads or sets, and the hostvars[...].<name> it reaches."""
    out = set()
    for node in _ENV.parse(source).find_all((jinja2.nodes.Name, jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        if isinstance(node, jinja2.nodes.Name):
            out.add(node.name)
        elif isinstance(node, jinja2.nodes.Getattr) and "hostvars" in repr(node.node):
            out.add(node.attr)
        elif isinstance(node, jinja2.nodes.Getitem) and "hostvars" in repr(node.node) \
                and isinstance(node.arg, jinja2.nodes.Const) and isinstance(node.arg.value, str):
            out.add(node.arg.value)
    return out


def _yaml_names(node, key=None):
    """Every name the YAML's expressions use, and every name it defines (a key of vars, set_fact, defaults)."""
    out = set()
    if isinstance(node, dict):
        for k, value in node.items():
            if key in ("vars", "ansible.builtin.set_fact", "set_fact", None, "defaults") and isinstance(k, str) \
                    and re.fullmatch(r"[a-z_][a-z0-9_]*", k):
                out.add(k)
            out |= _yaml_names(value, k)
    elif isinstance(node, list):
        for item in node:
            out |= _yaml_names(item, key)
    elif isinstance(node, str):
        if "{{" in node or "{%" in node:
            out |= _names(node)
        elif key in CONDITIONS:
            out |= _names("{{ %s }}" % node)
        if key == "register":
            out.add(node)
    return out


def _role_files(role):
    for sub in ("defaults", "vars", "tasks", "meta", "handlers", "templates"):
        yield from sorted(p for p in glob.glob(os.path.join(ROOT, "roles", role, sub, "**", "*"), recursive=True)
                          if os.path.isfile(p))


def _names_in(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".yml", ".yaml")) and os.sep + "templates" + os.sep not in path:
        data = yaml.safe_load(text)
        if path.endswith(os.path.join("meta", "argument_specs.yml")):
            # a spec's options are settings the role takes: their names count, their descriptions are text
            return {name for entry in (data["argument_specs"] or {}).values() for name in entry.get("options") or {}}
        if path.endswith(os.path.join("meta", "main.yml")):
            return set()
        return _yaml_names(data, "defaults" if os.sep + "defaults" + os.sep in path else "tasks")
    return _names(text)


ROLES = sorted(os.listdir(os.path.join(ROOT, "roles")))


@pytest.mark.parametrize("role", ROLES)
def test_a_role_reads_no_other_stages_settings(role):
    foreign = []
    for path in _role_files(role):
        for name in sorted(_names_in(path)):
            owner = [stage for stage, prefix in STAGES.items() if name.startswith(prefix)]
            if owner and role not in owner and (role, name) not in ALLOWED:
                foreign.append("%s: %s (the %s stage's)" % (os.path.relpath(path, ROOT), name, owner[0]))
    assert foreign == [], "use a grpo_common setting, or the stage's record: %s" % foreign


def test_the_scan_finds_a_read_of_another_stages_setting():
    # the scanner itself, on the kinds of reads the roles had (a default, a condition, hostvars)
    assert "ray_cluster_head" in _names("{{ x | cluster_plan(hostvars, ray_cluster_head | default('')) }}")
    assert "npu_container_mode" in _yaml_names({"when": "npu_container_mode == 'docker'"})
    assert "npu_container_name" in _names("{{ hostvars[grpo_npu_host].npu_container_name }}")
    assert "npu_container_python" not in _names("{{ 'set npu_container_python to one' ~ x }}")


def test_no_symlink_under_roles():
    links = [os.path.relpath(os.path.join(folder, name), ROOT)
             for folder, dirs, files in os.walk(os.path.join(ROOT, "roles")) for name in dirs + files
             if os.path.islink(os.path.join(folder, name))]
    assert links == []


def test_no_role_reaches_out_through_role_path():
    found = subprocess.run(["git", "grep", "-n", "-E", r"role_path[^\n]*\.\./", "--", "roles", "playbooks",
                            "site.yml"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    assert found == ""


def _defaults(role):
    path = os.path.join(ROOT, "roles", role, "defaults", "main.yml")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _options(role):
    path = os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")
    with open(path, encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"] or {}
    out = {}
    for entry in specs.values():
        for name, option in (entry.get("options") or {}).items():
            out.setdefault(name, option)
    return out


@pytest.mark.parametrize("role", ROLES)
def test_every_default_has_a_spec_and_every_setting_a_default(role):
    defaults, options = _defaults(role), _options(role)
    assert sorted(set(defaults) - set(options)) == [], "a default without an option in meta/argument_specs.yml"
    # an option without a default is one the role is handed: required, or set by an earlier stage or the play,
    # which its description says
    handed = [name for name, option in options.items() if name not in defaults and not option.get("required")
              and not re.search(r"\b[Ss]et by\b", " ".join(option.get("description") or []
                                                          if isinstance(option.get("description"), list)
                                                          else [option.get("description") or ""]))]
    assert handed == [], "give each a default in defaults/main.yml, or mark it required / say what sets it"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_keep_values_and_at_most_a_one_line_pointer(role):
    # issue 31: a setting is described once, in meta/argument_specs.yml (ansible-doc and the docs' tables show it);
    # the defaults keep the values, with at most a one-line pointer or group heading between them
    path = os.path.join(ROOT, "roles", role, "defaults", "main.yml")
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    blocks, run = [], 0
    for number, line in enumerate(lines, 1):
        run = run + 1 if line.lstrip().startswith("#") else 0
        if run == 2:
            blocks.append(number - 1)
    assert blocks == [], ("comment blocks of several lines at lines %s of %s: a setting's description belongs in "
                          "meta/argument_specs.yml" % (blocks, os.path.relpath(path, ROOT)))
