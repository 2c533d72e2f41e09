"""Filters: the commands the package prints for a user to run again, with the inventory the user ran with (the one
place that builds them is the engine ascend_grpo.rerun)."""

import os

from ascend_grpo import rerun

# the project: the folder holding site.yml (python_plugins/filter_plugins/ is two levels below it)
_PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def grpo_inventory_args(sources):
    """``{{ ansible_inventory_sources | grpo_inventory_args }}``: the ``-i`` words of the inventory the user ran
    with (paths inside the project relative to it, quoted), for a module that prints a command (its ``inventory``)."""
    return rerun.inventory_args(sources, _PROJECT)


def grpo_rerun_command(tags, sources, *extra):
    """``{{ 'deps' | grpo_rerun_command(ansible_inventory_sources) }}``: ``ansible-playbook site.yml -i ... --tags
    deps``; ``extra``: more arguments (``'-e', 'grpo_eval_step=140'``)."""
    return rerun.command(tags, rerun.inventory_args(sources, _PROJECT), extra)


class FilterModule:
    def filters(self):
        return {"grpo_inventory_args": grpo_inventory_args, "grpo_rerun_command": grpo_rerun_command}
