"""Filter: a stage's profile from the stack grpo_stack names (files/stacks), over the plain-Python engine."""

import os

import yaml
from ansible.errors import AnsibleFilterError
from ascend_grpo import stacks

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STACKS_DIR = os.path.join(_ROOT, "files", "stacks")


def grpo_stack_profile(ref, stage):
    """``{{ grpo_stack | grpo_stack_profile('deps') }}``: the profile (or list) the stack names for ``stage``."""
    try:
        path = stacks.locate(ref, STACKS_DIR)
        with open(path, encoding="utf-8") as handle:
            data = stacks.validate(yaml.safe_load(handle), ref)
    except (stacks.StackError, OSError, yaml.YAMLError) as err:
        raise AnsibleFilterError(str(err)) from err
    if stage not in stacks.STAGES:
        raise AnsibleFilterError("grpo_stack_profile: no stage %s (stages: %s)" % (stage, ", ".join(stacks.STAGES)))
    return data[stage]


class FilterModule:
    def filters(self):
        return {"grpo_stack_profile": grpo_stack_profile}
