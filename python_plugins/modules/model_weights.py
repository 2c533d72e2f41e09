#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: say what it takes to have a complete model folder (the plan the weights job carries out)."""

DOCUMENTATION = r"""
---
module: model_weights
short_description: Plan fetching a model's weights (hub, ModelScope or local folder) and check bad input first
description:
  - Looks at the destination's manifest and files and at the source, and returns what to do, C(none) (complete,
    every file the manifest lists is there with its size; no network is used), C(download), C(copy) or C(record)
    (a local folder used in place). It changes nothing; the fetch runs as a detached job (C(grpo_job)) from the plan.
  - Fails, naming the option at fault in C(field) (and its setting, I(setting_names), in the message), on a
    repository or revision the hub does not have, a gated repository without a token, an unreachable endpoint, or a
    local folder without config, weights or tokenizer.
  - Fails (C(field=trust_remote_code)) on a model that would run code of its own when loaded, naming the files (an
    C(auto_map) in C(config.json) or C(tokenizer_config.json), C(*.py) files; in the local folder, in the hub's files
    the patterns allow, or in a complete destination), unless I(trust_remote_code) is true.
options:
  source:
    description: Where the weights come from.
    type: str
    choices: [hf, modelscope, local]
    default: hf
  dest:
    description: The model folder in the workspace.
    type: path
    required: true
  repo:
    description: The repository id (hub or ModelScope).
    type: str
  revision:
    description: Branch, tag or commit.
    type: str
    default: main
  local_dir:
    description: With C(source=local), the folder to take the model from (may be C(dest) itself).
    type: path
  endpoint:
    description: The hub's address (a mirror, say); default huggingface_hub's own (C(HF_ENDPOINT) or huggingface.co).
    type: str
  token:
    description: A hub token for private or gated repositories.
    type: str
  allow:
    description: File patterns to fetch (what training needs by default).
    type: list
    elements: str
  refresh:
    description: Ask the source again even when the folder is complete for the same request (a moved branch).
    type: bool
    default: false
  trust_remote_code:
    description: Accept a model that carries code (the user trusts its source); the plan hands it on to the fetch.
    type: bool
    default: false
extends_documentation_fragment:
  - grpo_setting_names
  - grpo_proxy
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Plan the weights
  model_weights:
    repo: Qwen/Qwen2.5-1.5B-Instruct
    dest: /data/grpo/models/Qwen2.5-1.5B-Instruct
    endpoint: https://hf-mirror.com
  register: plan
"""

RETURN = r"""
fetch:
  description: none, download, copy or record (each module names its plan's key by its verb; Ansible claims
    C(action)).
  returned: success
  type: str
reason:
  description: Why, in words.
  returned: success
  type: str
commit:
  description: The commit the hub resolved the revision to (hub only).
  returned: success
  type: str
files:
  description: The files (name to size in bytes) a complete folder has.
  returned: success
  type: dict
missing:
  description: Files to fetch.
  returned: when a fetch is needed
  type: list
trust_remote_code:
  description: Whether a model that carries code is accepted (the fetch checks the folder again before it is complete).
  returned: success
  type: bool
field:
  description: On failure, the option at fault (repo, revision, token, endpoint, local_dir, dest, allow,
    trust_remote_code).
  returned: failure
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.assets import weights
from ansible.module_utils.ascend_grpo.common import errors, proxy


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", choices=["hf", "modelscope", "local"], default="hf"),
            dest=dict(type="path", required=True),
            repo=dict(type="str"),
            revision=dict(type="str", default="main"),
            local_dir=dict(type="path"),
            endpoint=dict(type="str"),
            token=dict(type="str", no_log=True),
            allow=dict(type="list", elements="str"),
            refresh=dict(type="bool", default=False),
            trust_remote_code=dict(type="bool", default=False),
            proxy=dict(type="dict", default={}, no_log=True),
            setting_names=dict(type="dict", default={}),
        ),
        required_if=[("source", "hf", ["repo"]), ("source", "modelscope", ["repo"]),
                     ("source", "local", ["local_dir"])],
        supports_check_mode=True,
    )
    # an endpoint's or the proxy's password: out of everything returned, the echo of the arguments included
    module.no_log_values.update(weights.hidden_values(module.params))
    try:
        result = weights.module_plan(module.params)
    except (weights.WeightsError, proxy.ProxyError) as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
