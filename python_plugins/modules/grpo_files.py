#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: folders and rendered files in the workspace, in one call."""

DOCUMENTATION = r"""
---
module: grpo_files
short_description: Make folders, write rendered files (keeping a former copy) and leave stage records in one call
description:
  - Makes each folder of I(dirs) (with its parents), then writes each file of I(files) whose content differs,
    atomically (a reader never sees half a file). With C(backup), a former copy (perhaps edited by someone) is kept
    as C(<path>.bak-<time>) first.
  - With I(records), leaves stage records in I(state_dir) as M(grpo_handover) does (C(<state_dir>/<stage>.json)).
  - One call for what would otherwise be a folder task, a template task per file and a record task (each a round
    trip to the training environment); the content is rendered on the controller
    (C(lookup('ansible.builtin.template', ...))).
  - Supports check mode (writes nothing, says what would change) and diff.
options:
  dirs:
    description: Folders to make.
    type: list
    elements: path
    default: []
  files:
    description: Files to write, each with C(path), C(content), C(mode) (octal string, default 0644) and C(backup).
    type: list
    elements: dict
    default: []
  records:
    description: Stage records to leave, by stage (C(train), ...), in I(state_dir) (which they then require).
    type: dict
  state_dir:
    description: The workspace's state folder (C(<workspace>/.grpo)), for I(records).
    type: path
  root:
    description:
      - A folder above every folder and file given (the workspace), trusted as it is. Each folder below it is then
        reached without following a link, and a link there (one made from inside the training environment, say)
        fails naming it, with nothing made or written through it. Without it, only the files themselves may not be
        links.
    type: path
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: The run folder and its script
  grpo_files:
    dirs: [/data/grpo/runs/p/e/logs]
    files:
      - path: /data/grpo/runs/p/e/run_grpo.sh
        content: "{{ lookup('ansible.builtin.template', 'run_grpo.sh.j2') }}"
        mode: "0755"
        backup: true
"""

RETURN = r"""
files:
  description: Per file, its path, whether it changed, its sha1 (as ansible.builtin.copy reports it) and the backup.
  returned: always
  type: list
  elements: dict
  sample: [{path: /data/grpo/runs/p/e/run_grpo.sh, changed: false, checksum: 2c26b46b..., backup: null}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import file_writes


def main():
    module = AnsibleModule(
        argument_spec=dict(dirs=dict(type="list", elements="path", default=[]),
                           files=dict(type="list", elements="dict", default=[]),
                           records=dict(type="dict"), state_dir=dict(type="path"), root=dict(type="path")),
        required_by={"records": ["state_dir"]},
        supports_check_mode=True,
    )
    try:
        result = file_writes.write_all(module.params, module.check_mode,
                                       module._diff)  # pylint: disable=protected-access
    except file_writes.WriteFailed as err:
        module.fail_json(msg=err.msg, **err.result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
