"""Folders, text files and stage records written under the workspace: the ``grpo_files`` module's work as plain
Python.

Check mode and a diff of each change; folders below ``root`` are made through :func:`workspace.make_folders`,
files written through :func:`workspace.write_text`, records through :func:`workspace.write_record`.
"""

import hashlib
import json
import os

from . import workspace
from .errors import StageFailure


class WriteFailed(StageFailure):
    """A folder, file or record that cannot be made, or a bad spec: ``msg`` says which; ``result`` holds the
    files written before it (when any was tried)."""


def _folder_diff(folder):
    return {"before_header": folder, "after_header": folder, "before": "", "after": "(folder)\n"}


def write_all(p, check_mode, want_diff):
    """One call of the ``grpo_files`` module (``p``: its arguments): the result for ``exit_json``, or WriteFailed.
    Folders first, then files, then records, in that order; ``want_diff``: the module's ``_diff``."""
    changed, out, diffs = False, [], []
    for folder in p["dirs"]:
        if p["root"]:
            try:
                made = workspace.make_folders(p["root"], folder, check_mode=check_mode)
            except (OSError, ValueError) as err:
                raise WriteFailed("%s cannot be made: %s" % (folder, getattr(err, "strerror", None) or err),
                                  {"files": out})
            if made:
                changed = True
                diffs.append(_folder_diff(folder))
        elif not os.path.isdir(folder):
            changed = True
            diffs.append(_folder_diff(folder))
            if not check_mode:
                os.makedirs(folder, mode=0o755, exist_ok=True)
    for spec in p["files"]:
        if not isinstance(spec.get("path"), str) or not isinstance(spec.get("content"), str):
            raise WriteFailed("each of files needs a path and a content (text): %r" % sorted(spec))
        path, text = os.path.expanduser(spec["path"]), spec["content"]
        try:
            mode = int(str(spec.get("mode") or "0644"), 8)
        except ValueError:
            raise WriteFailed("%s: mode %r is not an octal number such as 0644" % (path, spec.get("mode")))
        before = None
        if want_diff and os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                before = handle.read()
        try:
            did, kept = workspace.write_text(path, text, mode, bool(spec.get("backup")), check_mode,
                                             root=p["root"])
        except (OSError, ValueError) as err:
            raise WriteFailed("%s cannot be written: %s" % (path, getattr(err, "strerror", None) or err),
                              {"files": out})
        changed = changed or did
        if did and want_diff:
            diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": text})
        out.append({"path": path, "changed": did, "backup": kept,
                    "checksum": hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()})
    for stage, record in sorted((p["records"] or {}).items()):
        if stage not in workspace.STAGES or not isinstance(record, dict):
            raise WriteFailed("records: %r is not a stage's record (stages: %s; a record is a mapping)" % (
                stage, ", ".join(workspace.STAGES)))
        record = json.loads(json.dumps(record))
        try:
            wrote = workspace.write_record(p["state_dir"], stage, record, check_mode)
        except OSError as err:
            raise WriteFailed(str(err), {"files": out})
        if wrote:
            changed = True
            diffs.append({"before_header": workspace.record_path(p["state_dir"], stage),
                          "after_header": workspace.record_path(p["state_dir"], stage), "before": "",
                          "after": json.dumps(record, indent=2, sort_keys=True) + "\n"})
    return dict(changed=changed, files=out, diff=diffs)
