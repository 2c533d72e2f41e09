"""Ray's ports, pinned, and the firewall that lets only the cluster's own nodes reach them.

Anyone who reaches a Ray node's ports can run code on it (Ray's security page: isolation must be enforced outside
Ray), and the guide's Ray (2.41.0 on a 910B) has no token authentication. So every port Ray opens is pinned by a
setting (``ray start`` picks most of them at random otherwise) and one nftables table of ours, in the network
namespace where Ray listens, accepts them from loopback and from the cluster's members only and drops them for
everyone else. The table touches no other port (SSH, HCCL and Gloo traffic stay as they are) and no other table.

Standard library only: the plan runs on the controller, the ruleset is loaded by ``nft -f -`` on the host.
"""

import hashlib
import ipaddress
import re

TABLE = "grpo_ray"
# (field, ray start option or environment variable, which nodes listen on it). Measured with Ray 2.41.0 (the
# guide's) started with every option below: an idle head listens on exactly these, plus the worker range once
# workers (and the run's driver) start. Without them Ray picks the dashboard's gRPC port, the agents' and the
# metrics ports at random; the two metrics ports of the head's monitor and dashboard are fixed (44217, 44227) and
# only their environment variables move them. The worker range is two fields, one option each. A field is the
# port's name here and in messages ({field}); the cluster stage's filters name each by its setting
# (ray_cluster_<field>).
PORT_FIELDS = (
    ("port", "--port", "head", 6379),
    ("client_port", "--ray-client-server-port", "head", 10001),
    ("dashboard_port", "--dashboard-port", "head", 8265),
    ("dashboard_grpc_port", "--dashboard-grpc-port", "head", 8266),
    ("dashboard_metrics_port", "DASHBOARD_METRIC_PORT", "head", 44227),
    ("autoscaler_metrics_port", "AUTOSCALER_METRIC_PORT", "head", 44217),
    ("node_manager_port", "--node-manager-port", "all", 6380),
    ("object_manager_port", "--object-manager-port", "all", 6381),
    ("agent_port", "--dashboard-agent-listen-port", "all", 52365),
    ("agent_grpc_port", "--dashboard-agent-grpc-port", "all", 52366),
    ("runtime_env_agent_port", "--runtime-env-agent-port", "all", 52367),
    ("metrics_export_port", "--metrics-export-port", "all", 52368),
)
WORKER_FIELDS = (("min_worker_port", 10002), ("max_worker_port", 19999))
# Ray's own defaults where it has them; the role's defaults/main.yml sets the same values (the role passes every
# setting, so these count only for a caller that leaves one out).
DEFAULTS = dict([(row[0], row[3]) for row in PORT_FIELDS] + list(WORKER_FIELDS))
FIELDS = tuple(DEFAULTS)
DASHBOARD_FIELDS = ("dashboard_port", "dashboard_grpc_port", "dashboard_metrics_port")
# the worker range's row: both its fields
WORKER_RANGE = "..".join(field for field, _default in WORKER_FIELDS)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FirewallError(Exception):
    """A port, a member address or a ruleset that cannot be used, saying which ({field}) and why."""


def label(row):
    """A plan row's name in a message: ``{field}``, or ``{min_worker_port}..{max_worker_port}`` for the worker
    range (the caller renders each field as its setting: ascend_grpo.common.errors.name_fields)."""
    return "..".join("{%s}" % field for field in row["field"].split(".."))


def _port(field, value):
    if isinstance(value, bool):
        raise FirewallError("{%s} is %r: give a TCP port number (1024-65535)" % (field, value))
    try:
        port = int(str(value).strip())
    except ValueError:
        raise FirewallError("{%s} is %r: give a TCP port number (1024-65535)" % (field, value)) from None
    if not 1024 <= port <= 65535:
        raise FirewallError("{%s} is %d: give a TCP port from 1024 to 65535 (Ray runs no privileged port)"
                            % (field, port))
    return port


def _any_port(item, value):
    """A port of a span in the table (1-65535: the table may cover every port, not only Ray's)."""
    try:
        port = int(str(value).strip())
    except ValueError:
        raise FirewallError("the port span %r is not a port or a range of ports" % (item,)) from None
    if not 1 <= port <= 65535:
        raise FirewallError("the port span %r is outside 1-65535" % (item,))
    return port


