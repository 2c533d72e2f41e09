#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: one archive of what maintainers ask for about a run, with every secret taken out."""

DOCUMENTATION = r"""
---
module: grpo_bundle
short_description: Write a support bundle of a training environment, secrets redacted
description:
  - Collects, in the training environment, what maintainers of verl and vllm-ascend ask for when a run fails, i.e. the
    installed packages (pip freeze of the stack's Python), the rendered run script and the run's last launch, the
    head of the training log (verl prints its configuration there) and its tail, the newest Ascend plog files'
    tails, the stages' records (C(.grpo/*.json)) and jobs, and the texts gathered elsewhere (C(texts), e.g. npu-smi
    info, the container's settings, the doctor's result).
  - Every member is redacted before it is written (the C(secrets) and the contents of C(secret_files) given,
    credentials in URLs, values of variables whose names say they are secret), into a gzipped tar (mode 0600).
  - In check mode, lists the members and writes nothing.
options:
  dest:
    description: The archive to write (its folder is made).
    type: path
    required: true
  workspace:
    description: The workspace (its C(.grpo) records and jobs are taken).
    type: path
    required: true
  run_dir:
    description: The run folder (C(run_grpo.sh), C(.launch.json), C(logs/latest.log)).
    type: path
    required: true
  python:
    description: The stack's Python, for C(pip freeze).
    type: str
    required: true
  plog_dir:
    description: Where CANN writes its plog (the newest files' tails are taken; none is fine).
    type: path
    default: /root/ascend/log
  log_lines:
    description: Lines taken from the end of the training log (and of each plog file).
    type: int
    default: 400
  texts:
    description: More members, name in the archive to text (never logged, as they may hold secrets until redacted).
    type: dict
    default: {}
    no_log: true
  secrets:
    description: Values to take out wherever they appear (tokens, passwords, secret environment values).
    type: list
    elements: str
    default: []
    no_log: true
  secret_files:
    description: Files whose contents are secrets (the Ray token); missing ones are skipped.
    type: list
    elements: path
    default: []
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Write the bundle
  grpo_bundle:
    dest: /data/grpo/.grpo/bundles/bundle-20261205T120000.tar.gz
    workspace: /data/grpo
    run_dir: /data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single
    python: /data/grpo/venvs/stack/bin/python
    texts: {npu-smi-info.txt: "{{ smi.stdout }}"}
    secrets: ["{{ assets_hub_token }}"]
    secret_files: [/data/grpo/.grpo/ray/auth_token]
"""

RETURN = r"""
path:
  description: The archive written (in check mode, the one that would be).
  returned: always
  type: str
members:
  description: The names in the archive.
  returned: always
  type: list
  elements: str
  sample: [pip-freeze.txt, run/run_grpo.sh, run/latest.log.tail, records/deps.json]
redacted:
  description: How many secrets and credentials were taken out.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.bundle import support_bundle


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True), workspace=dict(type="path", required=True),
                           run_dir=dict(type="path", required=True), python=dict(type="str", required=True),
                           plog_dir=dict(type="path", default="/root/ascend/log"),
                           log_lines=dict(type="int", default=400), texts=dict(type="dict", default={}, no_log=True),
                           secrets=dict(type="list", elements="str", default=[], no_log=True),
                           secret_files=dict(type="list", elements="path", default=[])),
        supports_check_mode=True,
    )
    module.exit_json(**support_bundle.make(module.params, module.check_mode, module.run_command))


if __name__ == "__main__":
    main()
