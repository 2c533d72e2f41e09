"""Generated from the roles' argument specs: every setting that holds text (a string, a list of strings or a mapping)
declares its check in its one declaration (the last sentence of its description in meta/argument_specs.yml,
``Check: KIND ...``), its stage's first preflight task runs the one validator over its role's spec, and the check
refuses hostile text by name.

The settings come from each role's meta/argument_specs.yml (those with ``choices`` are held to them by Ansible's
own validation of the spec); the checks from the same options' ``Check:`` sentences (settings.declared_checks). A
setting added to a spec without a check fails here. Each check then gets the hostile values of test_hostile_values
(control characters, shell metacharacters, quotes, '..', very long and non-ASCII text): it refuses the value naming
the setting, or the value is one that kind may hold. Only free text (a path, a file, a line of text, a secret) may
hold spaces, quotes or metacharacters, and those reach a script only as one quoted word (test_hostile_values renders
them); no kind lets a control character through.
"""

import glob
import os
import re

import pytest
import yaml
from grpo_testkit import ROOT
from grpo_testkit.hostile import HOSTILE, MARK

from ascend_grpo.common import settings

TEXT_TYPES = ("str", "path", "raw")
# may hold spaces and quotes (a path, a mount's paths, free text), never a control character
FREE = {"path", "file", "text", "secret", "source", "profile", "mounts"}
MAPPINGS = {"env", "kwargs", "resources", "mapping", "mounts"}


def _specs():
    """{role: the content of its meta/argument_specs.yml}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        with open(path, encoding="utf-8") as handle:
            out[path.split(os.sep)[-3]] = yaml.safe_load(handle)
    return out


SPECS = _specs()


def _text_settings():
    """{role: {setting: option spec}} for every option of every role that holds text."""
    out = {}
    for role, spec in SPECS.items():
        for entry in (spec["argument_specs"] or {}).values():
            for name, option in (entry.get("options") or {}).items():
                kind, elements = option.get("type", "str"), option.get("elements", "str")
                if option.get("choices"):
                    continue
                if kind in TEXT_TYPES or kind == "dict" or (kind == "list" and elements in TEXT_TYPES):
                    out.setdefault(role, {})[name] = option
    return out


def _checks():
    """{role: {setting: kind}} from the checks the role's spec declares; a mapping checked field by field gives
    one ``setting.field`` each."""
    out = {}
    for role, spec in SPECS.items():
        for setting, check in settings.declared_checks(spec).items():
            for name, kind in ({"%s.%s" % (setting, key): kind for key, kind in check["fields"].items()}
                               if check["kind"] == "fields" else {setting: check["kind"]}).items():
                out.setdefault(role, {})[name] = kind
    return out


def _all_options():
    """{role: {every option of its specs}}."""
    return {role: set(settings.spec_options(spec)) for role, spec in SPECS.items()}


SETTINGS, CHECKS, ALL_OPTIONS = _text_settings(), _checks(), _all_options()
PAIRS = sorted((role, name, kind) for role, names in SETTINGS.items() for setting in names
               for name, kind in ({n: k for n, k in CHECKS.get(role, {}).items() if n.startswith(setting + ".")}
                                  or {setting: CHECKS.get(role, {}).get(setting)}).items())


def test_the_specs_hold_the_text_settings_we_expect():
    # a floor, so that a broken reading of the specs cannot pass the test below with nothing to check
    assert len(PAIRS) >= 100, len(PAIRS)
    assert {"grpo_train_dir", "deps_pinning_index_url", "assets_hub_endpoint", "npu_container_extra_volumes",
            "ray_cluster_hccl_env", "verl_compat_patch_verl_dir"} <= {name for _role, name, _kind in PAIRS}


def test_every_text_setting_is_checked_by_its_own_stage():
    unchecked = ["%s: %s" % (role, name) for role, name, kind in PAIRS if kind is None]
    assert unchecked == [], "end its description in its role's meta/argument_specs.yml with a Check: sentence " \
        "(docs/architecture.md, Settings): %s" % unchecked


def test_every_check_names_a_known_kind_and_a_setting_of_its_role():
    for role, checks in CHECKS.items():
        for setting, kind in checks.items():
            assert kind.rstrip("?").replace("[]", "") in settings.KINDS + ("urls",), (role, setting, kind)
            assert setting.split(".")[0] in ALL_OPTIONS.get(role, ()), (role, setting)
            unless = settings.declared_checks(SPECS[role])[setting.split(".")[0]].get("unless")
            assert unless is None or unless in ALL_OPTIONS[role], (role, setting, unless)


def _tasks(node):
    """Every task (a mapping with a name) of a parsed task file, blocks included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if "name" in node:
            yield node
        for key in ("block", "rescue", "always"):
            yield from _tasks(node.get(key) or [])