def port_plan(ports, dashboard="loopback", options=None):
    """Every port Ray opens: [{"field", "option", "nodes", "first", "last"}], in the order of PORT_FIELDS then the
    worker range (field WORKER_RANGE). ``ports`` maps fields (FIELDS) to values (missing: Ray's default, as in
    DEFAULTS). The dashboard's ports are left out when it is off, and so is a port whose option the stack's
    ``ray start`` does not take (``options``, its option names; None: all of them), as Ray 2.60's dashboard, which
    has no gRPC server and no --dashboard-grpc-port. Refuses a port out of range, a worker range upside
    down or too small, and two fields that share a port, naming both as ``{field}``."""
    values = dict(DEFAULTS)
    values.update({k: v for k, v in (ports or {}).items() if v is not None and v != ""})
    rows = []
    for field, option, nodes, _default in PORT_FIELDS:
        if field in DASHBOARD_FIELDS and dashboard == "off":
            continue
        if options is not None and option.startswith("--") and option not in options:
            continue
        port = _port(field, values[field])
        rows.append({"field": field, "option": option, "nodes": nodes, "first": port, "last": port})
    low, high = (_port(f, values[f]) for f, _default in WORKER_FIELDS)
    if high < low + 15:
        raise FirewallError("{min_worker_port} is %d and {max_worker_port} %d: the range must hold at least 16 "
                            "ports (every Ray worker process takes one)" % (low, high))
    rows.append({"field": WORKER_RANGE, "option": None, "nodes": "all", "first": low, "last": high})
    for i, row in enumerate(rows):
        for other in rows[i + 1:]:
            if row["first"] <= other["last"] and other["first"] <= row["last"]:
                raise FirewallError("%s (%s) and %s (%s) share a port: give each its own"
                                    % (label(row), span(row), label(other), span(other)))
    return rows


def span(row):
    return str(row["first"]) if row["first"] == row["last"] else "%d-%d" % (row["first"], row["last"])


def start_options(rows, role):
    """``ray start``'s port options for a head or a worker (the GCS and dashboard ports are the caller's: they go
    with --head and the dashboard's own options)."""
    out = []
    for row in rows:
        if row["option"] in (None, "--port", "--dashboard-port") or not row["option"].startswith("--"):
            continue
        if row["nodes"] == "head" and role != "head":
            continue
        out.append("%s=%d" % (row["option"], row["first"]))
    worker = rows[-1]
    out += ["--min-worker-port=%d" % worker["first"], "--max-worker-port=%d" % worker["last"]]
    return out


def start_env(rows, role):
    """The environment variables that move the ports no ``ray start`` option moves (the head's metrics ports)."""
    return {row["option"]: str(row["first"]) for row in rows
            if row["option"] and not row["option"].startswith("--") and (row["nodes"] == "all" or role == "head")}


def node_ports(rows, role):
    """The ports one node's Ray listens on, as nft spans: a worker's firewall leaves the head's own ports alone
    (on a host's network, another service may use them there)."""
    return [span(row) for row in rows if row["nodes"] == "all" or role == "head"]


def members_of(addresses, allow_none=False):
    """The members' IPv4 addresses, checked, unique and sorted (numerically). ``allow_none``: a training
    environment of one host has no member but itself (loopback), so an empty list is its answer."""
    out = set()
    for address in addresses or []:
        try:
            out.add(ipaddress.IPv4Address(str(address).strip()))
        except ValueError:
            raise FirewallError("%r is not an IPv4 address of a cluster node" % (address,)) from None
    if not out and not allow_none:
        raise FirewallError("no cluster node address to allow")
    return [str(a) for a in sorted(out)]


# Every port: what a training environment in a network namespace of its own (a container on a Docker network) keeps
# from everyone but its members. Its processes need no inbound connection from anyone else, and a run opens more
# than Ray's pinned set (torch's rendezvous store, Gloo, vLLM's servers pick free ports at random).
ALL_PORTS = "1-65535"


