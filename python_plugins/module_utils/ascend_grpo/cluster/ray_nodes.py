"""Several NPU hosts as one Ray cluster: who heads it, what each node starts Ray with, whether every node joined.

verl runs multi-node on Ray (docs/start/multinode.rst at 634bd935): ``ray start --head`` on one node, ``ray start
--address=<head>:<port>`` on the others, then ``main_ppo`` with ``trainer.nnodes`` and ``trainer.n_gpus_per_node``,
attached through ``RAY_ADDRESS``. On Ascend verl asks Ray for the ``NPU`` resource, and every node must offer the
same number of cards.

Standard library only: the planning runs on the controller, the probes (routes, interfaces, a port) on the nodes.
"""

import errno
import fcntl
import json
import os
import re
import socket
import struct

from ..common import rerun

DEFAULT_PORT = 6379
# Ray's token authentication (RAY_AUTH_MODE=token) exists from this release on.
TOKEN_AUTH_SINCE = (2, 52, 0)
# Per node, from the NIC that reaches the other nodes: HCCL's host address and interface, Gloo's and TP's interface.
IFNAME_VARIABLES = ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")
DASHBOARD_MODES = ("loopback", "off", "all")


class ClusterError(Exception):
    """A setting or a node that keeps the cluster from forming."""


def plan(nodes, head=None):
    """The cluster the inventory describes.

    nodes: [{"name": env name, "host": NPU host, "cards": [ids], "head": bool}] in inventory order.
    head: the host named as head (a setting), or None: the one marked ``head``, else the first.
    -> {"head", "head_host", "nnodes", "n_gpus_per_node", "workers", "problems"}: problems say what to change,
    naming the inputs as ``{head}``, ``{head_node}`` (a node's head mark) and ``{cards}`` (the cluster filters name
    their settings: grpo_cluster_head, grpo_cluster_head_node, npu_container_visible_devices)."""
    problems = []
    if not nodes:
        return {"head": None, "head_host": None, "nnodes": 0, "n_gpus_per_node": 0, "workers": [],
                "problems": ["no NPU host in the inventory: list the hosts under npu_hosts"]}
    hosts = [n["host"] for n in nodes]
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        problems.append("host %s has more than one training environment: one environment per NPU host"
                        % ", ".join(twice))
    marked = [n["host"] for n in nodes if n.get("head")]
    if head:
        if head not in hosts:
            problems.append("{head} is %s, which is not an NPU host (they are %s): name one of them"
                            % (head, ", ".join(hosts)))
            head = hosts[0]
    elif len(marked) > 1:
        problems.append("hosts %s are all marked {head_node}: mark one" % ", ".join(marked))
        head = marked[0]
    else:
        head = marked[0] if marked else hosts[0]
    counts = {}
    for node in nodes:
        counts.setdefault(len(node.get("cards") or []), []).append(node["host"])
    if 0 in counts:
        problems.append("host %s has no card in {cards}: give it the cards it trains on"
                        % ", ".join(counts[0]))
    if len([c for c in counts if c]) > 1:
        problems.append("the hosts offer different numbers of cards (%s), but verl gives every node the same "
                        "trainer.n_gpus_per_node: set {cards} to as many cards on each host" % (
                            "; ".join("%s: %d" % (", ".join(h), c) for c, h in sorted(counts.items()))))
    head_node = next(n for n in nodes if n["host"] == head)
    return {"head": head_node["name"], "head_host": head, "nnodes": len(nodes),
            "n_gpus_per_node": len(head_node.get("cards") or []),
            "workers": [n["name"] for n in nodes if n["host"] != head], "problems": problems}


def version_tuple(text):
    """"2.41.0" -> (2, 41, 0); "2.60.0rc1" -> (2, 60, 0); anything unreadable -> ()."""
    return tuple(int(p) for p in re.findall(r"\d+", str(text or ""))[:3])


def token_auth_supported(ray_version):
    version = version_tuple(ray_version)
    return bool(version) and version >= TOKEN_AUTH_SINCE


def node_env(ip, ifname, base=None):
    """The variables one node's Ray (and so every worker it starts) needs: ``base`` (the fixed HCCL settings) with
    the node's address and the NIC that reaches the other nodes."""
    env = dict(base or {})
    env["HCCL_IF_IP"] = ip
    for key in IFNAME_VARIABLES:
        env[key] = ifname
    return env


