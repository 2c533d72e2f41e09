"""A patch profile applied to the verl tree: the ``verl_patch`` module's work as plain Python.

It finds the tree (given, or the deps stage's record), refuses a folder without verl/, applies the operations
with :mod:`ast_patch` (all or nothing), and reports each file's states grouped by profile. A refusal names the
module's options as ``{field}`` (``{root}``: verl_compat_patch_verl_dir in the patch stage).
"""

import os

from ..common import rerun, workspace
from . import ast_patch
from ..common.errors import StageFailure


class PatchRefused(StageFailure):
    """No file was changed: ``msg`` says why and what to do; ``result`` holds the problems (and hints)."""


def verl_root(p):
    """The folder that holds verl/: ``p["root"]``, or the deps stage's record of it; PatchRefused otherwise."""
    try:
        root = workspace.verl_dir(p["state_dir"], p["root"], p["inventory"])
    except workspace.MissingRecord as err:
        raise PatchRefused("%s Or set {root} to the folder that holds verl/." % err,
                           {"problems": [str(err)]})
    if not os.path.isfile(os.path.join(root, "verl", "__init__.py")):
        raise PatchRefused("%s holds no verl source (no verl/__init__.py): run the deps stage first (%s), "
                           "or point {root} at the folder that holds verl/."
                           % (root, rerun.command("deps", p["inventory"])),
                           {"problems": ["no verl tree at %s" % root]})
    return root


def apply(p, check_mode):
    """One call of the ``verl_patch`` module (``p``: its arguments): the result for ``exit_json``, or
    PatchRefused (no tree, a problem with an operation, a file that cannot be read or written)."""
    root = verl_root(p)
    try:
        results = ast_patch.apply_profile(root, p["operations"], check=check_mode,
                                          enable_optional=p["enable_optional"])
    except ast_patch.PatchError as err:
        raise PatchRefused("%d problem(s), no file was changed:\n%s" % (
            len(err.problems), "\n".join(err.problems + err.hints)), {"problems": err.problems, "hints": err.hints})
    except OSError as err:
        raise PatchRefused("%s. No file was changed." % err, {"problems": [str(err)]})
    changed = any(r["changed"] for r in results)
    diff = [{"prepared": r["diff"]} for r in results if r["diff"]]
    profiles = ast_patch.states_by_profile(p["operations"], results)
    lines = ["%s%s: %s" % (q["profile"] + " | " if q["profile"] else "", f["file"], ", ".join(f["states"]))
             for q in profiles for f in q["files"]]
    return dict(changed=changed, diff=diff, profiles=profiles, lines=lines, root=root,
                files=[{k: r[k] for k in ("file", "changed", "states")} for r in results])
