#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: put the reward function into the workspace and prove it scores, in one call."""

DOCUMENTATION = r"""
---
module: reward_function
short_description: Deploy the reward function (keeping an edited copy) and prove it scores as training calls it
description:
  - C(state=planned) (read-only, for the preflight) refuses a file that does not define I(name), and a destination
    whose folder is not writable and cannot be made in the workspace, each naming the setting to change. Returns
    what deploying would do.
  - C(state=present) makes the folder, writes the file when it differs (the copy there, someone's edit, is kept as
    C(<dest>.bak-<time>)), then scores a right and a wrong answer the way verl loads the function, in a fresh
    process of I(python). The proof is kept in C(<state_dir>/reward-check.json) by the file's sha256, the Python
    and the deps stage's installed stack, so a rerun with nothing changed does not score again.
  - With I(engine_content), the reward's speed engine (which the rules file loads from its own folder) goes with
    it, as C(math_reward_engine.py) beside I(dest) (a differing copy kept the same way), beside the staging copy
    for the scoring, and into the proof's digest.
  - Supports check mode (says what it would do, writes and runs nothing) and diff.
options:
  content:
    description: The reward file's text (the package's, read on the controller).
    type: str
    required: true
  engine_content:
    description: The text of the engine the reward file loads from its folder (the package's
      C(math_reward_engine.py)); omitted, only the reward file is deployed.
    type: str
  dest:
    description: Where training loads it from (in the workspace).
    type: path
    required: true
  name:
    description: The scoring function training calls.
    type: str
    default: compute_score
  python:
    description: The training environment's Python (scores the answers).
    type: str
    default: python3
  workspace:
    description: The workspace (a missing destination folder is made only inside it).
    type: path
    required: true
  state_dir:
    description: The workspace's state folder, where the proof is kept and the deps stage's record is read.
    type: path
    required: true
  state:
    description: planned (check only) or present.
    type: str
    choices: [planned, present]
    default: present
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Deploy the reward function and prove it scores
  reward_function:
    content: "{{ lookup('ansible.builtin.file', 'files/math_reward.py', rstrip=false) }}"
    engine_content: "{{ lookup('ansible.builtin.file', 'files/math_reward_engine.py', rstrip=false) }}"
    dest: /data/grpo/reward/math_reward.py
    name: compute_score
    python: /usr/bin/python3
    workspace: /data/grpo
    state_dir: /data/grpo/.grpo
"""

RETURN = r"""
deploy:
  description: none (the file there is this one), create or replace.
  returned: always
  type: str
backup:
  description: Where the copy that was there is kept (when replaced).
  returned: always
  type: str
engine_backup:
  description: Where the engine's copy that was there is kept (when replaced).
  returned: always
  type: str
scored:
  description: Whether the answers were scored in this run (false when the kept proof still holds).
  returned: state=present
  type: bool
scores:
  description: The right and the wrong answer's scores.
  returned: state=present, not in check mode
  type: dict
  sample: {right: 1.0, wrong: 0.0}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.assets import reward_deploy
from ansible.module_utils.ascend_grpo.common import errors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            content=dict(type="str", required=True),
            engine_content=dict(type="str"),
            dest=dict(type="path", required=True),
            name=dict(type="str", default="compute_score"),
            python=dict(type="str", default="python3"),
            workspace=dict(type="path", required=True),
            state_dir=dict(type="path", required=True),
            state=dict(type="str", default="present", choices=["planned", "present"]),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = reward_deploy.module_deploy(module.params, module.check_mode,
                                             diff=module._diff)  # pylint: disable=protected-access
    except reward_deploy.RewardError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
