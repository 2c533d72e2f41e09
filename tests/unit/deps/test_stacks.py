"""grpo_stack: one setting names the whole stack (files/stacks), each stage's profile setting follows it unless set.

The expected profiles are the settings each place used before stacks existed (the roles' defaults, the sim
inventory's four settings), transcribed here, so the stacks are checked against them, not against themselves.
"""

import json
import os
import sys

import pytest
import yaml
from grpo_testkit import ROOT, playbook

from ascend_grpo.deps import stack_files

STACKS_DIR = os.path.join(ROOT, "files", "stacks")
ROLES_DIR = os.path.join(ROOT, "roles")
SETTINGS = {"deps": ("deps_pinning", "deps_pinning_profile"),
            "patch": ("verl_compat_patch", "verl_compat_patch_profiles"),
            "train": ("grpo_train", "grpo_train_profiles"), "eval": ("grpo_eval", "grpo_eval_profile")}


def load(name):
    with open(os.path.join(STACKS_DIR, name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_every_shipped_stack_is_complete_and_names_shipped_profiles():
    assert stack_files.known(STACKS_DIR) == ["cpu-sim", "vllm0.13.0", "vllm0.9.1"]
    for name in stack_files.known(STACKS_DIR):
        data = stack_files.validate(load(name), name)
        assert stack_files.missing_profiles(data, ROLES_DIR) == [], name


def test_the_stacks_are_what_each_place_chose_before():
    # the roles' former defaults
    assert {k: load("vllm0.13.0")[k] for k in stack_files.STAGES} == {
        "deps": "vllm0.13.0", "patch": ["vllm0.13.0"], "train": ["npu-single"], "eval": "opencompass-npu"}
    # the simulated host's former four settings
    assert {k: load("cpu-sim")[k] for k in stack_files.STAGES} == {
        "deps": "vllm0.13.0-cpu", "patch": ["vllm0.13.0", "cpu-overlay"], "train": ["npu-single", "cpu-overlay"],
        "eval": "opencompass-cpu"}
    overlay = os.path.join(ROOT, "inventories", "sim", "group_vars", "all", "10-sim-overlay.yml")
    with open(overlay, encoding="utf-8") as handle:
        sim = yaml.safe_load(handle)
    assert sim["grpo_stack"] == "cpu-sim"
    assert not [setting for _role, setting in SETTINGS.values() if setting in sim]


def test_bad_stacks_are_refused_naming_the_setting(tmp_path):
    """The engine names the stack as {stack}; the filter (grpo_stack_profile) names grpo_stack."""
    with pytest.raises(stack_files.StackError,
                       match=r"\{stack\}: no stack vllm0\.12 .*use one of cpu-sim, vllm0\.13\.0, "
                             r"vllm0\.9\.1, or the path of a stack file of your own"):
        stack_files.locate("vllm0.12", STACKS_DIR)
    with pytest.raises(stack_files.StackError, match=r"\{stack\} must name a stack"):
        stack_files.locate("", STACKS_DIR)
    with pytest.raises(stack_files.StackError, match=r"\{stack\} mine: missing train, eval"):
        stack_files.validate({"deps": "vllm0.13.0", "patch": ["vllm0.13.0"]}, "mine")
    with pytest.raises(stack_files.StackError, match=r"unknown key\(s\) evaluation"):
        stack_files.validate(dict(load("vllm0.13.0"), evaluation="x"), "mine")
    with pytest.raises(stack_files.StackError,
                       match=r"\{stack\} mine: patch must be a non-empty list of profile names"):
        stack_files.validate(dict(load("vllm0.13.0"), patch="vllm0.13.0"), "mine")
    own = tmp_path / "mine.yml"
    own.write_text(yaml.safe_dump(dict(load("vllm0.13.0"), deps="vllm0.9.1")))
    assert stack_files.locate(str(own), STACKS_DIR) == str(own)
    assert stack_files.missing_profiles(dict(load("vllm0.13.0"), train=["npu-single", "npu-8"]), ROLES_DIR) == [
        ("train", "npu-8")]


def resolved(tmp_path, extra):
    """Each stage's profile setting as Ansible resolves the roles' own defaults (and grpo_common's) with ``extra`` vars: (the run,
    {stage: value} or None when the run failed)."""
    book, out = tmp_path / "probe.yml", tmp_path / "resolved.json"
    if out.exists():
        out.unlink()
    values = "{%s}" % ", ".join("'%s': %s" % (stage, setting) for stage, (_role, setting) in SETTINGS.items())
    book.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "connection": "local",
        # grpo_common first: every stage depends on it, and it holds the shared grpo_stack
        "tasks": [{"ansible.builtin.include_vars": os.path.join(ROLES_DIR, role, "defaults", "main.yml")}
                  for role in ["grpo_common"] + [role for role, _setting in SETTINGS.values()]]
        + [{"ansible.builtin.copy": {"content": "{{ %s | to_json }}" % values, "dest": str(out), "mode": "0644"}}],
    }]))
    extra = dict(extra, ansible_python_interpreter=sys.executable)
    result = playbook(str(book), "-i", "localhost,", "-e", json.dumps(extra))
    return result, json.loads(out.read_text()) if out.exists() else None


def test_the_roles_follow_grpo_stack_and_a_stage_setting_overrides_it(tmp_path):
    result, got = resolved(tmp_path, {"grpo_workspace": "/ws", "grpo_stack": "cpu-sim",
                                      "grpo_eval_profile": "opencompass-npu"})
    assert got == {"deps": "vllm0.13.0-cpu", "patch": ["vllm0.13.0", "cpu-overlay"],
                   "train": ["npu-single", "cpu-overlay"], "eval": "opencompass-npu"}, result.stdout[-2000:]
    result, got = resolved(tmp_path, {"grpo_workspace": "/ws"})
    assert got == {"deps": "vllm0.13.0", "patch": ["vllm0.13.0"], "train": ["npu-single"],
                   "eval": "opencompass-npu"}, result.stdout[-2000:]
    result, got = resolved(tmp_path, {"grpo_workspace": "/ws", "grpo_stack": "vllm0.12"})
    assert result.returncode != 0 and got is None
    assert "grpo_stack: no stack vllm0.12" in " ".join(result.stdout.split())