def _validator_tasks(role):
    """The tasks of ``role`` that run the one validator over the role's own spec."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", role, "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            for task in _tasks(yaml.safe_load(handle) or []):
                templates = " ".join(str(v) for v in (task.get("vars") or {}).values())
                if "settings_problems" in templates and "role_path ~ '/meta/argument_specs.yml'" in templates:
                    out.append((os.path.basename(path), task["name"]))
    return out


def test_every_stage_runs_the_validator_over_its_own_spec_before_it_acts():
    for role in CHECKS:
        found = _validator_tasks(role)
        assert found, "%s declares checks but no task of it runs settings_problems over its spec" % role
        firsts = ("Preflight | Check", "Common | Check", "Bundle | Check")
        assert any(name.startswith(firsts) for _file, name in found), found


def test_no_task_keeps_a_second_list_of_the_settings_checks():
    # the hand lists fed to setting_problems are gone; what is left checks across settings (the container's
    # built-in mounts and every mount's container path), which no one option can declare
    users = []
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            if re.search(r"\|\s*setting_problems\b", handle.read()):
                users.append(os.path.relpath(path, ROOT))
    assert users == ["roles/npu_container/tasks/settings.yml"], users


def _first_field(spec, name):
    """The first field a ``fields`` check names in the setting's Check sentence (grpo_eval_site: index_url)."""
    for entry in spec["argument_specs"].values():
        option = (entry.get("options") or {}).get(name)
        if option:
            return re.search(r"Check: fields (\w+)=", " ".join(str(option["description"]).split())).group(1)
    raise AssertionError(name)


def test_the_one_validator_covers_every_declared_check():
    # a bad value of each checked setting, through check_settings with the specs as data: one problem each, named
    # by its field
    for role, spec in SPECS.items():
        checks = settings.declared_checks(spec)
        values = {name: ({_first_field(spec, name): "\n"} if check["kind"] == "fields" else "\n")
                  for name, check in checks.items()}
        found = {problem["field"] for problem in settings.check_settings(spec, values)}
        assert found == set(checks), (role, sorted(set(checks) - found))


def _hostile(kind, value):
    """``value`` in the shape the kind takes: an entry of a list; a key of a mapping."""
    if kind.rstrip("?").endswith("[]"):
        return [value]
    if kind.rstrip("?") in MAPPINGS - {"mounts"}:
        return {value: 1}
    if kind.rstrip("?") == "mounts":
        return ["/data/%s:/data/x" % value]
    return value


def _verdict(setting, kind, value):
    """None when ``value`` is refused by name or is one ``kind`` may hold; otherwise what is wrong."""
    try:
        _check(setting, kind, value)
    except AssertionError as err:
        return "%r: %s" % (value[:60], err)
    return None


# one test per setting (each tries every hostile value): a test per value would cost the budget more than it checks
@pytest.mark.parametrize("role, setting, kind", [p for p in PAIRS if p[2] is not None])
def test_each_hostile_value_is_refused_by_name_or_is_one_the_kind_may_hold(role, setting, kind):
    del role
    wrong = [v for v in (_verdict(setting, kind, value) for value in HOSTILE) if v]
    assert wrong == [], wrong


def _check(setting, kind, value):
    base = kind.rstrip("?").replace("[]", "")
    problems = settings.problems([[kind, setting, _hostile(kind, value)]])
    assert all(p.startswith(setting) for p in problems), problems
    if base == "secret":
        assert all(MARK not in p for p in problems), problems  # a secret is never shown
    if problems:
        return
    if base == "mapping":  # its keys are checked where it is used (verl's configuration, for the overrides)
        return
    assert not re.search(r"[\x00-\x1f\x7f]", value), (setting, kind, value[:60])
    assert base != "profile" or "/" in value, "a profile name with hostile text passed"
    if base not in FREE:
        assert re.fullmatch(r"[A-Za-z0-9_.:/@+%\[\]-]*", value), (setting, kind, value[:60])


