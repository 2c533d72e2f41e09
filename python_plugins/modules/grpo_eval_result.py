#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: find a kept OpenCompass result for a model, or read and keep what OpenCompass just wrote."""

DOCUMENTATION = r"""
---
module: grpo_eval_result
short_description: Keep OpenCompass results by what decides them, and read OpenCompass's own result files
description:
  - A result is named by a key made of the model's files (names, sizes, times of its weights, config and
    tokenizer), the sha256 of the problems file and the evaluation settings. The same model, problems and settings
    give the same key, so a rerun finds the kept result and OpenCompass does not run again.
  - C(state=query) (read-only) returns the kept result when there is one, else the folder OpenCompass should work
    in. C(state=collected) reads OpenCompass's result file (C(<work_dir>/<time>/results/<abbr>/<dataset>.json))
    and its summary CSV, checks they agree, and keeps the figures with the file's path and sha256.
  - C(state=reported) writes the report files (C(<report_dir>/<report_name>.<ext>), one per entry of
    I(reports)) in one call, each only when its content differs, atomically (a reader never sees half a report).
  - Supports check mode.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  name:
    description: Which model this is in the report (base or trained). Required by query and collected.
    type: str
  model_dir:
    description: The Hugging Face model folder evaluated. Required by query and collected.
    type: path
  model:
    description: What to call the model in the report (a hub id, or a checkpoint step). Required by query and collected.
    type: str
  data_file:
    description: The problems (OpenCompass's math.json). Required by query and collected.
    type: path
  settings:
    description: The evaluation settings that decide the result (output length, batch size, limit, kwargs).
      Required by query and collected.
    type: dict
  report_name:
    description: The report files' name without extension (state=reported).
    type: str
  reports:
    description: The report's text by file extension, for example md and json (state=reported).
    type: dict
  report_dir:
    description: Where the report files go (state=reported; default C(<eval_dir>/reports)).
    type: path
  eval_dir:
    description: The eval stage's folder (kept results in C(results/), OpenCompass runs in C(opencompass/)).
    type: path
    required: true
  dataset:
    description: The dataset's abbreviation in OpenCompass's result files.
    type: str
    default: math
  trust_remote_code:
    description: Accept a model folder that carries code (an C(auto_map) in its config or tokenizer config, C(*.py)
      files). Off (query and collected), such a folder is refused, naming the files, before OpenCompass loads it.
    type: bool
    default: false
  state:
    description: query, collected or reported.
    type: str
    choices: [query, collected, reported]
    default: query
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Look for the base model's kept result
  grpo_eval_result:
    name: base
    model_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct
    model: Qwen/Qwen2.5-1.5B-Instruct
    data_file: /data/grpo/data/math/math.json
    settings: {max_out_len: 1024, batch_size: 16}
    eval_dir: /data/grpo/eval
  register: base
"""

RETURN = r"""
found:
  description: Whether a kept result answers (state=query).
  returned: always
  type: bool
key:
  description: The result's key.
  returned: always
  type: str
work_dir:
  description: The folder OpenCompass works in for this key.
  returned: always
  type: str
kept:
  description: The kept result's file.
  returned: always
  type: str
result:
  description: accuracy (0-100), problems, correct, result_file, result_sha256, model, evaluated_at, settings.
  returned: when found or collected
  type: dict
paths:
  description: The report files, by extension (state=reported).
  returned: state=reported
  type: dict
  sample: {md: /data/grpo/eval/reports/p-e-step_2.md, json: /data/grpo/eval/reports/p-e-step_2.json}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.eval import result_store

MODEL_OPTIONS = ["name", "model_dir", "model", "data_file", "settings"]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str"),
            model_dir=dict(type="path"),
            model=dict(type="str"),
            data_file=dict(type="path"),
            settings=dict(type="dict"),
            eval_dir=dict(type="path", required=True),
            dataset=dict(type="str", default="math"),
            state=dict(type="str", default="query", choices=["query", "collected", "reported"]),
            report_name=dict(type="str"),
            reports=dict(type="dict"),
            report_dir=dict(type="path"),
            inventory=dict(type="str", default=""),
            trust_remote_code=dict(type="bool", default=False),
            setting_names=dict(type="dict", default={}),
        ),
        required_if=[("state", "query", MODEL_OPTIONS), ("state", "collected", MODEL_OPTIONS),
                     ("state", "reported", ["report_name", "reports"])],
        supports_check_mode=True,
    )
    try:
        result = result_store.eval_result(module.params, module.check_mode)
    except result_store.EvalError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
