#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: measure the workspace on an NPU host and remove it only when asked and when the package made it."""

DOCUMENTATION = r"""
---
module: workspace_teardown
short_description: Measure a workspace and remove it only when asked and only when the package made it
description:
  - Runs on the NPU host, on the host side of the workspace (what the training container mounts).
  - C(state=check) changes nothing. It measures the workspace as C(du) does (blocks, each file once, no link
    followed) and, with C(remove), refuses a workspace the teardown must not remove, naming C(workspace) and the fix
    - a path with a link in it, C(/) or another folder of the system, a user's home folder or one holding it, or a
    folder with no state folder C(.grpo) of the package (a real folder holding a stage's record, the container
    stage's naming this path).
  - C(state=absent) removes the workspace when C(remove) is true, after the same checks (a link inside it is
    removed, never followed); without C(remove) it keeps it and changes nothing. A workspace that is not there
    changes nothing.
  - Supports check mode and diff.
options:
  workspace:
    description: The workspace on the host (absolute).
    type: str
    required: true
  remove:
    description: Whether the workspace goes. False keeps it (only measured).
    type: bool
    default: false
  state:
    description: C(check) refuses and measures only; C(absent) removes what C(remove) asks for.
    type: str
    choices: [check, absent]
    default: check
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Refuse a workspace the teardown must not remove, before anything is stopped
  workspace_teardown:
    workspace: /data/grpo
    remove: true
    state: check
  register: planned

- name: Remove it
  workspace_teardown:
    workspace: /data/grpo
    remove: true
    state: absent
"""

RETURN = r"""
workspace:
  description: The workspace, normalised.
  returned: always
  type: str
exists:
  description: Whether it was there.
  returned: always
  type: bool
removed:
  description: Whether it was removed (or, in check mode, would be).
  returned: always
  type: bool
size_bytes:
  description: What it took on disk before the removal, as du counts it; 0 when not measured (kept, with
    C(state=absent)).
  returned: always
  type: int
size:
  description: C(size_bytes) for a person (C(93.4 GiB)).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.container import teardown_plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            workspace=dict(type="str", required=True),
            remove=dict(type="bool", default=False),
            state=dict(type="str", choices=["check", "absent"], default="check"),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = teardown_plan.converge(module.params, module.check_mode)
    except teardown_plan.TeardownRefused as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
