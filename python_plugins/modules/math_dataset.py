#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: MATH into verl's parquet files and OpenCompass's math.json, skipped when current."""

DOCUMENTATION = r"""
---
module: math_dataset
short_description: Turn MATH (hub or local parquet) into verl's train/test parquet and OpenCompass's math.json
description:
  - Reads MATH-lighteval from the hub with C(datasets) (an endpoint and a token may be given) or local parquet
    files (C(train*.parquet) and C(test*.parquet) under C(local_dir)), and writes C(train.parquet),
    C(test.parquet) (verl's schema, the ground truth being the last C(\boxed{}) of each solution) and
    C(math.json) (the test split, for OpenCompass) into C(dest).
  - A manifest in C(dest) records the input (local files' sizes and times, or the hub's commit) and the options;
    when they and the outputs are unchanged nothing is done, and a complete local rerun touches no network.
  - Outputs that this module did not write last (edited by a person) are moved to C(<name>.<time>.bak) first.
  - A missing column, split or file fails naming it, before anything is written. Supports check mode.
options:
  source:
    description: Where MATH comes from.
    type: str
    choices: [hf, local]
    default: hf
  dest:
    description: The folder for the outputs.
    type: path
    required: true
  repo:
    description: The dataset repository on the hub.
    type: str
    default: DigitalLearningGmbH/MATH-lighteval
  revision:
    description: Branch, tag or commit of the dataset.
    type: str
    default: main
  local_dir:
    description: With C(source=local), the folder holding the parquet files.
    type: path
  endpoint:
    description: The hub's address (a mirror, say).
    type: str
  token:
    description: A hub token.
    type: str
  cache_dir:
    description: C(datasets)' cache folder (keep it in the workspace).
    type: path
  data_source:
    description: The C(data_source) value of every row.
    type: str
    default: DigitalLearningGmbH/MATH-lighteval
  instruction:
    description: Appended to each problem (after a space) in the prompt.
    type: str
    default: Let's think step by step and output the final answer within \boxed{}.
extends_documentation_fragment:
  - grpo_setting_names
  - grpo_proxy
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: MATH from local parquet files
  math_dataset:
    source: local
    local_dir: /data/grpo/sources/math
    dest: /data/grpo/data/math
"""

RETURN = r"""
build:
  description: none (outputs current) or build.
  returned: success
  type: str
rows:
  description: Rows written per split.
  returned: success
  type: dict
  sample: {train: 7500, test: 5000}
dropped:
  description: Rows left out per split because their solution has no C(\boxed{}).
  returned: when built
  type: dict
backups:
  description: Outputs moved aside because they were not this module's.
  returned: when built
  type: list
field:
  description: On failure, the option at fault (repo, revision, endpoint, local_dir, dest, source).
  returned: failure
  type: str
reason:
  description: Why the outputs are current or must be built (for example C(current (repo@revision))).
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.assets import math_data
from ansible.module_utils.ascend_grpo.common import errors, proxy


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", choices=["hf", "local"], default="hf"),
            dest=dict(type="path", required=True),
            repo=dict(type="str", default=math_data.DATA_SOURCE),
            revision=dict(type="str", default="main"),
            local_dir=dict(type="path"),
            endpoint=dict(type="str"),
            token=dict(type="str", no_log=True),
            cache_dir=dict(type="path"),
            data_source=dict(type="str", default=math_data.DATA_SOURCE),
            instruction=dict(type="str", default=math_data.INSTRUCTION),
            proxy=dict(type="dict", default={}, no_log=True),
            setting_names=dict(type="dict", default={}),
        ),
        required_if=[("source", "local", ["local_dir"])],
        supports_check_mode=True,
    )
    # an endpoint's or the proxy's password: out of everything returned, the echo of the arguments included
    module.no_log_values.update(math_data.hidden_values(module.params))
    try:
        result = math_data.module_build(module.params, module.check_mode)
    except (math_data.DataError, proxy.ProxyError) as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
