"""The deps stage's filters: pip's index arguments and errors, the stack's profiles.

Filters for the deps stage, over the plain-Python pins engine.

Filters: a stage's profile from the stack grpo_stack names (files/stacks), and the profiles a stage's setting
names, located and loaded (one lookup for every stage), over the plain-Python engine.
"""

import os

from ansible.errors import AnsibleFilterError
import yaml

from ascend_grpo.common import errors, settings
from ascend_grpo.deps import pins, pip_runner
from ascend_grpo.deps import stack_files

# The settings the engines' {field}s stand for here (the deps stage's site settings; the stack; each stage's profile
# settings, as PROFILE_KINDS in stack_files knows the stages).
PIP_NAMES = {"index_url": "deps_pinning_index_url", "extra_index_urls": "deps_pinning_extra_index_urls",
             "wheelhouse": "deps_pinning_wheelhouse", "workspace_host": "npu_container_workspace_host"}
STACK_NAMES = {"stack": "grpo_stack"}
PROFILE_SETTINGS = {
    "deps": {"refs": "deps_pinning_profile", "own_file": "deps_pinning_profile_file"},
    "patch": {"refs": "verl_compat_patch_profiles"},
    "train": {"refs": "grpo_train_profiles"},
    "eval": {"refs": "grpo_eval_profile", "own_file": "grpo_eval_profile_file"},
}


def _named(text, names):
    """An engine's ``text`` with its ``{field}``s named by the settings ``names`` maps them to."""
    return errors.name_fields(str(text), names)


def pip_index_args(site):
    """``{{ deps_pinning_site | pip_index_args }}`` -> pip options for the site's index settings."""
    return pins.index_args({}, None, site or {})


def pip_error(text, index_args=()):
    """``{{ result.stderr | pip_error(args) }}`` -> pip's failure in words a user can act on."""
    return _named(pip_runner.explain_pip_error(text or "", list(index_args or [])), PIP_NAMES)


def pip_index_env(urls):
    """``{{ {'index_url': ..., 'extra_index_urls': [...]} | pip_index_env }}`` -> PIP_INDEX_URL and
    PIP_EXTRA_INDEX_URL for a task's environment: an index URL may hold a password, and pip's command line is
    visible to every user of the host."""
    return pins.index_env(pins.index_args({}, None, {k: v for k, v in (urls or {}).items() if v}))[1]


def mask_url(text):
    """``{{ url | mask_url }}`` -> the URL (or any text) with its credentials masked."""
    return pins.mask_url(text)


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STACKS_DIR = os.path.join(_ROOT, "files", "stacks")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def grpo_stack_profile(ref, stage):
    """``{{ grpo_stack | grpo_stack_profile('deps') }}``: the profile (or list) the stack names for ``stage``."""
    try:
        data = stack_files.validate(_load(stack_files.locate(ref, STACKS_DIR)), ref)
    except (stack_files.StackError, OSError, yaml.YAMLError) as err:
        raise AnsibleFilterError(_named(err, STACK_NAMES)) from err
    if stage not in stack_files.STAGES:
        raise AnsibleFilterError("grpo_stack_profile: no stage %s (stages: %s)"
                                 % (stage, ", ".join(stack_files.STAGES)))
    return data[stage]


def grpo_profiles(refs, stage, profiles_dir, own_file=""):
    """``{{ grpo_train_profiles | grpo_profiles('train', role_path ~ '/files/profiles') }}``: each profile the
    setting names, as ``{name, path, data}`` in order; an unknown one fails naming the setting and the choices."""
    try:
        paths = stack_files.locate_profiles(stage, refs, profiles_dir, own_file)
        out = []
        for path in paths:
            data = _load(path)
            if not isinstance(data, dict):
                raise stack_files.StackError("%s profile %s is not a mapping" % (stage, path))
            # its env becomes export lines in the run script: a key that is no variable name is refused here
            env = data.get("env")
            problems = settings.env_problems("%s profile %s: env" % (stage, path), env) if env is not None else []
            if problems:
                raise stack_files.StackError("; ".join(problems))
            out.append({"name": data.get("name") or os.path.basename(path)[:-4], "path": path, "data": data})
        return out
    except (stack_files.StackError, OSError, yaml.YAMLError) as err:
        raise AnsibleFilterError(_named(err, PROFILE_SETTINGS.get(stage, {}))) from err


class FilterModule:
    """The deps stage's filters"""

    def filters(self):
        return {
            "pip_index_args": pip_index_args,
            "pip_error": pip_error,
            "pip_index_env": pip_index_env,
            "mask_url": mask_url,
            "grpo_stack_profile": grpo_stack_profile,
            "grpo_profiles": grpo_profiles,
        }
