"""Filters every stage shares: the engines' sources, secrets, the rerun command, the settings' checks, the owned
folders, the time limits of slow steps.

Filter: the source of the package's engines (python_plugins/module_utils/ascend_grpo), for a stage that runs one
in the training environment as a detached job (``python -m ascend_grpo.<stage>.<engine>``) rather than as a module.

A role then writes the files it needs from this filter's answer, never from a path outside the role; the engine's
own imports within the package come with it, so the copy cannot miss one.

Filters: the values a support bundle takes out, and whether a value holds a credential (a file holding it is
0600), over the plain-Python secrets engine; a proxy's environment variables for a job (ascend_grpo.common.proxy).

Filters: the commands the package prints for a user to run again, with the inventory the user ran with (the one
place that builds them is the engine ascend_grpo.common.rerun).

Filter: the problems of a stage's settings, checked before the stage acts (names that become folders,
environment variable names, whole numbers), over the plain-Python engine.

Filter: the path settings that name a folder the package keeps for something else (another stage's venv, the
state folder, the run's folder), over the plain-Python engine ascend_grpo.common.owned_folders.

Filters: whether a slow step run with async and poll ran out of time, and the refusal naming the setting to raise,
over the plain-Python engine ascend_grpo.common.time_limits.
"""

import ast
import os

from ansible.errors import AnsibleFilterError

from ascend_grpo.common import errors
from ascend_grpo.common import owned_folders
from ascend_grpo.common import proxy
from ascend_grpo.common import rerun
from ascend_grpo.common import secrets
from ascend_grpo.common import settings
from ascend_grpo.common import time_limits

PACKAGE = "ascend_grpo"
_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils", PACKAGE)


def _package_imports(source, name):
    """The package's modules (dotted below the package: ``common.workspace``) that the module ``name`` imports
    (``from . import x``, ``from ..common import x``, ``from .x import y``, ``from ascend_grpo.common import x``,
    ``import ascend_grpo.common.x``)."""
    here = name.split(".")[:-1]  # the sub-package the module sits in
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                base = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                found.add(".".join(base + [alias.name]))  # a module of the package, or a name of one (below)
            if base:
                found.add(".".join(base))
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".", 1)[1] for alias in node.names if alias.name.startswith(PACKAGE + "."))
    return found


def engine_sources(engines, dest, package_dir=_PACKAGE_DIR):
    """``{{ ['assets.weights'] | engine_sources(lib_dir) }}``: ``[{path, content, mode}]`` for
    ``<dest>/ascend_grpo/``: the package's ``__init__.py`` files on the way, each named engine (dotted below the
    package) and every module of the package they import, as ``grpo_files`` takes them."""
    wanted, todo, out = set(), list(engines), {}
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        parts = name.split(".")
        path = os.path.join(package_dir, *parts) + ".py"
        if not os.path.isfile(path):
            if name in engines:
                raise AnsibleFilterError("engine_sources: %s has no module %s" % (PACKAGE, name))
            continue  # a name imported from a module, or a sub-package (its __init__ comes below)
        with open(path, encoding="utf-8") as handle:
            out[name] = handle.read()
        wanted.add(name)
        todo.extend(sorted(_package_imports(out[name], name) - wanted))
    for name in list(out):
        parts = name.split(".")[:-1]
        for depth in range(len(parts) + 1):
            init = ".".join(parts[:depth] + ["__init__"])
            if init not in out:
                with open(os.path.join(package_dir, *init.split(".")) + ".py", encoding="utf-8") as handle:
                    out[init] = handle.read()
    return [{"path": "%s/%s/%s.py" % (dest.rstrip("/"), PACKAGE, name.replace(".", "/")), "content": out[name],
             "mode": "0644"} for name in sorted(out)]


def secret_env_values(envs, named=(), settings=()):
    """``{{ [grpo_train_env, grpo_eval_env, npu_container_env] | secret_env_values(grpo_bundle_secret_env,
    [assets_hub_token, grpo_train_wandb_api_key]) }}`` -> every value of a variable whose name says it is secret
    (TOKEN, KEY, SECRET, PASS, PAT, AUTH, ...) or that ``named`` lists, and the secret settings' values given."""
    return secrets.secret_values([e for e in (envs or []) if isinstance(e, dict)], named or [], settings or [])