def start_argv(role, node_ip, port=DEFAULT_PORT, head_ip=None, resources=None, num_gpus=None, num_cpus=None,
               dashboard="loopback", dashboard_port=8265, ray="ray", port_options=None):
    """``ray start`` for a head or a worker. The dashboard (and its job API, which runs code for anyone reaching it)
    binds to the head's loopback unless ``dashboard`` is "off" or "all" (else a ClusterError naming it
    ``{dashboard}``); every node names its private address.
    ``port_options``: the other ports' options (firewall.start_options), so that Ray opens no port at random."""
    if role not in ("head", "worker"):
        raise ClusterError("role is head or worker, not %r" % (role,))
    if dashboard not in DASHBOARD_MODES:
        raise ClusterError("{dashboard} is one of %s, not %r" % (", ".join(DASHBOARD_MODES), dashboard))
    argv = [ray, "start"]
    if role == "head":
        argv += ["--head", "--port=%d" % int(port)]
        if dashboard == "off":
            argv.append("--include-dashboard=false")
        else:
            argv += ["--include-dashboard=true",
                     "--dashboard-host=%s" % ("127.0.0.1" if dashboard == "loopback" else "0.0.0.0"),
                     "--dashboard-port=%d" % int(dashboard_port)]
    else:
        if not head_ip:
            raise ClusterError("a worker needs the head's address")
        argv.append("--address=%s:%d" % (head_ip, int(port)))
    argv.append("--node-ip-address=%s" % node_ip)
    if resources:
        argv.append("--resources=%s" % json.dumps(resources, sort_keys=True, separators=(",", ":")))
    if num_gpus is not None:
        argv.append("--num-gpus=%d" % int(num_gpus))
    if num_cpus is not None:
        argv.append("--num-cpus=%d" % int(num_cpus))
    argv += list(port_options or [])
    argv.append("--disable-usage-stats")
    return argv


def interfaces():
    """{interface name: IPv4 address} of this machine's interfaces that have one (ioctl SIOCGIFADDR, so no
    iproute2 is needed)."""
    out = {}
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _index, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address
            out[name] = socket.inet_ntoa(packed[20:24])
    finally:
        probe.close()
    return out


def route_to(address, port=DEFAULT_PORT, known=None):
    """(local address, interface) this machine uses to reach ``address`` (a name or an IPv4 address). A UDP
    connect sends nothing; the kernel picks the route. known: interfaces() (for tests)."""
    try:
        target = socket.gethostbyname(address)
    except OSError as err:
        raise ClusterError("cannot resolve %s: %s" % (address, err))
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((target, int(port)))
        local = probe.getsockname()[0]
    except OSError as err:
        raise ClusterError("no route to %s (%s): %s" % (address, target, err))
    finally:
        probe.close()
    names = [name for name, ip in sorted((known if known is not None else interfaces()).items()) if ip == local]
    if not names:
        raise ClusterError("the route to %s leaves from %s, which no interface has" % (address, local))
    return local, names[0]


def address_of(ifname, known=None):
    """The IPv4 address of interface ``ifname``; a ClusterError naming the interfaces there are otherwise."""
    known = known if known is not None else interfaces()
    if ifname not in known:
        raise ClusterError("interface %s has no IPv4 address here (interfaces: %s)" % (
            ifname, ", ".join("%s %s" % pair for pair in sorted(known.items())) or "none"))
    return known[ifname]


def tcp_reachable(address, port, timeout=5.0):
    """None when a TCP connection to address:port opens, else why not (refused, timed out, no route)."""
    try:
        with socket.create_connection((address, int(port)), timeout=timeout):
            return None
    except socket.timeout:
        return "timed out after %gs (a firewall dropping the port, or a wrong address)" % timeout
    except OSError as err:
        if err.errno == errno.ECONNREFUSED:
            return "connection refused (nothing listens there: the head's Ray is not running on that address)"
        return err.strerror or str(err)


