"""What the roles' tasks tell the modules about their settings (``setting_names``, option -> setting), read from the
task files as Ansible would take them, for the tests that run a module as its role does and for the architecture
test that holds the mappings to the declared settings and to the modules' options."""

import ast
import glob
import os
import re

import yaml

from grpo_testkit import ROOT

ROLES = os.path.join(ROOT, "roles")
PLAYBOOKS = os.path.join(ROOT, "playbooks")
# "{{ assets_setting_names.math_dataset }}": a role's table of mappings, one per module it calls
_ONE_VAR = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}$")


def _module_of(task):
    """The module a task calls (its short name, a collection's prefix taken off) and its arguments, or (None, None)."""
    for key, value in task.items():
        if key in ("name", "when", "register", "vars", "tags", "loop", "block", "rescue", "always", "check_mode",
                   "changed_when", "failed_when", "no_log", "become", "delegate_to", "run_once", "until", "retries",
                   "delay", "environment", "notify", "loop_control", "ignore_errors", "args", "async", "poll",
                   "delegate_facts", "listen", "module_defaults", "throttle", "timeout", "diff", "any_errors_fatal",
                   "connection", "become_user", "vars_files", "import_tasks", "include_tasks", "import_role",
                   "include_role"):
            continue
        return key.rsplit(".", 1)[-1], value if isinstance(value, dict) else {}
    return None, None


def _tasks(items):
    for task in items or []:
        if not isinstance(task, dict):
            continue
        yield task
        for part in ("block", "rescue", "always"):
            yield from _tasks(task.get(part))


def role_vars(role):
    """The role's vars/ and defaults/ (vars winning), as plain YAML."""
    found = {}
    for folder in ("defaults", "vars"):
        for path in sorted(glob.glob(os.path.join(ROLES, role, folder, "*.yml"))):
            found.update(yaml.safe_load(open(path, encoding="utf-8")) or {})
    return found


def calls(module=None):
    """Every task in roles/*/tasks and playbooks/ that calls ``module`` (or any module): (role or None, file, task
    name, module, arguments, the setting_names mapping resolved through the role's vars, or None)."""
    files = sorted(glob.glob(os.path.join(ROLES, "*", "tasks", "*.yml"))) + sorted(
        glob.glob(os.path.join(PLAYBOOKS, "*.yml")))
    for path in files:
        rel = os.path.relpath(path, ROOT)
        role = rel.split(os.sep)[1] if rel.startswith("roles" + os.sep) else None
        data = yaml.safe_load(open(path, encoding="utf-8")) or []
        items = []
        for entry in data if isinstance(data, list) else []:
            if isinstance(entry, dict) and ("hosts" in entry or "import_playbook" in entry):
                for part in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                    items.extend(entry.get(part) or [])
            else:
                items.append(entry)
        for task in _tasks(items):
            name, args = _module_of(task)
            if name is None or (module and name != module):
                continue
            names = args.get("setting_names")
            if isinstance(names, str):
                ref = _ONE_VAR.match(names.strip())
                names = _lookup(role_vars(role), ref.group(1)) if (ref and role) else names
            yield role, rel, task.get("name", ""), name, args, names


def _lookup(found, dotted):
    for part in dotted.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found


def role_setting_names(role, module, task=None):
    """The mapping ``role``'s task calling ``module`` passes (the one named ``task`` when given; all its calls must
    agree otherwise): what a test passes to run the module as the role does."""
    found = [names for r, _, name, _, _, names in calls(module)
             if r == role and (task is None or name == task) and names is not None]
    assert found, "no task of role %s passes setting_names to %s" % (role, module)
    assert all(names == found[0] for names in found), "%s's tasks pass %s different mappings" % (role, module)
    return dict(found[0])


def _fragment_options(name):
    """The options a doc fragment of this package documents (python_plugins/doc_fragments/<name>.py); none for
    another's."""
    path = os.path.join(ROOT, "python_plugins", "doc_fragments", name + ".py")
    if not os.path.isfile(path):
        return set()
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            return set((yaml.safe_load(node.value.value) or {}).get("options") or {})
    return set()


def module_options(module):
    """A module's options as its argument spec declares them (the keys of ``argument_spec=dict(...)`` in main(),
    and the documentation's options, read without importing it)."""
    path = os.path.join(ROOT, "python_plugins", "modules", module + ".py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    options = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            doc = yaml.safe_load(node.value.value)
            options.update((doc.get("options") or {}))
            for fragment in doc.get("extends_documentation_fragment") or []:
                options.update(_fragment_options(fragment))
        if isinstance(node, ast.keyword) and node.arg == "argument_spec" and isinstance(node.value, ast.Call):
            options.update(kw.arg for kw in node.value.keywords if kw.arg)
    return options