def guard_ports(rows, role, own_netns):
    """The ports the table keeps for the members, as nft spans. ``own_netns``: the training environment has a
    network namespace of its own (a container on a Docker network, not the host's): every port. Otherwise (the
    host's network, shared with everything else on the host) Ray's pinned ports (``rows``, the port plan); the
    ray_firewall module adds the namespace's ephemeral range (``ephemeral: true``)."""
    return [ALL_PORTS] if own_netns else node_ports(rows or [], role)


def ephemeral_span(text):
    """The span of an ip_local_port_range ("32768\t60999", as /proc/sys/net/ipv4/ip_local_port_range says it):
    where the run's other servers (torch's rendezvous store, Gloo, vLLM) take their free ports from."""
    parts = str(text).split()
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise FirewallError("the ephemeral port range %r is not two numbers" % (text,))
    first, last = (_any_port(text, part) for part in parts)
    return "%d-%d" % (min(first, last), max(first, last))


def _merged(spans):
    """Sorted spans with overlapping ones joined (an nft interval set refuses overlapping elements)."""
    out = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def ruleset(ports, members, table=TABLE, allow_no_members=False):
    """The nftables script that replaces our table atomically: the ``ports`` (["6379", "10002-19999", ...], or
    every port, ALL_PORTS) accepted from loopback and the ``members`` (every port of theirs: HCCL, Gloo and the
    rendezvous store talk between the nodes), dropped for every other source (TCP and UDP), everything else
    untouched. ``allow_no_members``: one host, reached over loopback only. Its last rule carries the script's
    fingerprint, so a rerun compares one line instead of nft's own listing."""
    if not _NAME.fullmatch(table or ""):
        raise FirewallError("the table name %r is not an nftables identifier" % (table,))
    spans = []
    for item in ports:
        first, _, last = str(item).partition("-")
        first, last = _any_port(item, first), _any_port(item, last or first)
        if last < first:
            raise FirewallError("the port range %s is upside down" % item)
        spans.append((first, last))
    if not spans:
        raise FirewallError("no port to protect")
    port_set = ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in _merged(spans))
    member_list = members_of(members, allow_none=allow_no_members)
    body = ["table inet %s {" % table]
    if member_list:
        body += ["\tset members {", "\t\ttype ipv4_addr", "\t\telements = { %s }" % ", ".join(member_list), "\t}"]
    body += [
        "\tset ray_ports {",
        "\t\ttype inet_service",
        "\t\tflags interval",
        "\t\telements = { %s }" % port_set,
        "\t}",
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        "\t\tiif \"lo\" accept",
        "\t\tct state established,related accept",
    ] + (["\t\tip saddr @members accept"] if member_list else []) + [
        "\t\tudp dport @ray_ports drop",
        "\t\ttcp dport @ray_ports drop comment \"%s\"" % "@FINGERPRINT@",
        "\t}",
        "}",
    ]
    body = "\n".join(body)
    mark = "grpo-ray " + hashlib.sha256(body.encode()).hexdigest()[:16]
    body = body.replace("@FINGERPRINT@", mark)
    # "table ...; delete table ..." first: the delete never fails on a missing table, and nft -f applies the
    # whole file as one transaction (no moment without the rules when they are replaced).
    script = "table inet %s\ndelete table inet %s\n%s\n" % (table, table, body)
    return {"script": script, "fingerprint": mark, "rules": body + "\n"}


def removal(table=TABLE):
    """The script that removes our table, whether or not it is there."""
    return "table inet %s\ndelete table inet %s\n" % (table, table)


def listening_ports(*proc_net_texts):
    """{port: [local address, ...]} of the TCP sockets in LISTEN state in /proc/net/tcp and /proc/net/tcp6 texts
    (of one network namespace)."""
    out = {}
    for text in proc_net_texts:
        for line in (text or "").splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4 or fields[3] != "0A":
                continue
            address, _, port = fields[1].rpartition(":")
            out.setdefault(int(port, 16), []).append(_address(address))
    return {port: sorted(set(addresses)) for port, addresses in sorted(out.items())}


def listening_here(paths=("/proc/net/tcp", "/proc/net/tcp6")):
    """{"port": [local address, ...]} of the TCP ports something listens on in this network namespace (port as a
    string, as a module's result carries it)."""
    texts = []
    for name in paths:
        try:
            with open(name, encoding="ascii") as handle:
                texts.append(handle.read())
        except OSError:
            continue
    return {str(port): addresses for port, addresses in listening_ports(*texts).items()}