def has_credentials(value):
    """``{{ url | has_credentials }}`` -> whether ``value`` (a URL, or lists and mappings of them) holds a
    password, a token as a URL's user, or a signature parameter."""
    return secrets.has_credentials(value)


def proxy_env(value, setting="grpo_proxy"):
    """``{{ grpo_proxy | proxy_env }}`` -> the environment variables that hand the proxy to a job's pip, git and
    hub downloads (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their lower-case forms), ``{}`` for none; for a job's
    ``secret_env`` (a proxy URL may hold a password). A proxy that cannot be used fails naming ``setting``."""
    try:
        return proxy.proxy_env(value)
    except proxy.ProxyError as err:
        raise AnsibleFilterError(errors.name_fields(err.msg, {"proxy": setting}, {"proxy"})) from err


# the project: the folder holding site.yml (python_plugins/filter_plugins/ is two levels below it)
_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def grpo_inventory_args(sources):
    """``{{ ansible_inventory_sources | grpo_inventory_args }}``: the ``-i`` words of the inventory the user ran
    with (paths inside the project relative to it, quoted), for a module that prints a command (its ``inventory``)."""
    return rerun.inventory_args(sources, _PROJECT)


def grpo_rerun_command(tags, sources, *extra):
    """``{{ 'deps' | grpo_rerun_command(ansible_inventory_sources) }}``: ``ansible-playbook site.yml -i ... --tags
    deps``; ``extra``: more arguments (``'-e', 'grpo_eval_step=140'``)."""
    return rerun.command(tags, rerun.inventory_args(sources, _PROJECT), extra)


def setting_problems(checks):
    """``{{ [['name', 'grpo_train_experiment', grpo_train_experiment], ['count', 'x', x, 1]] | setting_problems }}``:
    one line per problem, naming the setting and the fix; [] when all hold."""
    return settings.problems(checks)


def settings_problems(specs, values):
    """``{{ spec | settings_problems(values) }}``: the problems of ``values`` ({setting: value}) under the checks the
    roles' argument specs declare (each option's ``Check:`` sentence; ``spec`` is one file's content or a list of
    them), one line each naming the setting and the fix; [] when all hold. The one validator the preflights and
    site.yml's first play call."""
    return [problem["message"] for problem in settings.check_settings(specs, values)]


def declared_settings_pattern(specs):
    """``{{ query('ansible.builtin.varnames', spec | declared_settings_pattern) }}``: a pattern matching exactly the
    settings a check of ``specs`` reads, so a preflight hands the validator the ones that are defined."""
    import re

    return "^(%s)$" % "|".join(re.escape(name) for name in settings.checked_names(specs))


def user_settings(hostvars_of_host, specs):
    """``{{ hostvars[inventory_hostname] | user_settings(specs) }}``: {setting: value} of the settings ``specs``
    declare a check for that the inventory or -e set (a role's default is not among a host's variables). A value
    that refers to a variable not defined yet (another stage's default, a fact a stage sets) is left to its stage's
    own check."""
    from jinja2 import Undefined

    out = {}
    for name in settings.checked_names(specs):
        if name not in hostvars_of_host:
            continue
        try:
            value = hostvars_of_host[name]
        except Exception:  # noqa: BLE001 - Ansible's error for an undefined variable inside the value
            continue
        if not isinstance(value, Undefined):
            out[name] = value
    return out


def shell_exports(mapping):
    """``{{ env | shell_exports }}``: ``export KEY=value`` lines, values quoted, a key that is no variable name
    refused."""
    from ansible.errors import AnsibleFilterError

    try:
        return settings.shell_exports(mapping)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def shell_word(value):
    """``{{ value | shell_word }}``: one quoted shell word (as quote), a NUL byte refused."""
    from ansible.errors import AnsibleFilterError

    try:
        return settings.shell_word(value)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def shell_comment(text):
    """``{{ value | shell_comment }}``: a value safe on a comment line (no newline can end the comment)."""
    return settings.shell_comment(text)


