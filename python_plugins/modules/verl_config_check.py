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
options:
  verl_dir:
    description:
      - The verl source tree (holds C(verl/trainer/config)).
      - Empty (the default) means the tree the deps stage installed, as its record C(<state_dir>/deps.json) names it.
    type: path
    default: ""
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

import os

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.train import overrides as ov
from ansible.module_utils.ascend_grpo.common import rerun
from ansible.module_utils.ascend_grpo.train import run_spec, train_rules
from ansible.module_utils.ascend_grpo.common import workspace


def main():
    module = AnsibleModule(
        argument_spec=dict(verl_dir=dict(type="path", default=""),
                           state_dir=dict(type="path", default=""),
                           run_dir=dict(type="path", default=""),
                           enforce=dict(type="bool", default=True),
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
        composed, errors = ov.check(config_dir, p["overrides"], p["config_name"])
        cfg = OmegaConf.to_container(composed, resolve=True) if composed is not None else None
        mapping = ov.as_mapping(p["overrides"]) if cfg is not None else None
    except ImportError as err:
        module.fail_json(msg="hydra and omegaconf are needed in the training environment: %s" % err, errors=[])
    if cfg is not None:
        errors = train_rules.check(cfg, train_rules.facts(cfg, p["cards"]), inventory=p["inventory"])
    errors = [{"key": e["key"], "message": e["message"]} for e in errors]
    if errors and not p["enforce"]:
        for e in errors:
            module.warn("%s: %s" % (e["key"], e["message"]))
        if cfg is None:  # nothing composed: no spec to write
            module.exit_json(changed=False, errors=errors, summary={}, verl_dir=p["verl_dir"], spec="")
    elif errors:
        module.fail_json(msg="The run would fail; change: " + "; ".join(
            e["message"] if e["message"].startswith(e["key"]) else "%s: %s" % (e["key"], e["message"])
            for e in errors), errors=errors)
    spec = run_spec.build(cfg, p["overrides"], mapping, run_dir=p["run_dir"], verl_dir=p["verl_dir"],
                          config_name=p["config_name"])
    changed, diff, where = False, None, ""
    if p["state_dir"]:
        where = run_spec.path(p["state_dir"])
        changed, diff = run_spec.write(p["state_dir"], spec, check_mode=module.check_mode)
    module.exit_json(changed=changed, errors=errors, summary=spec["summary"], verl_dir=p["verl_dir"], spec=where,
                     **({"diff": diff} if module._diff and changed else {}))  # pylint: disable=protected-access

if __name__ == "__main__":
    main()
