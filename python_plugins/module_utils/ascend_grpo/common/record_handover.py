"""Stages hand results on through small JSON records in the state folder: the ``grpo_handover`` module's work as
plain Python (read the records a stage needs, write the one it owns, with a diff of what changed).
"""

import json
import os

from . import workspace
from .errors import StageFailure


class HandoverFailed(StageFailure):
    """A required record is missing, or the record cannot be written: ``msg`` says which and what to run;
    ``result`` is what was read before it."""


def handover(p, check_mode, want_diff):
    """One call of the ``grpo_handover`` module (``p``: its arguments): the result for ``exit_json``, or
    HandoverFailed. A missing record of ``p["optional"]`` is listed in ``missing`` instead of failing."""
    result = dict(changed=False, records={}, missing=[])
    missing = []
    for stage in p["read"]:
        try:
            result["records"][stage] = workspace.read_record(p["state_dir"], stage, p["inventory"])
        except workspace.MissingRecord as err:
            (result["missing"] if stage in p["optional"] else missing).append(str(err))
    if missing:
        raise HandoverFailed(" ".join(missing), result)
    if p["stage"]:
        path = workspace.record_path(p["state_dir"], p["stage"])
        try:  # before the record is read for the diff: a linked one is not read either
            workspace.refuse_links(os.path.dirname(os.path.abspath(p["state_dir"])), path)
        except workspace.LinkedPath as err:
            raise HandoverFailed(str(err), result)
        before = workspace.read_json(path)
        # what a reader would get back: JSON's view of the values (tuples as lists, keys as strings)
        record = json.loads(json.dumps(p["record"]))
        result["path"] = path
        try:
            result["changed"] = workspace.write_record(p["state_dir"], p["stage"], record, check_mode)
        except workspace.LinkedPath as err:  # a linked state folder or record: refused, nothing written
            raise HandoverFailed(str(err), result)
        if result["changed"] and want_diff:
            result["diff"] = {"before_header": path, "after_header": path,
                              "before": json.dumps(before, indent=2, sort_keys=True) + "\n" if before else "",
                              "after": json.dumps(record, indent=2, sort_keys=True) + "\n"}
    return result
