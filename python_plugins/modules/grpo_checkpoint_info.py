#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: which verl checkpoint an evaluation takes, and whether its merged folder is current (read-only)."""

DOCUMENTATION = r"""
---
module: grpo_checkpoint_info
short_description: Pick a saved verl checkpoint and say whether its merged Hugging Face folder is current
description:
  - Picks the step to evaluate, the newest by default (verl's C(latest_checkpointed_iteration.txt)) or the one
    given; a step that was not saved is refused, naming the saved ones.
  - Reports the step, the launch that wrote it and whether the merged folder C(target_root/global_step_N) matches
    the checkpoint (C(merge) none) or must be made (C(merge) merge, with the reason). A target that cannot be
    written is refused.
  - Read-only (the C(_info) counterpart of C(grpo_checkpoint), which merges); runs the same in check mode and never
    reports a change.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  checkpoint_dir:
    description: The run's checkpoint folder (verl's C(trainer.default_local_dir)).
    type: path
    required: true
  step:
    description: The step to look at; 0 picks the newest saved one.
    type: int
    default: 0
  target_root:
    description: The merged folder is C(target_root/global_step_N).
    type: path
    required: true
  launches:
    description: The run's launch history (C(launches.jsonl) in the run folder) to name the launch that wrote the step.
    type: path
  trust_remote_code:
    description: Accept a checkpoint whose C(huggingface) folder carries code (an C(auto_map), C(*.py)); off, such a
      step is refused, naming the files, before anything merges or loads it.
    type: bool
    default: false
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Which checkpoint, and does its merge still need doing
  grpo_checkpoint_info:
    checkpoint_dir: /data/grpo/checkpoints/verl_grpo_example_math/qwen2_5_1_5b_math_single
    target_root: /data/grpo/models/merged/verl_grpo_example_math/qwen2_5_1_5b_math_single
  register: checkpoint
"""

RETURN = r"""
step:
  description: The step picked.
  returned: always
  type: int
saved:
  description: The steps saved in the checkpoint folder.
  returned: always
  type: list
  elements: int
latest:
  description: The step verl's latest_checkpointed_iteration.txt names (null without one).
  returned: always
  type: int
actor_dir:
  description: The checkpoint's actor folder.
  returned: always
  type: str
target:
  description: The merged Hugging Face folder.
  returned: always
  type: str
merge:
  description: none (the merged folder matches) or merge (named so because Ansible claims C(action)).
  returned: always
  type: str
reason:
  description: Why.
  returned: always
  type: str
launch:
  description: The launch (from the run's history) that wrote this step, with its overrides.
  returned: when the history has it
  type: dict
written_at:
  description: When the checkpoint's model shards were written (epoch seconds).
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.eval import checkpoint_merge


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checkpoint_dir=dict(type="path", required=True),
            step=dict(type="int", default=0),
            target_root=dict(type="path", required=True),
            launches=dict(type="path"),
            inventory=dict(type="str", default=""),
            trust_remote_code=dict(type="bool", default=False),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = checkpoint_merge.checkpoint_info(module.params)
    except checkpoint_merge.EvalError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
