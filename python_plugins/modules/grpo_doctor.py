#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: check a training environment before a launch, one row per check with its fix."""

DOCUMENTATION = r"""
---
module: grpo_doctor
short_description: Check a training environment before a GRPO launch (versions, CANN, cards, HBM, env, Ray, reward)
description:
  - Runs the doctor's probe with the stack's Python in the environment the run script sets (the C(environment) text,
    i.e. the rendered C(run_env.sh.j2) part of C(run_grpo.sh), sourced by bash), then judges what it found against
    the deps stage's pins, the run's spec and C(npu-smi info), one row per check (pass, fail, warn, or absent,
    i.e. not on this host), each failure with its fix.
  - The checks are the installed versions against the pins and the pairs that must agree (torch and torch_npu, vLLM
    and vllm-ascend, what the platform package declares), the CANN libraries loadable and C(import torch_npu), a
    small tensor op on every visible card under a deadline, free HBM on each card against
    C(gpu_memory_utilization) (with the processes on the card), C(VLLM_ASCEND_ENABLE_NZ=0), uvloop absent, the
    allocator against the rollout's sleep mode, Ray's NPU resource (its own accelerator manager, or the cluster's),
    and the reward scoring a right and a wrong answer from a thread that is not the main one.
  - Keeps the result in C(<state_dir>/doctor.json) with a fingerprint of the environment (its text, the pins, the
    Python's installed distributions, the CANN scripts, the reward file, the container's start). With
    C(when=changed), a fingerprint equal to the last passing result's skips the probe and judges its facts again
    (the HBM check always reads the C(npu_smi) given).
  - Never fails on a failed check; C(passed) says whether every check passed or warned, and the caller decides.
  - In check mode, probes and judges the same and writes nothing.
options:
  python:
    description: The stack's Python (the one the run script starts verl with).
    type: str
    required: true
  environment:
    description: The run's environment as bash text (the part of the run script before it starts anything).
    type: str
    required: true
    no_log: true
  run_dir:
    description: The run folder, where the probe runs (as the run script does).
    type: path
    required: true
  state_dir:
    description:
      - The workspace's records folder (C(doctor.json) goes there). The run's spec (C(run-spec.json), written by the
        train stage's check) is read there, for gpu_memory_utilization, the sleep mode, the device, the card counts,
        the reward and the trackers; without one the module fails naming the command that writes it.
    type: path
    required: true
  pins:
    description: The deps stage's pins (package to version).
    type: dict
    default: {}
  accept:
    description: Pinned packages accepted to differ (the deps stage's C(deps_pinning_accept_drift)).
    type: list
    elements: str
    default: []
  cards:
    description: The card numbers the run uses (npu-smi's numbering).
    type: list
    elements: int
    default: []
  in_container:
    description: >-
      The environment is a container given only the run's cards (its CANN runtime numbers them from 0); false for
      the host itself (C(npu_container_mode) none), where the host's numbers hold.
    type: bool
    default: false
  scripts:
    description: The CANN environment scripts the run sources (named in fixes; their state is in the fingerprint).
    type: list
    elements: path
    default: []
  npu_smi:
    description: The output of C(npu-smi info) on the host (empty when there is none).
    type: str
    default: ""
  npu_smi_rc:
    description:
      - The exit status of C(npu-smi info) on the host (Ansible's command gives 2 for a command that does not exist).
        Not 0, the doctor fails a row naming C(npu_container_npu_smi), never "not on this host".
    type: int
    default: 0
  npu_smi_error:
    description: What C(npu-smi info) (or Ansible, for a command that does not exist) said when it did not run.
    type: str
    default: ""
  npu_smi_command:
    description: The npu-smi that ran (C(grpo_npu_smi)), named in the failure.
    type: str
    default: npu-smi
  cluster_address:
    description: The Ray cluster the run attaches to (C(host:port)); empty for the run's own Ray.
    type: str
    default: ""
  deadline:
    description: Seconds for each tensor op, the reward and the cluster's answer.
    type: int
    default: 60
  when:
    description: C(always) probes; C(changed) reuses the last passing result while the fingerprint holds.
    type: str
    choices: [always, changed]
    default: always
  inventory:
    description:
      - The C(-i) words of the inventory the user ran with (roles/grpo_common's C(grpo_common_inventory_args)),
        which the commands in a fix carry (C(ansible-playbook site.yml -i ... --tags deps)). Empty, a placeholder.
    type: str
    default: ""
  pins_profile:
    description: Not read. Named in the fix of the pins, as the setting that chooses the deps stage's profile.
    type: raw
  container_mode:
    description: Not read. Named in the fix of the card numbering, as the setting that runs without a container.
    type: raw
  container_env:
    description: Not read. Named in the fix of the card numbering, as the container's own environment setting.
    type: raw
  host_npu_smi:
    description: >-
      Not read. Named in the fix when npu-smi could not run, as the setting that names the NPU host's npu-smi (the
      one C(npu_smi_command) is handed on from).
    type: raw
  loggers:
    description: Not read. Named in the fix of the trackers, as the setting that chooses verl's trackers.
    type: raw
  container_stack_venv:
    description: Not read. Named when the stack's Python does not exist, as the setting of the stack's venv.
    type: raw
  stack_venv:
    description: Not read. Named beside C(container_stack_venv), as the venv the container stage hands on.
    type: raw
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Check the environment before a launch
  grpo_doctor:
    python: /data/grpo/venvs/stack/bin/python
    environment: "{{ lookup('ansible.builtin.template', 'run_env.sh.j2') }}"
    run_dir: /data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single
    state_dir: /data/grpo/.grpo
    pins: {torch: "2.8.0", torch-npu: "2.8.0.post2"}
    cards: [0]
    npu_smi: "{{ smi.stdout }}"
    when: changed
"""