def join_failure(output, head_ip, port, reach, head_version=None, own_version=None, inventory=""):
    """Why a worker's ``ray start --address`` failed, in words a user can act on (a command in it carries
    ``inventory``, the user's -i words: :mod:`rerun`). The head's address and port are ``{head_address}`` and
    ``{port}`` in it, the options of the ray_node and ray_node_info modules that carry them."""
    text = output or ""
    if head_version and own_version and version_tuple(head_version) != version_tuple(own_version):
        return ("version mismatch: the head runs Ray %s, this node Ray %s. Every node needs the same stack: rerun "
                "the deps stage (%s) on every host" % (head_version, own_version, rerun.command("deps", inventory)))
    if re.search(r"version mismatch|Version mismatch|different version", text):
        lines = [line.strip() for line in text.splitlines() if "ersion" in line]
        return "version mismatch: %s. Rerun the deps stage on every host" % (lines[0] if lines else "see the output")
    if reach:
        return ("cannot reach the head at %s:%s (%s). Check that the head's address is one this node reaches "
                "({head_address}), and that the firewall between the hosts lets the port through"
                % (head_ip, port, reach))
    if re.search(r"InvalidAuthToken|Unauthenticated|authenticat|token", text, re.I):
        return ("the head refused this node's token: every node needs the same one (the cluster stage copies the "
                "head's; remove <workspace>/.grpo/ray/auth_token on every host and rerun to make a new one)")
    if re.search(r"Failed to get cluster ID from GCS|http2 header with status", text):
        return ("something answers at %s:%s, but it is not a Ray head of this version (%s). Check "
                "{head_address} and {port}: they must name the head's Ray, reached directly "
                "(no proxy in between)" % (head_ip, port, _first(text, r"RpcError[^\n]*|Failed to get cluster ID[^\n]*")))
    tail = [line for line in text.splitlines() if line.strip()][-6:]
    return "ray start failed: %s" % (" | ".join(tail) or "no output")


def _first(text, pattern):
    match = re.search(pattern, text)
    return match.group(0).strip() if match else "no detail"


def compare_nodes(expected, seen):
    """Which expected nodes Ray's view has, alive and with their resources.

    expected: [{"name", "ip", "resources": {name: amount}}]; seen: ray.nodes() entries (NodeManagerAddress, Alive,
    Resources). -> {"joined": [names], "missing": [{"name", "ip", "why"}], "extra": [ips]}"""
    alive = {}
    for node in seen:
        if node.get("Alive", node.get("alive")):
            alive[node.get("NodeManagerAddress")] = node.get("Resources") or {}
    joined, missing = [], []
    for node in expected:
        have = alive.get(node["ip"])
        if have is None:
            missing.append({"name": node["name"], "ip": node["ip"], "why": "not in Ray's view of the cluster"})
            continue
        short = ["%s %g of %g" % (key, have.get(key, 0), want)
                 for key, want in sorted((node.get("resources") or {}).items()) if have.get(key, 0) < want]
        if short:
            missing.append({"name": node["name"], "ip": node["ip"], "why": "joined short of " + ", ".join(short)})
        else:
            joined.append(node["name"])
    ips = {node["ip"] for node in expected}
    return {"joined": joined, "missing": missing, "extra": sorted(ip for ip in alive if ip not in ips)}


def stack_drift(stacks):
    """Differences between the nodes' Python stacks. stacks: {node: {package: version}} (importlib.metadata's
    view, the deps stage's record). -> ["package: node-a 1.0, node-b 1.1", ...] sorted."""
    names = sorted({pkg for packages in stacks.values() for pkg in packages})
    out = []
    for pkg in names:
        versions = {node: stacks[node].get(pkg, "missing") for node in sorted(stacks)}
        if len(set(versions.values())) > 1:
            out.append("%s: %s" % (pkg, ", ".join("%s %s" % pair for pair in versions.items())))
    return out


def ray_processes(proc="/proc"):
    """{"raylet": [pids], "gcs_server": [pids]} of the Ray daemons running here (their executables' names)."""
    found = {"raylet": [], "gcs_server": []}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "cmdline"), "rb") as handle:
                argv0 = handle.read().split(b"\0", 1)[0].decode("utf-8", "replace")
        except OSError:
            continue
        base = argv0.rsplit("/", 1)[-1]
        if base in found:
            found[base].append(int(entry))
    return found


def installed_packages():
    """{canonical name: version} of every distribution this Python sees (importlib.metadata)."""
    from importlib import metadata
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            out[re.sub(r"[-_.]+", "-", name).lower()] = dist.version
    return out


def ray_start_options():
    """The options this Python's ``ray start`` takes (read from its CLI's source, ray/scripts/scripts.py, without
    importing Ray), or None when Ray is not there. Options come and go between releases (Ray 2.41 has
    --dashboard-grpc-port; 2.60, whose dashboard has no gRPC server, has not)."""
    import importlib.util

    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "scripts", "scripts.py")
    try:
        with open(path, encoding="utf-8") as handle:
            return sorted(set(re.findall(r'"(--[a-z0-9][a-z0-9-]*)"', handle.read())))
    except OSError:
        return None
