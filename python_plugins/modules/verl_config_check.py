#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: compose verl's configuration with the run's overrides and check it before launch."""

DOCUMENTATION = r"""
---
module: verl_config_check
short_description: Refuse a verl GRPO run that would fail later, naming the setting to change
description:
  - Composes verl's own configuration (the YAML under C(verl/trainer/config) of the installed source) with the
    overrides, with Hydra and OmegaConf, in the training environment. An unknown key (a typo), a C(+) on a key
    that exists, a malformed override or a value of the wrong type fails, each with its key named.
  - Then checks what verl would only trip over minutes or hours in (GRPO with one response per prompt, batch
    sizes that do not divide, a card count or tensor parallel size that does not fit the visible cards, prompt
    plus response longer than the model's context, a missing model, data or reward file, a reward file without
    its function, too little disk for two checkpoints).
  - Every problem is reported at once. Runs in check mode too.
  - When the run passes, writes its spec once, as data, in the workspace's state folder (C(<state_dir>/run-spec.json))
    with the overrides as a mapping, the override words verl is launched with and the composed values the doctor, the
    status, the eval stage and the support bundle read (C(ascend_grpo.train.run_spec)). Nothing else changes.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  verl_dir:
    description:
      - The verl source tree (holds C(verl/trainer/config)).
      - Empty (the default) means the tree the deps stage installed, as its record C(<state_dir>/deps.json) names it.
    type: path
    default: ""
  max_actor_ckpt_to_keep:
    description:
      - Not read. Named in the fix of a run whose checkpoints would not fit on the disk (keep fewer of them), as
        the setting C(setting_names) maps it to (the one that sets verl's C(trainer.max_actor_ckpt_to_keep)).
    type: raw
  checkpoint_dir:
    description:
      - Not read. Named in the same fix (point the checkpoints at a larger disk), as the setting C(setting_names)
        maps it to (the one that sets verl's C(trainer.default_local_dir)).
    type: raw
  state_dir:
    description:
      - The workspace's state folder (C(<workspace>/.grpo)), where the deps stage's record is and where the run's
        spec is written.
      - Empty writes no spec.
    type: path
    default: ""
  run_dir:
    description: The run's folder, kept in the spec so that a reader knows which run it describes.
    type: path
    default: ""
  enforce:
    description:
      - Fail on a problem (the default). False (C(grpo_train_validate) false, and the doctor's own pass) reports
        the problems as warnings and still writes the spec when the configuration composes.
    type: bool
    default: true
  overrides:
    description: The run's Hydra overrides, as on verl's command line.
    type: list
    elements: str
    required: true
  cards:
    description: The card numbers visible to the run.
    type: list
    elements: int
    required: true
  config_name:
    description: The trainer configuration to compose.
    type: str
    default: ppo_trainer
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Validate the run and write its spec
  verl_config_check:
    state_dir: /data/grpo/.grpo
    run_dir: /data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single
    overrides: [algorithm.adv_estimator=grpo, actor_rollout_ref.rollout.n=8]
    cards: [0]
"""

RETURN = r"""
errors:
  description: Each problem, with the setting to change (named through C(setting_names)).
  returned: always
  type: list
  elements: dict
  sample: [{key: actor_rollout_ref.rollout.n, message: "GRPO compares several responses ..."}]
verl_dir:
  description: The verl tree whose configuration was composed.
  returned: success
  type: str
  sample: /data/grpo/verl
summary:
  description: >-
    The composed values that matter most (batch sizes, n, lengths, devices, total epochs), as the spec has them.
  returned: success
  type: dict
spec:
  description: The spec's file (C(<state_dir>/run-spec.json)); empty without C(state_dir).
  returned: success
  type: str
  sample: /data/grpo/.grpo/run-spec.json
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.train import run_spec


def main():
    module = AnsibleModule(
        argument_spec=dict(verl_dir=dict(type="path", default=""),
                           state_dir=dict(type="path", default=""),
                           run_dir=dict(type="path", default=""),
                           enforce=dict(type="bool", default=True),
                           overrides=dict(type="list", elements="str", required=True),
                           cards=dict(type="list", elements="int", required=True),
                           config_name=dict(type="str", default="ppo_trainer"),
                           inventory=dict(type="str", default=""),
                           max_actor_ckpt_to_keep=dict(type="raw"), checkpoint_dir=dict(type="raw"),
                           setting_names=dict(type="dict", default={})),
        supports_check_mode=True,
    )
    try:
        result, warnings = run_spec.check_run(module.params, check_mode=module.check_mode)
    except run_spec.CheckFailed as err:
        module.fail_json(**errors.module_failure(module, err))
    # a problem only warned (enforce false) names the settings as a refusal would
    result["errors"] = errors.module_text(module, result["errors"])
    for warning in errors.module_text(module, warnings):
        module.warn(warning)
    diff = result.pop("diff")
    if module._diff and result["changed"]:  # pylint: disable=protected-access
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
