"""Filters: a stage's profile from the stack grpo_stack names (files/stacks), and the profiles a stage's setting
names, located and loaded (one lookup for every stage), over the plain-Python engine."""

import os

import yaml
from ansible.errors import AnsibleFilterError
from ascend_grpo import settings, stacks

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STACKS_DIR = os.path.join(_ROOT, "files", "stacks")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def grpo_stack_profile(ref, stage):
    """``{{ grpo_stack | grpo_stack_profile('deps') }}``: the profile (or list) the stack names for ``stage``."""
    try:
        data = stacks.validate(_load(stacks.locate(ref, STACKS_DIR)), ref)
    except (stacks.StackError, OSError, yaml.YAMLError) as err:
        raise AnsibleFilterError(str(err)) from err
    if stage not in stacks.STAGES:
        raise AnsibleFilterError("grpo_stack_profile: no stage %s (stages: %s)" % (stage, ", ".join(stacks.STAGES)))
    return data[stage]


def grpo_profiles(refs, stage, profiles_dir, own_file=""):
    """``{{ grpo_train_profiles | grpo_profiles('train', role_path ~ '/files/profiles') }}``: each profile the
    setting names, as ``{name, path, data}`` in order; an unknown one fails naming the setting and the choices."""
    try:
        paths = stacks.locate_profiles(stage, refs, profiles_dir, own_file)
        out = []
        for path in paths:
            data = _load(path)
            if not isinstance(data, dict):
                raise stacks.StackError("%s profile %s is not a mapping" % (stage, path))
            # its env becomes export lines in the run script: a key that is no variable name is refused here
            env = data.get("env")
            problems = settings.env_problems("%s profile %s: env" % (stage, path), env) if env is not None else []
            if problems:
                raise stacks.StackError("; ".join(problems))
            out.append({"name": data.get("name") or os.path.basename(path)[:-4], "path": path, "data": data})
        return out
    except (stacks.StackError, OSError, yaml.YAMLError) as err:
        raise AnsibleFilterError(str(err)) from err


class FilterModule:
    def filters(self):
        return {"grpo_stack_profile": grpo_stack_profile, "grpo_profiles": grpo_profiles}
