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
  - Every problem is reported at once. Changes nothing; runs in check mode too.
extends_documentation_fragment:
  - grpo_inventory
options:
  verl_dir:
    description:
      - The verl source tree (holds C(verl/trainer/config)).
      - Empty (the default) means the tree the deps stage installed, as its record C(<state_dir>/deps.json) names it.
    type: path
    default: ""
  state_dir:
    description: The workspace's state folder (C(<workspace>/.grpo)), where the deps stage's record is.
    type: path
    default: ""
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
- name: Validate the run
  verl_config_check:
    state_dir: /data/grpo/.grpo
    overrides: [algorithm.adv_estimator=grpo, actor_rollout_ref.rollout.n=8]
    cards: [0]
"""

RETURN = r"""
errors:
  description: Each problem, with the setting to change.
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
  description: The composed values that matter most (batch sizes, n, lengths, devices, total epochs).
  returned: success
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.train import overrides as ov
from ansible.module_utils.ascend_grpo.common import rerun
from ansible.module_utils.ascend_grpo.train import train_rules
from ansible.module_utils.ascend_grpo.common import workspace

SUMMARY = ["algorithm.adv_estimator", "data.train_batch_size", "data.max_prompt_length",
           "data.max_response_length", "actor_rollout_ref.actor.ppo_mini_batch_size",
           "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.n", "trainer.device",
           "trainer.n_gpus_per_node", "trainer.total_epochs", "trainer.total_training_steps", "trainer.save_freq",
           "trainer.resume_mode"]


def main():
    module = AnsibleModule(
        argument_spec=dict(verl_dir=dict(type="path", default=""),
                           state_dir=dict(type="path", default=""),
                           overrides=dict(type="list", elements="str", required=True),
                           cards=dict(type="list", elements="int", required=True),
                           config_name=dict(type="str", default="ppo_trainer"),
                           inventory=dict(type="str", default="")),
        supports_check_mode=True,
    )
    p = module.params
    try:
        p["verl_dir"] = workspace.verl_dir(p["state_dir"], p["verl_dir"], p["inventory"])
    except workspace.MissingRecord as err:
        module.fail_json(msg="%s Or set grpo_train_verl_dir to the folder that holds verl/." % err, errors=[])
    config_dir = os.path.join(p["verl_dir"], "verl", "trainer", "config")
    if not os.path.isfile(os.path.join(config_dir, p["config_name"] + ".yaml")):
        module.fail_json(msg="%s has no %s.yaml: run the deps stage (%s) or set grpo_train_verl_dir"
                         % (config_dir, p["config_name"], rerun.command("deps", p["inventory"])), errors=[])
    try:
        from omegaconf import OmegaConf
        errors = ov.validate(config_dir, p["overrides"], p["config_name"])
        cfg = None
        if not errors:
            composed, errors = ov.compose(config_dir, p["overrides"], p["config_name"])
            cfg = OmegaConf.to_container(composed, resolve=True)
    except ImportError as err:
        module.fail_json(msg="hydra and omegaconf are needed in the training environment: %s" % err, errors=[])
    if cfg is not None:
        errors = train_rules.check(cfg, train_rules.facts(cfg, p["cards"]), inventory=p["inventory"])
    errors = [{"key": e["key"], "message": e["message"]} for e in errors]
    if errors:
        module.fail_json(msg="The run would fail; change: " + "; ".join(
            e["message"] if e["message"].startswith(e["key"]) else "%s: %s" % (e["key"], e["message"])
            for e in errors), errors=errors)
    conf = train_rules.config(cfg)
    summary = {key: train_rules._get(conf, key) for key in SUMMARY}  # pylint: disable=protected-access
    module.exit_json(changed=False, errors=[], summary=summary, verl_dir=p["verl_dir"])


if __name__ == "__main__":
    main()
