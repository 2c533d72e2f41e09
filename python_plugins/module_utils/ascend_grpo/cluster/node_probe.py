"""What a node looks like to the cluster stage: the ``ray_node_info`` module's work as plain Python.

Its address toward the head (or of the interface asked for), what listens on the plan's ports (waiting a while
for them to free), the Ray and packages installed, whether Ray runs, and, when asked, whether the head's port
answers. Nothing changes on the host.
"""

import platform
import time

from . import firewall, ray_nodes
from ..common.errors import StageFailure


class ProbeError(StageFailure):
    """A node the stage cannot use: ``msg`` says why and names the inputs at fault as ``{field}`` (the
    ray_node_info module's options); ``result`` is what was found."""


def route(p):
    """(ip, interface) toward the head, or of the interface asked for; a failure names both inputs."""
    try:
        if p["interface"]:
            return ray_nodes.address_of(p["interface"]), p["interface"]
        if p["head_address"]:
            return ray_nodes.route_to(p["head_address"], p["port"])
    except ray_nodes.ClusterError as err:
        raise ProbeError("%s: %s. Set {interface} to the NIC that reaches the other hosts, or "
                         "{head_address} to an address of the head they reach" % (
                             "interface" if p["interface"] else "the route to the head", err))
    return None, None


def listening_after(ports, role, wait, sleep=time.sleep):
    """What listens, once none of the plan's ports is taken or ``wait`` seconds have passed: (listening, clashes)."""
    deadline = time.time() + max(wait, 0)
    while True:
        listening = firewall.listening_here()
        taken = firewall.clashes(ports, {int(k): v for k, v in listening.items()}, role) if ports else []
        if not taken or time.time() >= deadline:
            return listening, ["%s, %d, %s" % (s, port, " ".join(a)) for s, port, a in taken]
        sleep(2)


def probe(p):
    """One call of the ``ray_node_info`` module (``p``: its arguments): the result for ``exit_json``, or
    ProbeError (no route, or the head's port does not answer when ``check_port`` asks)."""
    ip, ifname = route(p)
    listening, clashes = listening_after(p["ports"], p["role"], p["wait_free"])
    packages = ray_nodes.installed_packages()
    result = dict(changed=False, ip=ip, interface=ifname, interfaces=ray_nodes.interfaces(),
                  ray_version=packages.get("ray"), python_version=platform.python_version(), packages=packages,
                  running=bool(ray_nodes.ray_processes()["raylet"]), listening=listening,
                  ray_options=ray_nodes.ray_start_options())
    if p["ports"]:
        result["clashes"] = clashes
    if p["check_port"] and p["head_address"]:
        result["reach"] = ray_nodes.tcp_reachable(p["head_address"], p["port"])
        if result["reach"]:
            result.pop("packages")
            raise ProbeError(ray_nodes.join_failure("", p["head_address"], p["port"], result["reach"]), result)
    return result
