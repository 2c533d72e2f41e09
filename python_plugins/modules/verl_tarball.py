#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: prove a verl source tarball is the commit asked for, before anything is unpacked."""

DOCUMENTATION = r"""
---
module: verl_tarball
short_description: Prove that a verl source tarball is the commit asked for
description:
  - Reads a C(.tar.gz) of verl's source as a stream, without extracting it, and proves it is verl at C(commit)
    before the deps stage moves, unpacks or replaces anything.
  - The proof is the commit id C(git archive) stores in the tar's pax global header (what
    C(git get-tar-commit-id) prints), which must equal C(commit); or, when C(sha256) is given (for tarballs not
    made by git archive), the file's sha256, which must equal it. A tarball with a different commit id is refused
    even when its sha256 matches; a tarball with neither a commit id nor C(sha256) is refused.
  - A missing or unreadable file, one that is not gzip, a truncated archive, or one without C(verl/__init__.py)
    at its top or under one top folder is refused. Messages name I(path), I(commit) and I(sha256) by the settings
    I(setting_names) maps them to (the deps stage's C(deps_pinning_verl_tarball), C(deps_pinning_verl_version),
    C(deps_pinning_verl_tarball_sha256)).
  - Read-only, so it runs the same in check mode; never reports a change.
options:
  path:
    description: The tarball, a file in the environment the module runs in.
    type: path
    required: true
  commit:
    description: The full commit (40 hexadecimal characters) the tarball must be.
    type: str
    required: true
  sha256:
    description:
      - The sha256 the file must have (64 hexadecimal characters, C(sha256:) prefix allowed). Empty for none.
      - Needed for a tarball without a commit id.
    type: str
    default: ""
  origin:
    description: The URL the file was downloaded from, named in messages. Empty for a local file.
    type: str
    default: ""
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Prove the tarball is verl 634bd935
  verl_tarball:
    path: /upstream/verl-634bd9352bfd21df3abab2dcfb86deb91f04c1ba.tar.gz
    commit: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba
  register: proof

- name: A tarball not made by git archive, proven by its published sha256
  verl_tarball:
    path: /data/grpo/.grpo/dl/verl-src.tar.gz
    commit: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba
    sha256: 8c818591150f3520f40a0eda5aada0514edbd0c04bda3e4477d2396816749f4d
    origin: https://mirror.example.com/verl-src.tar.gz
"""

RETURN = r"""
tarball:
  description: The tarball read.
  returned: always
  type: str
  sample: /upstream/verl-634bd9352bfd21df3abab2dcfb86deb91f04c1ba.tar.gz
commit:
  description: The commit id git archive stored in the tarball (null without one).
  returned: success
  type: str
  sample: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba
sha256:
  description: The file's sha256.
  returned: success
  type: str
  sample: 8c818591150f3520f40a0eda5aada0514edbd0c04bda3e4477d2396816749f4d
proof:
  description: What proved it, C(commit), C(sha256) or C(commit and sha256).
  returned: success
  type: str
  sample: commit
entries:
  description: How many members the archive has.
  returned: success
  type: int
  sample: 1154
strip_components:
  description: The C(tar --strip-components) that puts C(verl/__init__.py) at the top of the destination (1 for
    C(git archive --prefix=DIR/), 0 for an archive without a top folder).
  returned: success
  type: int
  sample: 1
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.deps import verl_checkout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            commit=dict(type="str", required=True),
            sha256=dict(type="str", default=""),
            origin=dict(type="str", default=""),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    module.no_log_values.update(verl_checkout.tarball_credentials(module.params))
    try:
        result = verl_checkout.tarball_step(module.params)
    except verl_checkout.ModuleFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
