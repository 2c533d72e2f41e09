"""Filter: a command for the user to copy, with the inventories they ran with (``ansible_inventory_sources``)."""

from ascend_grpo import run_plan


def site_command(args, sources=None, project_dir=None):
    """``{{ ['--tags', 'status'] | site_command(ansible_inventory_sources, playbook_dir) }}``:
    ``ansible-playbook site.yml -i inventories/sim --tags status`` (each inventory relative to the project's folder
    when inside it, every word quoted for the shell)."""
    return run_plan.site_command([str(a) for a in (args or [])], [str(s) for s in (sources or [])],
                                 str(project_dir) if project_dir else None)


class FilterModule:
    def filters(self):
        return {"site_command": site_command}
