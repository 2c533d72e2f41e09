"""Filter: the path settings that name a folder the package keeps for something else (another stage's venv, the
state folder, the run's folder), over the plain-Python engine ascend_grpo.owned_folders."""

import os

from ascend_grpo import owned_folders

_TEXTS = {}


def owned_folder_problems(values, own, user=None):
    """``{{ {'grpo_workspace': grpo_workspace, 'deps_pinning_venv': deps_pinning_venv, ...}
    | owned_folder_problems(['deps_pinning_venv'], hostvars[inventory_hostname]) }}``: one problem for each of the
    stage's own settings (``own``) that names, holds or sits inside a folder another setting owns, naming both.
    ``values``: the settings the stage has; ``user``: the host's variables, for other stages' settings the user set
    (the rest are their defaults)."""
    if not _TEXTS:
        _TEXTS.update(owned_folders.defaults(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))))
    values = dict(values)
    # every setting a default may name (the project and experiment in the run's folder), as the user set it
    for name in set(_TEXTS) - set(values):
        try:
            if user is not None and name in user:
                values[name] = user[name]
        except Exception:  # pylint: disable=broad-except  # a value that cannot be rendered here: its default
            continue
    return owned_folders.problems(list(own), values, _TEXTS)


class FilterModule:
    def filters(self):
        return {"owned_folder_problems": owned_folder_problems}
