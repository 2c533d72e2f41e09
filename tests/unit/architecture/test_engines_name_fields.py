"""Engines name their inputs, never the settings a role fills them from (issue 45, item 3): a message refers to an
option as ``{field}`` and the module renders it with the mapping its role passes (``setting_names``). So an engine
does not know the Ansible tree's words, and a module two stages share names each one's setting.

Held here: no string of an engine (docstrings aside: they may explain which setting feeds what) holds a setting
declared in any role's meta/argument_specs.yml; every mapping a task passes goes from the module's options to
declared settings; a task filling an option from exactly one setting maps it to that setting; a module that renders
fields documents ``setting_names`` through its doc fragment."""

import ast
import glob
import os
import re

import pytest
import yaml
from ascend_grpo.common import errors
from grpo_testkit import ROOT
from grpo_testkit import setting_names as task_names

ENGINES = sorted(glob.glob(os.path.join(ROOT, "python_plugins", "module_utils", "ascend_grpo", "**", "*.py"),
                      recursive=True))
MODULES = sorted(glob.glob(os.path.join(ROOT, "python_plugins", "modules", "*.py")))


def declared_settings():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        for entry in (yaml.safe_load(open(path, encoding="utf-8")).get("argument_specs") or {}).values():
            names.update(entry.get("options") or {})
    return names


SETTINGS = declared_settings()
_SETTING = re.compile(r"\b(%s)\b" % "|".join(sorted(map(re.escape, SETTINGS), key=len, reverse=True)))


def settings_in_code(text):
    """(line, setting) for each declared setting in a string of ``text`` (Python) that is not a docstring."""
    tree = ast.parse(text)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(node.lineno, name) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            for name in _SETTING.findall(node.value)]


def test_the_scan_finds_a_setting_in_a_message_and_not_in_a_docstring():
    code = ('"""Fed by assets_data_repo."""\n'
            'def f():\n    """assets_data_dir is read here."""\n'
            '    raise ValueError("set assets_data_repo to a repository")\n'
            'FIX = {"dest": "set " + "{dest} or npu_container_name"}\n')
    assert sorted(settings_in_code(code)) == [(4, "assets_data_repo"), (5, "npu_container_name")]


@pytest.mark.parametrize("path", ENGINES, ids=lambda p: os.path.relpath(p, os.path.dirname(ENGINES[0])))
def test_an_engine_names_its_fields_not_the_roles_settings(path):
    found = settings_in_code(open(path, encoding="utf-8").read())
    assert found == [], "%s names settings (line, setting): %s; write the option as {field} and map it in the " \
                        "role's task (setting_names)" % (os.path.relpath(path, ROOT), found)


def test_fields_are_named_by_the_roles_mapping_and_other_braces_are_left_alone():
    message = "set {repo} to a repository; {dest} is a folder; the log said {weird} and {{ jinja }}"
    assert errors.name_fields(message, {"repo": "assets_data_repo"}, {"repo", "dest"}) == (
        "set assets_data_repo to a repository; dest is a folder; the log said {weird} and {{ jinja }}")
    nested = {"problems": ["{repo} is missing", 3], "why": {"a": "{dest}"}}
    assert errors.name_fields(nested, {"dest": "assets_data_dir"}, {"repo", "dest"}) == {
        "problems": ["repo is missing", 3], "why": {"a": "assets_data_dir"}}


def test_a_failure_carries_its_field_and_renders_its_result():
    err = errors.FieldError("repo", "{repo} does not exist", {"found": ["{repo}"]})
    assert errors.failure(err, {"repo": "assets_data_repo"}, {"repo"}) == {
        "msg": "assets_data_repo does not exist", "found": ["assets_data_repo"], "field": "repo"}
    assert isinstance(err, errors.StageFailure)


CALLS = [call for call in task_names.calls() if call[5] is not None]


@pytest.mark.parametrize("call", CALLS, ids=lambda c: "%s:%s" % (c[1], c[2]))
def test_a_tasks_mapping_goes_from_the_modules_options_to_declared_settings(call):
    role, rel, task, module, args, names = call
    assert isinstance(names, dict), "%s, task %r: setting_names is not a mapping (%r)" % (rel, task, names)
    options = task_names.module_options(module)
    assert "setting_names" in options, "%s does not take setting_names" % module
    assert set(names) <= options, "%s, task %r maps %s, not options of %s" % (
        rel, task, sorted(set(names) - options), module)
    unknown = sorted(value for value in names.values() if str(value).split(".")[0] not in SETTINGS)
    assert not unknown, "%s, task %r maps to %s, not declared in any meta/argument_specs.yml" % (rel, task, unknown)
    for option, value in args.items():
        if option == "setting_names" or not isinstance(value, str):
            continue
        used = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", value)) & SETTINGS if value.strip().startswith(
            "{{") and value.strip().endswith("}}") and value.count("{{") == 1 else set()
        if len(used) == 1:
            (setting,) = used
            assert str(names.get(option, "")).split(".")[0] == setting, (
                "%s, task %r fills %s from %s but setting_names does not map it there" % (rel, task, option, setting))


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_a_module_that_renders_fields_documents_the_mapping(path):
    text = open(path, encoding="utf-8").read()
    if not any(call in text for call in ("module_failure(", "module_text(", "name_fields(")):
        return
    module = os.path.basename(path)[:-3]
    assert "setting_names" in task_names.module_options(module), (
        "%s renders {field}s: give it the setting_names option (extends_documentation_fragment: grpo_setting_names "
        "and setting_names=dict(type='dict', default={}))" % module)