RETURN = r"""
rows:
  description: One per check (a fix names settings through C(setting_names)).
  returned: always
  type: list
  elements: dict
  sample: [{check: free HBM, status: fail, detail: "card 0: 12000 MB free of 65536 ...", fix: "lower ..."}]
lines:
  description: The rows as lines for people (a fix under each failure or warning).
  returned: always
  type: list
  elements: str
failures:
  description: The failed checks' lines, each with its fix (empty when none failed).
  returned: always
  type: list
  elements: str
passed:
  description: No check failed.
  returned: always
  type: bool
summary:
  description: Counts, e.g. "9 pass, 0 fail, 0 warn, 4 not on this host".
  returned: always
  type: str
probed:
  description: Whether the probe ran (false when C(when=changed) reused the last passing result).
  returned: always
  type: bool
record:
  description: The result's file.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.train import doctor, run_spec


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str", required=True), environment=dict(type="str", required=True, no_log=True),
            run_dir=dict(type="path", required=True), state_dir=dict(type="path", required=True),
            pins=dict(type="dict", default={}),
            accept=dict(type="list", elements="str", default=[]), cards=dict(type="list", elements="int", default=[]),
            in_container=dict(type="bool", default=False), scripts=dict(type="list", elements="path", default=[]),
            npu_smi=dict(type="str", default=""),
            npu_smi_rc=dict(type="int", default=0), npu_smi_error=dict(type="str", default=""),
            npu_smi_command=dict(type="str", default="npu-smi"),
            cluster_address=dict(type="str", default=""), deadline=dict(type="int", default=60),
            when=dict(type="str", choices=["always", "changed"], default="always"),
            inventory=dict(type="str", default=""), setting_names=dict(type="dict", default={}),
            # only named in a fix (the role maps each to its setting), never read
            pins_profile=dict(type="raw"), container_mode=dict(type="raw"), container_env=dict(type="raw"),
            host_npu_smi=dict(type="raw"), loggers=dict(type="raw"), container_stack_venv=dict(type="raw"),
            stack_venv=dict(type="raw")),
        supports_check_mode=True,
    )
    try:
        # the rows' fixes name the calling role's settings (its setting_names)
        result = doctor.checkup(module.params, module.run_command, check_mode=module.check_mode,
                                render=lambda rows: errors.module_text(module, rows))
    except run_spec.MissingSpec as err:
        module.fail_json(msg=str(err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
