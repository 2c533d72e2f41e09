"""The commands the package prints for a user to run (a fix, a stage to run first, the status view): one place.

Every such line is ``ansible-playbook site.yml -i <the inventory the user ran with> --tags <tags>``. The inventory
comes from Ansible's ``ansible_inventory_sources`` (absolute paths, or a host list such as ``localhost,``):
:func:`inventory_args` turns it into ``-i`` words once, on the controller (a path inside the project relative to
it, as the command runs from there; every word shell-quoted), and :func:`command` builds the line from them. A
module gets the ``-i`` words as a parameter (roles/grpo_common: ``grpo_common_inventory_args``), so an engine on
the training host prints the same line the controller would. Without them (a caller that does not know) the line
says ``-i <your inventory>``, for the user to fill in, rather than pointing at an inventory the user did not use.

Plain Python (no Ansible import).
"""

import os
import shlex

# What a line says when the inventory is not known: a placeholder the user fills in, never a guess.
PLACEHOLDER = "-i <your inventory>"
PLAYBOOK = "site.yml"


def inventory_args(sources, project_dir=None):
    """``-i`` words for ``sources`` (``ansible_inventory_sources``): a path inside ``project_dir`` relative to it,
    each shell-quoted; :data:`PLACEHOLDER` when there is none."""
    words = []
    for source in sources or []:
        source = str(source)
        if project_dir and os.path.isabs(source) and "," not in source:
            root = os.path.normpath(project_dir)
            path = os.path.normpath(source)
            if os.path.commonpath([root, path]) == root and path != root:
                source = os.path.relpath(path, root)
        words += ["-i", shlex.quote(source)]
    return " ".join(words) if words else PLACEHOLDER


def command(tags, inventory="", extra=(), playbook=PLAYBOOK):
    """``ansible-playbook site.yml <inventory> --tags <tags> <extra>``: ``tags`` a tag or a list of them (None or
    empty: the whole chain, no ``--tags``), ``inventory`` the words :func:`inventory_args` made (empty:
    :data:`PLACEHOLDER`), ``extra`` more arguments (each quoted, e.g. ``["-e", "grpo_eval_step=140"]``)."""
    words = ["ansible-playbook", playbook, (inventory or "").strip() or PLACEHOLDER]
    if tags:
        tags = ",".join(tags) if isinstance(tags, (list, tuple)) else str(tags)
        words += ["--tags", shlex.quote(tags)]
    words += [shlex.quote(str(word)) for word in extra or ()]
    return " ".join(words)
