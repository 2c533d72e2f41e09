"""The cluster stage's filters: Ray's nodes, ports and the firewall's protections.

Filters for the multi-host cluster: the plan from the inventory, and ray start's arguments.
"""

from ascend_grpo.cluster import ray_nodes, firewall
from ascend_grpo.common import errors

# The setting each port of the plan stands for (firewall.FIELDS: the engine knows the ports by these fields).
PORT_SETTINGS = {
    "port": "ray_cluster_port",
    "client_port": "ray_cluster_client_port",
    "dashboard_port": "ray_cluster_dashboard_port",
    "dashboard_grpc_port": "ray_cluster_dashboard_grpc_port",
    "dashboard_metrics_port": "ray_cluster_dashboard_metrics_port",
    "autoscaler_metrics_port": "ray_cluster_autoscaler_metrics_port",
    "node_manager_port": "ray_cluster_node_manager_port",
    "object_manager_port": "ray_cluster_object_manager_port",
    "agent_port": "ray_cluster_agent_port",
    "agent_grpc_port": "ray_cluster_agent_grpc_port",
    "runtime_env_agent_port": "ray_cluster_runtime_env_agent_port",
    "metrics_export_port": "ray_cluster_metrics_export_port",
    "min_worker_port": "ray_cluster_min_worker_port",
    "max_worker_port": "ray_cluster_max_worker_port",
}
# The setting every other field of the cluster engines' messages stands for: the plan's head and cards
# (ray_nodes.plan), the dashboard (ray_nodes.start_argv, firewall.protections), the firewall and the acceptance of
# open ports (firewall.protections, firewall.one_host_problems), the container's network (one_host_problems).
SETTINGS = dict(PORT_SETTINGS, **{
    "head": "grpo_cluster_head",
    "head_node": "grpo_cluster_head_node",
    "cards": "npu_container_visible_devices",
    "dashboard": "ray_cluster_dashboard",
    "firewall": "ray_cluster_firewall",
    "accept_open": "ray_cluster_accept_open_ports_without_auth",
    "network": "npu_container_network",
    "mode": "npu_container_mode",
})


def _named(value):
    """An engine's ``{field}`` text with each field named by its setting (SETTINGS)."""
    return errors.name_fields(value, SETTINGS)


def _planned(plan):
    return dict(plan, problems=_named(plan["problems"]))


def cluster_plan(envs, hostvars=None, head=""):
    """``{{ groups['npu_envs'] | map('extract', hostvars) | list | cluster_plan(hostvars, grpo_cluster_head) }}``.

    Each training environment with its NPU host and cards; a host marks itself head with grpo_cluster_head_node."""
    nodes = []
    for env in envs:
        host = env.get("grpo_npu_host") or env.get("inventory_hostname")
        marked = False
        if hostvars is not None and host in hostvars:
            marked = bool(hostvars[host].get("grpo_cluster_head_node", False))
        nodes.append({"name": env.get("inventory_hostname"), "host": host, "cards": list(env.get("grpo_cards") or []),
                      "head": marked})
    return _planned(ray_nodes.plan(nodes, head or None))


def cluster_nodes_plan(nodes, head=""):
    """``{{ [{name, host, cards, head}, ...] | cluster_nodes_plan(grpo_cluster_head) }}``: the plan from nodes."""
    return _planned(ray_nodes.plan(list(nodes), head or None))


def ray_start_argv(role, node_ip, **kwargs):
    """``{{ 'head' | ray_start_argv(ip, port=..., resources=..., dashboard=...) }}``: ``ray start``'s arguments."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None and v != ""}
    try:
        return ray_nodes.start_argv(role, node_ip, **kwargs)
    except ray_nodes.ClusterError as err:
        raise ray_nodes.ClusterError(_named(str(err))) from None


def cluster_node_env(base, ip, ifname):
    """``{{ ray_cluster_hccl_env | cluster_node_env(ip, ifname) }}``: the node's HCCL, Gloo and TP variables."""
    return ray_nodes.node_env(ip, ifname, base)


def stack_drift(stacks):
    """``{{ {node: packages, ...} | stack_drift }}``: the packages whose versions differ between the nodes."""
    return ray_nodes.stack_drift(stacks)


