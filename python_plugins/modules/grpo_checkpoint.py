#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: pick a verl checkpoint and merge it into a Hugging Face folder (only when that is not done)."""

DOCUMENTATION = r"""
---
module: grpo_checkpoint
short_description: Pick a saved verl checkpoint and merge it into a Hugging Face model folder
description:
  - Picks the step to evaluate, the newest by default (verl's C(latest_checkpointed_iteration.txt)) or the one
    given; a step that was not saved is refused, naming the saved ones.
  - Runs C(python -m verl.model_merger merge --backend fsdp) into a fresh folder beside the target and puts it in
    place, unless the target already matches the checkpoint (a record of the checkpoint's and the merged files'
    names, sizes and times is kept in it). Which step, and whether its merge is current, without merging, is the
    read-only C(grpo_checkpoint_info)'s.
  - A target that holds something else (no record, another checkpoint, or files changed since) is moved aside to
    C(<target>.bak-<time>) first, never deleted. The tokenizer and chat template are the ones training saved
    beside the checkpoint; after the merge the chat template is compared with the training's.
  - A target that cannot be written is refused before anything runs. Supports check mode and diff.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  checkpoint_dir:
    description: The run's checkpoint folder (verl's C(trainer.default_local_dir)).
    type: path
    required: true
  step:
    description: The step to merge; 0 picks the newest saved one.
    type: int
    default: 0
  target_root:
    description: The merged folder is C(target_root/global_step_N).
    type: path
    required: true
  python:
    description: The Python that has verl (the training stack's).
    type: str
    default: python3
  launches:
    description: The run's launch history (C(launches.jsonl) in the run folder) to name the launch that wrote the step.
    type: path
  trust_remote_code:
    description:
      - Let the merger load a model that carries code (C(--trust-remote-code)). Off, the merger runs with remote code
        off and a checkpoint whose C(huggingface) folder carries code (an C(auto_map) in its config, C(*.py) files)
        is refused, naming the files, before the merger runs.
    type: bool
    default: false
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Merge the newest checkpoint
  grpo_checkpoint:
    checkpoint_dir: /data/grpo/checkpoints/verl_grpo_example_math/qwen2_5_1_5b_math_single
    target_root: /data/grpo/models/merged/verl_grpo_example_math/qwen2_5_1_5b_math_single
  register: merged
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
backup:
  description: Where a former folder at the target was moved.
  returned: when one was moved
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
            python=dict(type="str", default="python3"),
            launches=dict(type="path"),
            inventory=dict(type="str", default=""),
            trust_remote_code=dict(type="bool", default=False),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = checkpoint_merge.merge_checkpoint(module.params, module.check_mode, module.run_command)
    except checkpoint_merge.EvalError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
