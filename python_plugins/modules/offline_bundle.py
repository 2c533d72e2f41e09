#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: the offline bundle's manifest, written on the exporting host or checked before use."""

DOCUMENTATION = r"""
---
module: offline_bundle
short_description: Write an offline bundle's manifest (sizes and sha256s), or check a bundle against it
description:
  - An offline bundle is a folder (C(wheels/), C(verl/), C(model/), C(data/), C(sample/), C(image/)) that
    C(--tags export) fills on a connected host, for a host with no network.
  - C(state=present) lists every plain file of the bundle in C(MANIFEST.json) (size and sha256) and writes the same
    sums as C(SHA256SUMS), so C(cd bundle && sha256sum -c SHA256SUMS) checks a copy by hand. A symbolic link or any
    other non-regular file in the bundle is refused. Changed when C(MANIFEST.json) changes.
  - C(state=verified) checks the members of the parts asked for; a missing member, one of another size or sha256,
    a file the manifest does not list and a link are each named with what to do, all at once. Never a change.
  - With I(memo), a file outside the bundle remembers the stat of each member proven, so a rerun does not hash
    gigabytes again; the memo trusts a file's size, mtime, ctime, inode and device, and the first check on a host
    hashes every member it checks.
  - Supports check mode. C(present) hashes and reports what it would write, C(verified) checks as ever but writes
    no memo.
extends_documentation_fragment:
  - grpo_setting_names
options:
  path:
    description: The bundle's folder.
    type: path
    required: true
  state:
    description: C(present) writes the manifest of what the folder holds; C(verified) checks the folder against it.
    type: str
    choices: [present, verified]
    default: verified
  parts:
    description: The top-level folders to check (C(wheels), C(model), ...); all the manifest holds when not given.
    type: list
    elements: str
  memo:
    description: A JSON file outside the bundle remembering the members already proven (written mode 0600, never
      through a symbolic link).
    type: path
  meta:
    description: What the manifest says about the export (the stack, the commit, the model; for C(present)).
    type: dict
    default: {}
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Write the bundle's manifest once the export filled it
  offline_bundle:
    path: /data/grpo-bundle
    state: present
    meta:
      stack: vllm0.13.0

- name: Check the wheels before pip reads them
  offline_bundle:
    path: /data/grpo-bundle
    parts: [wheels]
    memo: /data/grpo/.grpo/offline-bundle-memo.json
"""

RETURN = r"""
path:
  description: The bundle's folder.
  returned: always
  type: str
members:
  description: How many members the manifest lists (present), or how many were checked (verified).
  returned: always
  type: int
bytes:
  description: The members' total size (present), or the checked members' (verified).
  returned: always
  type: int
parts:
  description: Per top-level folder its files and bytes (present); the parts checked (verified).
  returned: always
  type: raw
meta:
  description: The manifest's meta.
  returned: always
  type: dict
hashed:
  description: How many members were hashed this time (the others were proven by the memo).
  returned: when state is verified
  type: int
bytes_hashed:
  description: How many bytes were hashed this time.
  returned: when state is verified
  type: int
manifest_sha256:
  description: The sha256 of C(MANIFEST.json).
  returned: when state is verified
  type: str
problems:
  description: Every problem found (the message names the first ten).
  returned: on a failed check
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.bundle import offline_manifest
from ansible.module_utils.ascend_grpo.common import errors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", choices=["present", "verified"], default="verified"),
            parts=dict(type="list", elements="str"),
            memo=dict(type="path"),
            meta=dict(type="dict", default={}),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = offline_manifest.run(module.params, module.check_mode)
    except errors.StageFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
