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

import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import workspace


def main():
    module = AnsibleModule(
        argument_spec=dict(dirs=dict(type="list", elements="path", default=[]),
                           files=dict(type="list", elements="dict", default=[]),
                           records=dict(type="dict"), state_dir=dict(type="path"), root=dict(type="path")),
        required_by={"records": ["state_dir"]},
        supports_check_mode=True,
    )
    p = module.params
    changed, out, diffs = False, [], []
    for folder in p["dirs"]:
        if p["root"]:
            try:
                made = workspace.make_folders(p["root"], folder, check_mode=module.check_mode)
            except (OSError, ValueError) as err:
                module.fail_json(msg="%s cannot be made: %s" % (folder, err.strerror or err), files=out)
            if made:
                changed = True
                diffs.append({"before_header": folder, "after_header": folder, "before": "",
                              "after": "(folder)\n"})
        elif not os.path.isdir(folder):
            changed = True
            diffs.append({"before_header": folder, "after_header": folder, "before": "", "after": "(folder)\n"})
            if not module.check_mode:
                os.makedirs(folder, mode=0o755, exist_ok=True)
    for spec in p["files"]:
        if not isinstance(spec.get("path"), str) or not isinstance(spec.get("content"), str):
            module.fail_json(msg="each of files needs a path and a content (text): %r" % sorted(spec))
        path, text = os.path.expanduser(spec["path"]), spec["content"]
        try:
            mode = int(str(spec.get("mode") or "0644"), 8)
        except ValueError:
            module.fail_json(msg="%s: mode %r is not an octal number such as 0644" % (path, spec.get("mode")))
        before = None
        if module._diff and os.path.isfile(path) and not os.path.islink(path):  # pylint: disable=protected-access
            with open(path, encoding="utf-8", errors="replace") as handle:
                before = handle.read()
        try:
            did, kept = workspace.write_text(path, text, mode, bool(spec.get("backup")), module.check_mode,
                                             root=p["root"])
        except (OSError, ValueError) as err:
            module.fail_json(msg="%s cannot be written: %s" % (path, err.strerror or err), files=out)
        changed = changed or did
        if did and module._diff:  # pylint: disable=protected-access
            diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": text})
        out.append({"path": path, "changed": did, "backup": kept,
                    "checksum": hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()})
    for stage, record in sorted((p["records"] or {}).items()):
        if stage not in workspace.STAGES or not isinstance(record, dict):
            module.fail_json(msg="records: %r is not a stage's record (stages: %s; a record is a mapping)" % (
                stage, ", ".join(workspace.STAGES)))
        record = json.loads(json.dumps(record))
        try:
            wrote = workspace.write_record(p["state_dir"], stage, record, module.check_mode)
        except OSError as err:
            module.fail_json(msg=str(err), files=out)
        if wrote:
            changed = True
            diffs.append({"before_header": workspace.record_path(p["state_dir"], stage),
                          "after_header": workspace.record_path(p["state_dir"], stage), "before": "",
                          "after": json.dumps(record, indent=2, sort_keys=True) + "\n"})
    module.exit_json(changed=changed, files=out, diff=diffs)


if __name__ == "__main__":
    main()
