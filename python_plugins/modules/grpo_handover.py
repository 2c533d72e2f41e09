#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: read the records earlier stages left in the workspace, or leave this stage's record."""

DOCUMENTATION = r"""
---
module: grpo_handover
short_description: Hand a stage's results on to the later stages through the workspace (<state_dir>/<stage>.json)
description:
  - Each stage leaves a record of what it made in the workspace's state folder (C(deps.json) names the verl tree,
    C(assets.json) the model, data and reward, C(train.json) the run and checkpoint folders). A later stage reads
    the records instead of recomputing another role's paths, so a setting changed in one place reaches every stage.
  - With I(read), returns the records of the stages named and fails, naming the stage to run first, when one is
    missing (a stage also named in I(optional) is left out of C(records) and named in C(missing) instead, for a
    record that is absent by design, as the container stage's with C(npu_container_mode=none)). With I(stage)
    and I(record), leaves that record (written atomically, only when it differs). One call
    may do both.
  - The state folder and the record are never written through a link (the record is written to a new name and
    renamed, the folder reached without following one); a linked C(.grpo) or record fails naming it.
  - Supports check mode (reports the change, writes nothing) and diff.
extends_documentation_fragment:
  - grpo_inventory
options:
  state_dir:
    description: The workspace's state folder (C(<workspace>/.grpo)).
    type: path
    required: true
  read:
    description: Stages whose records to return, in C(records).
    type: list
    elements: str
    choices: [container, deps, patch, assets, cluster, train, eval]
    default: []
  optional:
    description: Stages of I(read) whose record may be missing (reported in C(missing), not a failure).
    type: list
    elements: str
    choices: [container, deps, patch, assets, cluster, train, eval]
    default: []
  stage:
    description: The stage whose record to leave (with I(record)).
    type: str
    choices: [container, deps, patch, assets, cluster, train, eval]
  record:
    description: The record to leave for I(stage), a mapping of plain values.
    type: dict
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Read what the assets and train stages made
  grpo_handover:
    state_dir: /data/grpo/.grpo
    read: [assets, train]
  register: handover

- name: Hand the run's folders on to the eval stage
  grpo_handover:
    state_dir: /data/grpo/.grpo
    stage: train
    record: {run_dir: /data/grpo/runs/p/e, checkpoint_dir: /data/grpo/checkpoints/p/e}
"""

RETURN = r"""
records:
  description: The records read, by stage.
  returned: always
  type: dict
  sample: {assets: {model_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct, math_json: /data/grpo/data/math/math.json}}
missing:
  description: Why each record of I(optional) that could not be read is missing.
  returned: always
  type: list
  elements: str
path:
  description: The file the record was left in (with I(stage)).
  returned: when I(stage) is given
  type: str
  sample: /data/grpo/.grpo/train.json
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import record_handover, workspace


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state_dir=dict(type="path", required=True),
            read=dict(type="list", elements="str", default=[], choices=list(workspace.STAGES)),
            optional=dict(type="list", elements="str", default=[], choices=list(workspace.STAGES)),
            stage=dict(type="str", choices=list(workspace.STAGES)),
            record=dict(type="dict"),
            inventory=dict(type="str", default=""),
        ),
        required_together=[("stage", "record")],
        supports_check_mode=True,
    )
    try:
        result = record_handover.handover(module.params, module.check_mode,
                                          module._diff)  # pylint: disable=protected-access
    except record_handover.HandoverFailed as err:
        module.fail_json(msg=err.msg, **err.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