def cluster_nodes_summary(nodes):
    """``{{ probes | cluster_nodes_summary }}``: each node's name, address and NIC (the probes carry its packages)."""
    return [{"name": n.get("name"), "ip": n.get("ip"), "interface": n.get("interface")} for n in nodes]


def token_auth_supported(ray_version):
    return ray_nodes.token_auth_supported(ray_version)


def ray_port_plan(settings, dashboard="loopback", options=None):
    """``{{ {'ray_cluster_port': ..., ...} | ray_port_plan(ray_cluster_dashboard, probe.ray_options) }}``: every port
    the stack's Ray opens, checked (a clash between two settings fails, naming both). Each row carries its
    ``setting`` too (the worker range's: both, joined by ..), which the clashes and the cluster's record name."""
    ports = {field: settings[name] for field, name in PORT_SETTINGS.items() if name in (settings or {})}
    try:
        rows = firewall.port_plan(ports, dashboard, options)
    except firewall.FirewallError as err:
        from ansible.errors import AnsibleFilterError

        raise AnsibleFilterError(_named(str(err))) from None
    return [dict(row, setting=_named(firewall.label(row))) for row in rows]


def ray_port_settings(_ignored=None):
    """``{{ none | ray_port_settings }}``: the names of the port settings, in the plan's order."""
    return [PORT_SETTINGS[field] for field in firewall.FIELDS]


def ray_port_options(rows, role):
    """``{{ ray_cluster_ports | ray_port_options('head') }}``: ray start's options for the pinned ports."""
    return firewall.start_options(rows, role)


def ray_port_env(rows, role):
    """``{{ ray_cluster_ports | ray_port_env('head') }}``: the variables that move the head's metrics ports."""
    return firewall.start_env(rows, role)


def ray_node_ports(rows, role):
    """``{{ ray_cluster_ports | ray_node_ports('worker') }}``: the ports one node's firewall keeps for the cluster."""
    return firewall.node_ports(rows, role)


def ray_port_clashes(rows, listening, role):
    """``{{ ray_cluster_ports | ray_port_clashes(probe.listening, 'head') }}``: the settings whose port is taken."""
    return ["%s: port %d is already in use (listening on %s)" % (setting, port, ", ".join(addresses))
            for setting, port, addresses in firewall.clashes(rows, {int(k): v for k, v in (listening or {}).items()},
                                                             role)]


def ray_port_record(rows):
    """``{{ ray_cluster_ports | ray_port_record }}``: {setting: port or range}, for the cluster's record."""
    return {row["setting"]: firewall.span(row) for row in rows}


def ray_protections(token, firewall_on, dashboard, accept_open=False):
    """``{{ token | ray_protections(firewall, dashboard, accept) }}``: {ok, problems, summary}."""
    from ansible.module_utils.parsing.convert_bool import boolean

    return _named(firewall.protections(boolean(token, strict=False), boolean(firewall_on, strict=False), dashboard,
                                       boolean(accept_open, strict=False)))


def ray_guard_ports(rows, role, own_netns):
    """``{{ ray_cluster_ports | ray_guard_ports(role, own_netns) }}``: the ports the table keeps for the members."""
    return firewall.guard_ports(rows, role, own_netns)


def ray_one_host_problems(host_network, firewall_on, accept_open=False):
    """``{{ host_network | ray_one_host_problems(ray_cluster_firewall, accept) }}``: why a one-host run's Ray
    cannot be kept from the network (empty: it can)."""
    return _named(firewall.one_host_problems(bool(host_network), bool(firewall_on), bool(accept_open)))


class FilterModule:
    """The cluster stage's filters"""

    def filters(self):
        return {
            "cluster_plan": cluster_plan,
            "cluster_nodes_plan": cluster_nodes_plan,
            "ray_start_argv": ray_start_argv,
            "cluster_node_env": cluster_node_env,
            "stack_drift": stack_drift,
            "token_auth_supported": token_auth_supported,
            "cluster_nodes_summary": cluster_nodes_summary,
            "ray_port_plan": ray_port_plan,
            "ray_port_options": ray_port_options,
            "ray_port_settings": ray_port_settings,
            "ray_port_env": ray_port_env,
            "ray_node_ports": ray_node_ports,
            "ray_port_clashes": ray_port_clashes,
            "ray_port_record": ray_port_record,
            "ray_protections": ray_protections,
            "ray_guard_ports": ray_guard_ports,
            "ray_one_host_problems": ray_one_host_problems,
        }
