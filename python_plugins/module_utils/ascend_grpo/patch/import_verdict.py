"""Whether verl imports, on the path training takes, what the installed stack does not have: the
``verl_import_check`` module's work as plain Python.

It finds the verl tree (given, or the deps stage's record), runs :mod:`import_check` over the site-packages of
this Python (or the paths given), and keeps the answer in ``compat-check.json`` in the state folder with a
fingerprint of everything it depends on, so an unchanged tree and stack are not scanned again. A refusal names the
module's options as ``{field}`` (``{root}``: verl_compat_patch_verl_dir in the patch stage).
"""

import os
import site
import sys

from ..common import workspace
from . import import_check
from ..common.errors import StageFailure


class ImportsBlocked(StageFailure):
    """verl cannot be used as asked: ``msg`` says why; ``result`` is the check's answer (empty without a tree)."""


def site_paths():
    """This Python's package folders (site-packages, dist-packages) in the order it searches them."""
    return [x for x in site.getsitepackages() + sys.path if x.endswith(("site-packages", "dist-packages"))]


def verdict(p, check_mode):
    """One call of the ``verl_import_check`` module (``p``: its arguments): the result for ``exit_json``, or
    ImportsBlocked (no verl tree found, or an import that blocks training). ``p["root"]`` is set to the tree
    found, as the module always did (its invocation shows the folder checked)."""
    try:
        p["root"] = workspace.verl_dir(p["state_dir"], p["root"], p["inventory"])
    except workspace.MissingRecord as err:
        raise ImportsBlocked("%s Or set {root} to the folder that holds verl/." % err)
    paths = p["paths"] or site_paths()
    settings = {k: p[k] for k in ("root", "entries", "watched", "optional", "enable_optional")}
    settings.update(paths=paths, python=sys.version)
    stamp = import_check.fingerprint(p["root"], paths, settings)
    cache = os.path.join(p["state_dir"], "compat-check.json") if p["state_dir"] else None
    kept = workspace.read_json(cache) if cache else None
    if isinstance(kept, dict) and kept.get("fingerprint") == stamp and isinstance(kept.get("result"), dict):
        # nothing the answer depends on changed since the last check: its answer stands
        result = dict(kept["result"], cached=True)
    else:
        unresolved = import_check.check(p["root"], paths, p["entries"], tuple(p["watched"]), tuple(p["optional"]))
        # the scans are cached by check
        reached = sorted(import_check.reachable(import_check.module_files(p["root"]), p["entries"]))
        result = dict(changed=False, unresolved=unresolved,
                      blocking=import_check.blocking(unresolved, p["enable_optional"]),
                      lines=[import_check.describe(u) for u in unresolved], paths=paths, reached=reached, cached=False)
        if cache and not check_mode:
            workspace.write_json(cache, {"fingerprint": stamp, "result": result})
    if result["blocking"]:
        raise ImportsBlocked("verl imports what the installed stack does not have, on the path training takes:\n"
                             + "\n".join(import_check.describe(b) for b in result["blocking"]), result)
    return result