def docker_network_problems(info, setting, name):
    """``{{ _seen | docker_network_problems('npu_container_network', npu_container_network) }}``: [] when the network
    a container joins exists (or is one every engine has), else one problem naming the setting and the fix."""
    problem = settings.docker_network_problem(setting, name, info)
    return [problem] if problem else []


_KNOWN = {}
# Settings that were replaced by another (one setting for one thing): the old name is refused naming the new one and
# why, rather than silently ignored (kubespray's removed-variable check). Old name -> (new name, why).
RENAMED_SETTINGS = {
    "ray_cluster_head": ("grpo_cluster_head", "a setting every stage shares"),
    "ray_cluster_head_node": ("grpo_cluster_head_node", "a setting every stage shares"),
    # the doctor now reads each card's free HBM with the npu-smi the container stage checked and published
    "grpo_train_npu_smi": ("npu_container_npu_smi", "one npu-smi for every stage: the container stage checks it "
                           "and hands it on to the doctor"),
}


def _yaml_files(pattern, root=_PROJECT):
    """The project's YAML files matching ``pattern`` (below ``root``), parsed, in name order. libyaml's parser when
    PyYAML has it: every stage's first task reads about 80 of them, in its own worker."""
    import glob

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for path in sorted(glob.glob(os.path.join(root, pattern))):
        with open(path, encoding="utf-8") as handle:
            out.append(yaml.load(handle, Loader=loader))  # noqa: S506  # a safe loader, C or Python
    return out


def project_names(root=_PROJECT):
    """settings.project_names over the project's own files: the roles' argument specs and defaults, their task
    files, the playbooks and site.yml (the engine takes them as data; where they lie is this layer's to know), and
    the settings that were renamed (``renamed``: :data:`RENAMED_SETTINGS`)."""

    def load(pattern):
        return _yaml_files(pattern, root)

    known = settings.project_names(load("roles/*/meta/argument_specs.yml"), load("roles/*/defaults/main.yml"),
                                   load("roles/*/tasks/*.yml") + load("playbooks/*.yml") + load("site.yml"))
    return dict(known, renamed=RENAMED_SETTINGS)


def unknown_settings(names):
    """``{{ hostvars[inventory_hostname].keys() | unknown_settings }}``: a problem for each variable set with one of
    our prefixes that no stage reads (a misspelt setting was silently ignored), with the closest setting."""
    if not _KNOWN:
        _KNOWN.update(project_names())
    return settings.unknown_settings(list(names), _KNOWN)


def user_set_internal(names):
    """``{{ names | user_set_internal }}``: a problem for each name the package sets itself (a stage's fact, a
    derived option) among ``names``, the variables the inventory and -e set, before any task set one."""
    unknown_settings([])  # loads _KNOWN
    return settings.user_set_internal(list(names), _KNOWN)


_TEXTS = {}
# The settings the owned folders' layout starts from, by the engine's fields (owned_folders.ROOTS, HOLDERS,
# EMPTY_MEANS): the workspace, the stack's venv, and verl's tree (empty: <workspace>/verl).
OWNED_LAYOUT = {"workspace": "grpo_workspace", "stack_venv": "grpo_stack_venv", "verl_path": "deps_pinning_verl_path"}


def owned_folder_problems(values, own, user=None):
    """``{{ {'grpo_workspace': grpo_workspace, 'deps_pinning_venv': deps_pinning_venv, ...}
    | owned_folder_problems(['deps_pinning_venv'], hostvars[inventory_hostname]) }}``: one problem for each of the
    stage's own settings (``own``) that names, holds or sits inside a folder another setting owns, naming both.
    ``values``: the settings the stage has; ``user``: the host's variables, for other stages' settings the user set
    (the rest are their defaults)."""
    if not _TEXTS:
        _TEXTS.update(owned_folders.defaults(_yaml_files("roles/*/defaults/main.yml"), OWNED_LAYOUT))
    values = dict(values)
    # every setting a default may name (the project and experiment in the run's folder), as the user set it
    for name in set(_TEXTS) - set(values):
        try:
            if user is not None and name in user:
                values[name] = user[name]
        except Exception:  # pylint: disable=broad-except  # a value that cannot be rendered here: its default
            continue
    return owned_folders.problems(list(own), values, _TEXTS, OWNED_LAYOUT)


