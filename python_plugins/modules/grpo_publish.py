#!/usr/bin/python
# -*- coding: utf-8 -*-

DOCUMENTATION = r"""
---
module: grpo_publish
short_description: Upload a merged, evaluated step to the Hugging Face hub (or a mirror) with its model card
description:
  - Picks an evaluated step from the eval stage's reports (C(<eval_dir>/reports/<run_name>-step_N.json); the newest,
    or I(step)) and its merged Hugging Face folder, refusing a step that was not evaluated or whose folder changed
    since, naming the eval stage's command to run first.
  - Writes the model card (C(README.md), YAML front matter with base_model, datasets, metrics and the scores; the
    base and trained scores, the reference figures with their source, the run's settings) from the report and the
    run's spec, and uploads every file that the repository does not hold already (compared by LFS sha256 or git
    blob id) with huggingface_hub (C(create_repo), C(create_commit)), so a second run uploads nothing.
  - A repository that exists without the marker C(.grpo-publish.json) was not made by this module and is refused
    unless I(allow_foreign). The marker goes up first, alone, so an upload cut off later is resumed by the next run
    (LFS objects the server holds are not sent again).
  - The token is an option that is never logged (C(token)); it reaches huggingface_hub in this process, never a
    command line or the environment of another process. The module sets C(HF_ENDPOINT) to I(endpoint),
    C(HF_HUB_DISABLE_XET=1) (plain LFS) and I(env) (a proxy) in its own process before huggingface_hub loads.
  - Supports check mode (says what it would upload, uploads nothing) and diff.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  token:
    description: A token with write access to I(repo_id) (never logged).
    type: str
    default: ""
  env:
    description: Environment for huggingface_hub in this process (the site's proxy); never logged.
    type: dict
    default: {}
  eval_dir:
    description: The eval stage's folder (its reports are in C(reports/)).
    type: path
    required: true
  run_name:
    description: The run's report name, C(<project>-<experiment>).
    type: str
    required: true
  step:
    description: The step to publish; 0 the newest evaluated one.
    type: int
    default: 0
  repo_id:
    description: The model repository, C(owner/name).
    type: str
    required: true
  endpoint:
    description: The hub or a mirror.
    type: str
    default: https://huggingface.co
  private:
    description: Create the repository private (an existing one is left as it is).
    type: bool
    default: false
  allow_foreign:
    description: Publish into a repository that exists without the marker (not made by this module).
    type: bool
    default: false
  base_model:
    description: The base model's hub id for the card's front matter (empty, none).
    type: str
    default: ""
  datasets:
    description: The training data's hub ids for the card's front matter.
    type: list
    elements: str
    default: []
  run_spec:
    description: The train stage's run spec (C(<state_dir>/run-spec.json)); the card shows its settings.
    type: path
  eval_step:
    description: The eval stage's setting of the step to evaluate, named in the command a refusal prints (an option
      only to be named through I(setting_names)).
    type: str
    default: eval_step
  threads:
    description: How many LFS objects are sent at once.
    type: int
    default: 1
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Publish the newest evaluated step
  grpo_publish:
    eval_dir: /data/grpo/eval
    run_name: verl_grpo_example_math-qwen2_5_1_5b_function_rm
    repo_id: me/qwen2.5-1.5b-grpo-math
    token: "{{ my_token }}"
"""

RETURN = r"""
step:
  description: The step published.
  type: int
  returned: always
repo_id:
  description: The repository.
  type: str
  returned: always
created:
  description: Whether the repository was (or, in check mode, would be) created.
  type: bool
  returned: always
uploaded:
  description: The files uploaded (in check mode, that would be).
  type: list
  elements: str
  returned: always
unchanged:
  description: The files the repository holds already.
  type: list
  elements: str
  returned: always
record:
  description: What the stage hands on (repository, endpoint, step, merged folder, commit); no token.
  type: dict
  returned: success
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.publish import model_publish


def main():
    module = AnsibleModule(
        argument_spec=dict(
            eval_dir=dict(type="path", required=True),
            run_name=dict(type="str", required=True),
            step=dict(type="int", default=0),
            repo_id=dict(type="str", required=True),
            endpoint=dict(type="str", default="https://huggingface.co"),
            private=dict(type="bool", default=False),
            allow_foreign=dict(type="bool", default=False),
            base_model=dict(type="str", default=""),
            datasets=dict(type="list", elements="str", default=[]),
            run_spec=dict(type="path"),
            eval_step=dict(type="str", default="eval_step"),
            threads=dict(type="int", default=1),
            inventory=dict(type="str", default=""),
            token=dict(type="str", default="", no_log=True),
            env=dict(type="dict", default={}, no_log=True),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    # huggingface_hub reads its endpoint (and Xet's switch, the proxy) from the environment once, at import: set in
    # this process only, never on a command line
    os.environ.update({str(k): str(v) for k, v in module.params["env"].items()})
    os.environ["HF_ENDPOINT"] = module.params["endpoint"].rstrip("/")
    os.environ["HF_HUB_DISABLE_XET"] = "1"
    try:
        import huggingface_hub  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        module.fail_json(msg="huggingface_hub is not importable here: run this module with the stack's Python "
                             "(the deps stage installs huggingface_hub there)")
    try:
        result = model_publish.publish(module.params, check_mode=module.check_mode)
    except errors.StageFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
