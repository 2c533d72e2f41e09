"""Filter: how the controller reaches the training container through the NPU host's own login (SSH with its port,
key and jump host; sudo with become), over the plain-Python engine."""

from ascend_grpo import container_access as _engine


def container_access(spec):
    """``{{ {'host': inventory_hostname, 'connection': ..., 'port': ..., ...} | container_access }}`` ->
    {connection, docker_extra_args, ssh, docker, problems}: the container's connection plugin and its arguments."""
    return _engine.access(spec)


def container_labels(workspace_host):
    """``{{ npu_container_workspace_host | container_labels }}`` -> the labels that mark the container as this
    package's, for this workspace."""
    return _engine.container_labels(workspace_host)


def container_owner_problem(found, name, host, workspace_host, workspace, purpose="recreate", sources=()):
    """``{{ info.container | container_owner_problem(name, host, ws_host, ws, 'recreate'|'enter') }}`` -> why the
    stages must not recreate or enter that container ("" when they may). ``sources``: ansible_inventory_sources,
    for the command the message prints."""
    return _engine.owner_problem(found, name, host, workspace_host, workspace, purpose, sources)


class FilterModule:
    def filters(self):
        return {"container_access": container_access, "container_labels": container_labels,
                "container_owner_problem": container_owner_problem}