def _address(hexaddr):
    raw = bytes.fromhex(hexaddr)
    # /proc/net/tcp* holds each 32-bit word in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if len(words) == 4:
        return str(ipaddress.IPv4Address(words))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)


def clashes(rows, listening, role):
    """The plan's rows whose port something already listens on (this node's Ray not running): [(name, port,
    addresses)]. A row's name is the one its caller gave it (``setting``: the cluster stage's filter names each row
    by its setting, and the ray_node_info module gets those rows), else its field."""
    out = []
    for row in rows:
        if row["nodes"] == "head" and role != "head":
            continue
        for port in listening:
            if row["first"] <= port <= row["last"]:
                out.append((row.get("setting") or row["field"], port, listening[port]))
    return out


def protections(token, firewall, dashboard, accept_open=False):
    """What the cluster stage may form, and the summary of what protects it. Refuses a cluster without token
    authentication whose ports nothing firewalls (unless ray_cluster_accept_open_ports_without_auth) and a dashboard
    on every address without token authentication. -> {"ok", "problems", "summary"}, naming the inputs as
    ``{firewall}``, ``{accept_open}`` and ``{dashboard}`` (the ray_protections filter names their settings)."""
    problems = []
    if not token and not firewall and not accept_open:
        problems.append(
            "this stack's Ray has no token authentication (it came with Ray 2.52) and {firewall} is off: "
            "anyone who reaches the nodes' Ray ports could run code on them. Turn {firewall} on (it needs "
            "nftables on every host), or set {accept_open}: true if your own firewall "
            "or security group already keeps everyone but the cluster's nodes away from these ports")
    if dashboard == "all" and not token:
        problems.append(
            "{dashboard} is all, but this stack's Ray has no token authentication: the dashboard's job API "
            "would run code for anyone who reaches its port. Use loopback (reach it through an SSH tunnel) or off")
    summary = "token authentication %s; firewall %s; dashboard %s" % (
        "on" if token else "off (this Ray has none)",
        "on (Ray's ports for the cluster's nodes only)" if firewall else
        ("off (accepted: {accept_open})" if accept_open else "off"),
        {"loopback": "on the head's loopback", "off": "off", "all": "on every address"}.get(dashboard, dashboard))
    return {"ok": not problems, "problems": problems, "summary": summary}


def one_host_problems(host_network, firewall_on, accept_open=False):
    """What keeps a one-host run's Ray from the network, or why nothing can. On one host verl's ``ray.init()``
    starts Ray itself, on the container's address, at ports it picks at random (the dashboard agent's job API at
    52365 among them), so the table covers every port of the container's own network namespace. With the host's
    network (``npu_container_network: host``, or ``npu_container_mode: none``) there is no namespace of the
    run's own: covering every port would cut the host off, and Ray's random ports cannot be pinned. Refused then,
    as with the firewall off, unless ray_cluster_accept_open_ports_without_auth says the user's own firewall does
    it. -> [problem, ...], naming the inputs as ``{firewall}``, ``{accept_open}``, ``{network}`` and ``{mode}``
    (the ray_one_host_problems filter names their settings)."""
    if accept_open:
        return []
    if not firewall_on:
        return ["{firewall} is off: on one host verl's Ray listens on the container's address at random "
                "ports, the dashboard agent's job API among them, and the guide's Ray 2.41 has no authentication: "
                "any machine or container that reaches it could run code in the training environment. Turn "
                "{firewall} on (nftables on the host), or set {accept_open}: "
                "true if your own firewall or security group already keeps everyone else away"]
    if host_network:
        return ["one NPU host with the host's network ({network}: host, or {mode}: none): "
                "verl's Ray would listen on the host's own addresses at random ports no firewall can pin, the "
                "dashboard agent's job API among them, reachable from the whole network. Leave "
                "{network} empty (Docker's bridge: the run gets a network namespace of its own, which "
                "the cluster stage firewalls for loopback and this host only), or set "
                "{accept_open}: true if your own firewall or security group keeps "
                "everyone but this host away from every port of it"]
    return []
