"""Filter: how the controller reaches the training container through the NPU host's own login (SSH with its port,
key and jump host; sudo with become), over the plain-Python engine."""

from ascend_grpo import container_access as _engine


def container_access(spec):
    """``{{ {'host': inventory_hostname, 'connection': ..., 'port': ..., ...} | container_access }}`` ->
    {connection, docker_extra_args, ssh, docker, problems}: the container's connection plugin and its arguments."""
    return _engine.access(spec)


class FilterModule:
    def filters(self):
        return {"container_access": container_access}
