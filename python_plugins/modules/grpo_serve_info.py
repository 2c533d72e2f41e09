#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: which model vLLM's OpenAI-compatible server serves, and the command that serves it (read-only)."""

DOCUMENTATION = r"""
---
module: grpo_serve_info
short_description: Pick the model to serve with vLLM's OpenAI-compatible server and compose its command
description:
  - Picks the model (C(model) empty, the newest trained step the eval stage evaluated, else the base model;
    C(base); or a step number, whose merged folder must exist) and composes the server's argv
    (C(python -m vllm.entrypoints.openai.api_server)) with the address and port given, the profile's arguments and
    the user's (which may not repeat the model, address or port).
  - Says whether the training environment lacks uvloop (the guide uninstalls it; vLLM 0.13's server imports it),
    and the sha256 of the chat template the model folder carries.
  - Read-only; runs the same in check mode.
extends_documentation_fragment:
  - grpo_setting_names
options:
  model:
    description: Empty (the newest evaluated step, else the base model), C(base), or a step number.
    type: str
    default: ""
  model_dir:
    description: A model folder to serve as it is (the eval stage's model), instead of the pick C(model) makes.
    type: path
  name:
    description: The name the server answers to for C(model_dir).
    type: str
  base_dir:
    description: The base model's folder.
    type: path
    required: true
  merged_root:
    description: Where the eval stage merges checkpoints (C(global_step_N) folders).
    type: path
    required: true
  reports_dir:
    description: The eval stage's reports folder.
    type: path
    required: true
  report_prefix:
    description: The reports' name before C(-step_N.json) (C(<project>-<experiment>)).
    type: str
    required: true
  eval_command:
    description: The command that merges and evaluates a step (with the user's inventory), for the messages.
    type: str
    default: "--tags eval"
  python:
    description: The training environment's Python (the stack's venv), which runs the server.
    type: str
    required: true
  address:
    description: The address the server listens on.
    type: str
    required: true
  port:
    description: Its port.
    type: int
    required: true
  profile_args:
    description: The eval profile's server arguments.
    type: list
    elements: str
    default: []
  args:
    description: The user's extra server arguments.
    type: list
    elements: raw
    default: []
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Pick the model and compose the server's command
  grpo_serve_info:
    base_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct
    merged_root: /data/grpo/models/merged/verl_grpo_math/qwen2_5_1_5b
    reports_dir: /data/grpo/eval/reports
    report_prefix: verl_grpo_math-qwen2_5_1_5b
    python: /data/grpo/venvs/stack/bin/python
    address: 127.0.0.1
    port: 8000
  register: serve
"""

RETURN = r"""
model:
  description: The model picked (kind base or trained, step, model_dir, name it answers to, why).
  returned: always
  type: dict
command:
  description: The server's argv.
  returned: always
  type: list
  elements: str
uvloop_stand_in:
  description: Whether the server needs the package's uvloop stand-in on its path (the stack has no uvloop).
  returned: always
  type: bool
template_sha256:
  description: The sha256 of the model folder's chat template (null without one).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.eval import serve_plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            model=dict(type="str", default=""),
            model_dir=dict(type="path"),
            name=dict(type="str"),
            base_dir=dict(type="path", required=True),
            merged_root=dict(type="path", required=True),
            reports_dir=dict(type="path", required=True),
            report_prefix=dict(type="str", required=True),
            eval_command=dict(type="str", default="--tags eval"),
            python=dict(type="str", required=True),
            address=dict(type="str", required=True),
            port=dict(type="int", required=True),
            profile_args=dict(type="list", elements="str", default=[]),
            args=dict(type="list", elements="raw", default=[]),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = serve_plan.info(module.params)
    except serve_plan.StageFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