# The issue's values, each refused naming its setting (the exact cases a user tried, and the review's).
@pytest.mark.parametrize("kind, setting, value, words", [
    ("name", "grpo_train_experiment", "qwen\n", "grpo_train_experiment ('qwen\\n') becomes a folder name"),
    ("path", "grpo_train_dir", "/data/grpo/runs/x\ntouch /tmp/pwned-grpo #", "grpo_train_dir ("),
    ("url", "deps_pinning_index_url", "not a url", "deps_pinning_index_url (not a url) is not an index URL"),
    ("endpoint?", "assets_hub_endpoint", "hf-mirror.com", "assets_hub_endpoint (hf-mirror.com) is not a URL"),
    ("endpoint?", "assets_hub_endpoint", "ftp://hf-mirror.com", "assets_hub_endpoint (ftp://hf-mirror.com)"),
    ("env", "ray_cluster_hccl_env", {"X=1; id >/tmp/pwned; Y": "900"}, "ray_cluster_hccl_env: 'X=1; id"),
    ("mounts", "npu_container_extra_volumes", ["/var/run/docker.sock:/var/run/docker.sock"], "the Docker socket"),
    ("mounts", "npu_container_extra_volumes", ["/:/host"], "mounts / (which holds the Docker socket)"),
    ("mounts", "npu_container_extra_volumes", ["/data/x\n:/y"], "is not a mount"),
    ("sha256?", "deps_pinning_verl_tarball_sha256", "abc", "must be a sha256"),
    ("secret", "npu_container_registry_password", "pa\nss", "its value is not shown"),
    ("ref", "deps_pinning_verl_version", "main; rm -rf /", "deps_pinning_verl_version ('main; rm -rf /')"),
    ("repo", "assets_model_repo", "../../etc", "must be a hub repository id"),
    ("host[]", "deps_pinning_trusted_hosts", ["pypi.org --index-url http://evil"], "deps_pinning_trusted_hosts[0]"),
    ("git", "deps_pinning_verl_repo", "--upload-pack=touch /tmp/x", "deps_pinning_verl_repo (--upload-pack"),
    ("requirement", "assets_modelscope_requirement", "modelscope; touch x", "must be a pip requirement"),
    ("command", "npu_container_python", "python3 -c 'import os'", "a command name or an absolute path"),
    ("kwargs", "grpo_eval_model_kwargs", {"a b": 1}, "grpo_eval_model_kwargs: 'a b' is not a Python name"),
    ("resources", "ray_cluster_resources", {"NPU": -1}, "ray_cluster_resources: 'NPU'"),
])
def test_the_issues_values_are_refused_by_name(kind, setting, value, words):
    problems = settings.problems([[kind, setting, value]])
    assert len(problems) == 1 and words in problems[0], problems
    assert "ss" not in problems[0].split("not shown")[-1] if kind == "secret" else True


@pytest.mark.parametrize("kind, value", [
    ("image", "ascendhub.huawei.com/public-ascendhub/cann:8.2.RC1-910b-openeuler22.03-py3.11"),
    ("image", "quay.io/ascend/cann@sha256:" + "a" * 64), ("host", "10.0.0.11"), ("host", "npu-a:5000"),
    ("host", "[fe80::1]"), ("git", "https://github.com/volcengine/verl.git"), ("git", "git@github.com:volcengine/verl"),
    ("git", "/data/mirrors/verl"), ("ref", "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"), ("ref", "v0.5.0"),
    ("repo", "Qwen/Qwen2.5-1.5B-Instruct"), ("repo", "DigitalLearningGmbH/MATH-lighteval"),
    ("endpoint", "https://hf-mirror.com"), ("source", "https://mirror.example/verl.tar.gz"),
    ("source", "/data/verl.tar.gz"), ("requirement", "modelscope==1.40.2"), ("requirement", "a[b,c]>=1.0,<2"),
    ("command", "python3"), ("command", "/usr/local/bin/npu-smi"), ("size", "8g"), ("size", 1024),
    ("identifier", "compute_score"), ("text", "Let's think step by step and output the final answer within \\boxed{}."),
    ("profile", "npu-single"), ("profile", "/home/me/my-profile.yml"), ("secret", "p@ss w0rd'\""),
    ("file", "roles/assets/files/chat_template.jinja"), ("sha256", "0" * 64),
    ("resources", {"NPU": 8, "node:10.0.0.1": 0.5}), ("kwargs", {"max_seq_len": 4096}),
    ("mounts", ["/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro", "/data:/data"]),
])
def test_ordinary_values_pass(kind, value):
    assert settings.problems([[kind, "x", value]]) == []


def test_an_empty_value_passes_only_where_the_setting_may_be_off():
    assert settings.problems([["path?", "x", ""], ["endpoint?", "y", ""], ["name?", "z", None]]) == []
    assert len(settings.problems([["path", "x", ""], ["endpoint", "y", ""], ["name", "z", None]])) == 3
    assert settings.problems([["path[]", "x", "/a"]]) == ["x must be a list, not '/a'"]
    with pytest.raises(ValueError, match="unknown setting check 'nmae'"):
        settings.problems([["nmae", "x", "y"]])
