#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: a few MATH problems asked of a served model, each answer scored by the workspace's reward."""

DOCUMENTATION = r"""
---
module: grpo_chat_check
short_description: Ask a served model a few MATH problems and score its answers with the reward function
description:
  - Waits up to C(wait_seconds) for the server to answer (a server job that ended fails at once).
  - Asks the first C(count) problems of the assets stage's C(math.json) through the server's
    C(/v1/chat/completions) (greedy, C(max_tokens)), each as training's rows ask it (the problem and verl's
    instruction; the server applies the model's chat template).
  - Scores every answer with the reward file and function the assets stage deployed, loaded as verl's trainer loads
    it, in one fresh process of the training environment's Python.
  - Returns each answer with its score, time and tokens, and lines for a person. Changes nothing; runs the same in
    check mode.
extends_documentation_fragment:
  - grpo_setting_names
options:
  url:
    description: The server's base URL (C(http://address:port)).
    type: str
    required: true
  model:
    description: The name the server answers to.
    type: str
    required: true
  math_json:
    description: The assets stage's problems (OpenCompass's math.json).
    type: path
    required: true
  count:
    description: How many problems (0 only waits for the server).
    type: int
    default: 3
  max_tokens:
    description: The most tokens an answer may have.
    type: int
    default: 1024
  instruction:
    description: The instruction after each problem (the assets stage's record; verl's MATH instruction by default).
    type: str
    default: ""
  reward_path:
    description: The reward function's file.
    type: path
    required: true
  reward_name:
    description: Its function.
    type: str
    default: compute_score
  python:
    description: The training environment's Python, which loads the reward.
    type: str
    required: true
  wait_seconds:
    description: How long to wait for the server to answer C(/v1/models) first (0 asks at once).
    type: int
    default: 0
  job_dir:
    description: The server's job folder (C(grpo_job)); a job that ended fails the wait at once, with its log's end.
    type: path
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Ask three problems and score the answers
  grpo_chat_check:
    url: http://127.0.0.1:8000
    model: trained-step-280
    math_json: /data/grpo/data/math/math.json
    reward_path: /data/grpo/reward/math_reward.py
    python: /data/grpo/venvs/stack/bin/python
  register: chat
"""

RETURN = r"""
answers:
  description: Per problem its id, problem, ground truth, answer, score, seconds and completion tokens.
  returned: always
  type: list
  elements: dict
summary:
  description: >-
    The seconds the server took to answer, the longest context it serves (max_model_len), the problems asked, the
    sum of their scores, the seconds and the tokens a second.
  returned: always
  type: dict
lines:
  description: One line per answer for a person.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.eval import chat_check


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            model=dict(type="str", required=True),
            math_json=dict(type="path", required=True),
            count=dict(type="int", default=3),
            max_tokens=dict(type="int", default=1024),
            instruction=dict(type="str", default=""),
            reward_path=dict(type="path", required=True),
            reward_name=dict(type="str", default="compute_score"),
            python=dict(type="str", required=True),
            wait_seconds=dict(type="int", default=0),
            job_dir=dict(type="path"),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = chat_check.check(module.params)
    except chat_check.StageFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