# With an offline bundle (grpo_offline_bundle) the stages' defaults point into it (the container's read-only mount):
# the settings each part needs, and the value each must have (the manifest's facts filled in).
BUNDLE_MOUNT = "/grpo-bundle"
BUNDLE_SETTINGS = {
    "wheels": {"deps_pinning_wheelhouse": "{mount}/wheels", "grpo_eval_site.wheelhouse": "{mount}/wheels"},
    "verl": {"deps_pinning_verl_source": "tarball",
             "deps_pinning_verl_tarball": "{mount}/verl/verl-{verl_commit}.tar.gz"},
    "model": {"assets_model_source": "local", "assets_model_local_dir": "{mount}/model"},
    "data": {"assets_data_source": "local", "assets_data_local_dir": "{mount}/data"},
    "sample": {"assets_chat_template_sample_file": "{mount}/{sample}"},
}


def bundle_setting_problems(values, parts, bundle, meta=None):
    """One sentence per setting of ``values`` (setting -> value as the stage reads it; the stage passes only its
    own) that takes a part of ``parts`` of the offline bundle from elsewhere than the bundle (the hub, GitHub, the
    index, another folder), naming it and the fix. ``meta``: the manifest's facts (verl_commit, sample)."""
    meta = dict(meta or {})
    facts = {"mount": BUNDLE_MOUNT, "verl_commit": meta.get("verl_commit", ""), "sample": meta.get("sample", "")}
    problems = []
    for part in parts:
        for setting, pattern in sorted(BUNDLE_SETTINGS.get(part, {}).items()):
            if setting not in values:
                continue
            want, got = pattern.format(**facts), values[setting]
            if str(got if got is not None else "").strip() != want:
                problems.append(
                    "%s is %r, but grpo_offline_bundle (%s) gives the stages their %s: with a bundle it must be %r "
                    "(its default then). Remove %s from the inventory and -e, or unset grpo_offline_bundle to take "
                    "the %s from there instead" % (setting, got, bundle, part, want, setting, part))
    return problems


def timed_out(result):
    """``failed_when: _r is failed and not _r | timed_out``: whether a step run with ``async`` and ``poll`` ran out
    of time (its job killed at the limit, or its polls counted out), not failed of its own."""
    return time_limits.timed_out(result)


def time_limit_message(result, what, setting, minutes, host, found="", then=""):
    """``{{ _r | time_limit_message('Pulling image x', 'npu_container_pull_minutes', npu_container_pull_minutes,
    inventory_hostname) }}``: the refusal of a step that ran out of time, naming the setting to raise (``found``,
    ``then``: a sentence each, what was found after it and what else to do); "" when ``result`` is no time-out."""
    return time_limits.message_if_timed_out(result, what, setting, minutes, host, found, then)


class FilterModule:
    """Filters every stage shares"""

    def filters(self):
        return {
            "engine_sources": engine_sources,
            "secret_env_values": secret_env_values,
            "has_credentials": has_credentials,
            "proxy_env": proxy_env,
            "grpo_inventory_args": grpo_inventory_args,
            "grpo_rerun_command": grpo_rerun_command,
            "setting_problems": setting_problems,
            "settings_problems": settings_problems,
            "declared_settings_pattern": declared_settings_pattern,
            "user_settings": user_settings,
            "shell_exports": shell_exports,
            "shell_comment": shell_comment,
            "shell_word": shell_word,
            "docker_network_problems": docker_network_problems,
            "unknown_settings": unknown_settings,
            "user_set_internal": user_set_internal,
            "owned_folder_problems": owned_folder_problems,
            "bundle_setting_problems": bundle_setting_problems,
            "timed_out": timed_out,
            "time_limit_message": time_limit_message,
        }
