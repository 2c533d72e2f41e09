#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: apply AST-guided source patches to a verl tree."""

DOCUMENTATION = r"""
---
module: verl_patch
short_description: Apply AST-guided source patches (a profile's operations) to a verl source tree
description:
  - Each operation finds what it changes with Python's ast and edits exactly those spans; every other byte of the
    file stays as it was.
  - Each operation knows three states, original (applied now), already applied (nothing to do) and neither
    (the module fails naming profile, file, line and what was expected, and writes no file at all).
  - A patched file must parse and byte-compile, or nothing is written. Supports check mode and diff.
extends_documentation_fragment:
  - grpo_inventory
  - grpo_setting_names
options:
  root:
    description:
      - The folder that holds the C(verl) package (the verl source tree).
      - Empty (the default) means the tree the deps stage installed, as its record C(<state_dir>/deps.json) names it.
    type: path
    default: ""
  state_dir:
    description: The workspace's state folder (C(<workspace>/.grpo)), where the deps stage's record is.
    type: path
    default: ""
  operations:
    description:
      - The operations (op, file and the fields of that op); content already resolved.
      - Several profiles go in one call, in order, each operation labelled with its profile's name in C(profile).
        Each then sees the text the ones before it leave (in check mode too, where nothing is written), and the
        states are reported per profile.
    type: list
    elements: dict
    required: true
  enable_optional:
    description:
      - Apply the operations marked C(optional) too (those for optional paths such as the async server). Without
        it they are left as they are and reported as C(optional, not enabled).
    type: bool
    default: false
  verl_source:
    description:
      - Not read. A profile that does not fit the tree is refused with a hint to check where the tree came from;
        the hint names this option, which I(setting_names) maps to the setting that chose the tree's source.
    type: raw
  verl_version:
    description:
      - Not read. Named, like I(verl_source), in that hint, for the setting that chose the tree's version.
    type: raw
notes:
  - Every operation is tried; when any fails, the module fails listing all of them (one line each, in C(problems)),
    and no file is written. A file that is not UTF-8 or does not parse is such a problem, never a crash.
  - A patched file keeps its permission bits and owner.
  - Fails, changing nothing, when I(root) holds no C(verl/__init__.py), naming the fix.
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Patch verl for vLLM 0.13.0
  verl_patch:
    root: /data/grpo/verl
    operations: "{{ profile.operations | patch_operations(playbook_dir ~ '/../files') }}"
"""

RETURN = r"""
root:
  description: The verl tree patched (I(root), or the one the deps stage's record names).
  returned: success
  type: str
  sample: /data/grpo/verl
files:
  description: Per file, whether it changed (or would, in check mode) and each operation's state.
  returned: always
  type: list
  elements: dict
  sample: [{file: verl/workers/actor/dp_actor.py, changed: true, states: [original]}]
profiles:
  description: Per profile label (in order), whether it had anything to change and its own states per file.
  returned: always
  type: list
  elements: dict
  sample: [{profile: cpu-overlay, changed: true, files: [{file: verl/utils/device.py, states: [original, original]}]}]
problems:
  description: On failure, every problem found (profile, file, line and what was expected), one per entry.
  returned: failure
  type: list
  elements: str
  sample: ["vllm0.13.0: verl/utils/vllm/utils.py: expected an import from vllm.lora.models (or, patched, from vllm.lora.lora_model)"]
lines:
  description: 'One line per profile and file, C(<profile> | <file>: <states>) (without C(<profile> | ) for
    unlabelled operations).'
  returned: always
  type: list
  elements: str
  sample: ["vllm0.13.0 | verl/workers/fsdp_workers.py: applied", "cpu-overlay | verl/workers/fsdp_workers.py: original"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.patch import profile_apply


def main():
    module = AnsibleModule(
        argument_spec=dict(root=dict(type="path", default=""),
                           state_dir=dict(type="path", default=""),
                           operations=dict(type="list", elements="dict", required=True),
                           enable_optional=dict(type="bool", default=False),
                           inventory=dict(type="str", default=""),
                           # named in a refusal only (see DOCUMENTATION), never read
                           verl_source=dict(type="raw"), verl_version=dict(type="raw"),
                           setting_names=dict(type="dict", default={})),
        supports_check_mode=True,
    )
    try:
        result = profile_apply.apply(module.params, module.check_mode)
    except profile_apply.PatchRefused as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
