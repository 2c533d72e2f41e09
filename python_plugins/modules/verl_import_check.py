#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: resolve, without importing, every import of the accelerator stack in a verl tree."""

DOCUMENTATION = r"""
---
module: verl_import_check
short_description: Check statically that verl's imports of vllm, vllm_ascend, transformers and torch_npu resolve
description:
  - Resolves each import of the watched packages in the verl tree against the installed packages (this
    Python's site-packages, or given folders) by reading files, never importing them.
  - Imports of verl itself are resolved in the tree (a name moved to a helper that does not define it is caught),
    and relative imports as Python resolves them; the default path is the modules Python loads when the entries are
    imported (module-level imports, closed over).
  - Lists every unresolved import with file:line, when it runs (on import, on call, guarded) and whether verl's
    default path reaches it. Fails when the default path has any; imports under optional paths are reported and
    fail only when C(enable_optional) is true.
  - A name the imported module creates only at run time (torch_npu makes its C(npu_*) ops with
    C(globals()[name] = ...)) cannot be proven either way, so it is listed as C(unverifiable), never passed or
    failed.
  - A file of the tree that Python could not load (a syntax error, a byte that is not UTF-8) is a finding too.
  - With I(state_dir), the answer is kept with a fingerprint of what it depends on (every .py file of the tree by
    size and time, the installed distributions, the settings); a rerun with nothing changed returns it at once.
  - Changes nothing but that kept answer (not in check mode).
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
  paths:
    description: Package folders to resolve against (default this Python's site-packages).
    type: list
    elements: path
    default: []
  watched:
    description: Top-level packages whose imports are checked.
    type: list
    elements: str
    default: [vllm, vllm_ascend, transformers, torch_npu]
  entries:
    description: verl modules that make up the default path (closed over their module-level imports).
    type: list
    elements: str
    required: true
  optional:
    description: Paths (relative to root) or module prefixes of optional features (async server, LoRA).
    type: list
    elements: str
    default: []
  enable_optional:
    description: Treat the optional paths as used (their unresolved imports fail the check).
    type: bool
    default: false
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Check verl's imports against the installed stack
  verl_import_check:
    root: /data/grpo/verl
    entries: [verl.trainer.main_ppo, verl.workers.fsdp_workers]
"""

RETURN = r"""
cached:
  description: Whether the answer is the last check's, kept in C(<state_dir>/compat-check.json) because nothing it
    depends on changed (the tree's files, the installed distributions, the settings).
  returned: always
  type: bool
unresolved:
  description:
    - Every finding, one per import (file, line, module, missing, unverifiable, when, default_path, optional).
    - C(missing) holds C(*module*) when the module itself is not there, C(*does not parse*) for a file Python could
      not load (with C(error)); C(unverifiable) the names created at run time.
  returned: always
  type: list
  elements: dict
lines:
  description: 'One line per finding, C(file:line module: what (when[, default path][, optional])).'
  returned: always
  type: list
  elements: str
  sample: ["verl/models/transformers/npu_patch.py:21 torch_npu: unverifiable: created at run time: npu_rotary_mul (on import, default path)"]
reached:
  description:
    - The verl modules the default path loads (the entries closed over their module-level imports), sorted.
    - On the simulated host this equals what Python itself loads, bar the modules only an accelerator loads.
  returned: always
  type: list
  elements: str
paths:
  description: The package folders the imports were resolved against.
  returned: always
  type: list
  elements: str
blocking:
  description: The unresolved imports that fail the check.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.patch import import_check, import_verdict


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default=""),
            state_dir=dict(type="path", default=""),
            paths=dict(type="list", elements="path", default=[]),
            watched=dict(type="list", elements="str", default=list(import_check.WATCHED)),
            entries=dict(type="list", elements="str", required=True),
            optional=dict(type="list", elements="str", default=[]),
            enable_optional=dict(type="bool", default=False),
            inventory=dict(type="str", default=""),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = import_verdict.verdict(module.params, module.check_mode)
    except import_verdict.ImportsBlocked as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
