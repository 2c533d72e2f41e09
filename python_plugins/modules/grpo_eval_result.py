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

import os

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.assets import weights
from ansible.module_utils.ascend_grpo.common import rerun, workspace
from ansible.module_utils.ascend_grpo.eval import checkpoint_pick, result_report

MODEL_OPTIONS = ["name", "model_dir", "model", "data_file", "settings"]


def report(module, p):
    """Write each report file that differs; in check mode say which would change."""
    folder = p["report_dir"] or os.path.join(p["eval_dir"], "reports")
    paths, changed = {}, False
    for ext, text in sorted(p["reports"].items()):
        path = paths[ext] = os.path.join(folder, "%s.%s" % (p["report_name"], ext))
        did, _ = workspace.write_text(path, text if text.endswith("\n") else text + "\n",
                                      check_mode=module.check_mode)
        changed = changed or did
    module.exit_json(changed=changed, paths=paths)


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
        ),
        required_if=[("state", "query", MODEL_OPTIONS), ("state", "collected", MODEL_OPTIONS),
                     ("state", "reported", ["report_name", "reports"])],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "reported":
        report(module, p)
    for what, path in (("model folder", os.path.join(p["model_dir"], "config.json")), ("problems", p["data_file"])):
        if not os.path.isfile(path):
            module.fail_json(msg="the %s model's %s %s is missing: run the assets stage (%s)%s." % (
                p["name"], what, path, rerun.command("assets", p["inventory"]),
                ", or set grpo_eval_base_model_dir to a Hugging Face model folder"
                if p["name"] == "base" and what == "model folder" else ""))
    # the folder may have changed since the assets stage or the merge looked at it: looked at again, right before
    # OpenCompass would load it
    problem = weights.remote_code_problem(p["model_dir"], "the %s model" % p["name"], p["trust_remote_code"])
    if problem:
        module.fail_json(msg=problem)
    data_sha = workspace.sha256_file(p["data_file"])
    key = result_report.eval_key(checkpoint_pick.model_fingerprint(p["model_dir"]), data_sha, p["settings"])
    label = "%s-%s" % (p["name"], key)
    kept = os.path.join(p["eval_dir"], "results", label + ".json")
    work_dir = os.path.join(p["eval_dir"], "opencompass", label)
    result = dict(changed=False, key=key, kept=kept, work_dir=work_dir, found=False)
    if p["state"] == "query":
        record = workspace.read_json(kept)
        if isinstance(record, dict) and "accuracy" in record:
            result.update(found=True, result=record)
        module.exit_json(**result)

    try:
        read = result_report.read_result(work_dir, p["dataset"])
    except checkpoint_pick.EvalError as err:
        module.fail_json(msg=str(err), **result)
    if read["problems"] == 0:
        module.fail_json(msg="OpenCompass scored no problem in %s" % read["result_file"], **result)
    if read["summary_accuracy"] is not None and abs(read["summary_accuracy"] - read["accuracy"]) > 0.006:
        module.fail_json(msg="OpenCompass's summary says %.2f but its result file %s says %.4f" % (
            read["summary_accuracy"], read["result_file"], read["accuracy"]), **result)
    if abs(100.0 * read["correct"] / read["problems"] - read["accuracy"]) > 0.006:
        module.fail_json(msg="%s: accuracy %.4f does not match its details (%d of %d correct)" % (
            read["result_file"], read["accuracy"], read["correct"], read["problems"]), **result)
    record = dict(read, name=p["name"], model=p["model"], model_dir=p["model_dir"], key=key,
                  data_file=p["data_file"], data_sha256=data_sha, settings=p["settings"],
                  evaluated_at=read["run"])
    result.update(result=record, changed=True)
    if not module.check_mode:
        workspace.write_json(kept, record)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
