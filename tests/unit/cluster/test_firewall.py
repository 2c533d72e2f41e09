"""Ray's ports pinned and firewalled for the cluster's own nodes: the port plan, the rules, the refusals.

References: ``ray start``'s port options (Ray's cluster CLI docs: --port, --ray-client-server-port,
--dashboard-grpc-port, --node-manager-port, --object-manager-port, --dashboard-agent-listen-port,
--dashboard-agent-grpc-port, --runtime-env-agent-port, --metrics-export-port, --min-worker-port/--max-worker-port,
defaults 6379, 10001, 52365 and 10002-19999) and Ray 2.41.0's fixed metrics ports (ray/autoscaler/_private/constants.py
AUTOSCALER_METRIC_PORT 44217, ray/dashboard/consts.py DASHBOARD_METRIC_PORT 44227, each read from its variable); the issue's rules (loopback and the members accepted, everyone else dropped, no other port touched, a
token-less cluster without a firewall refused unless accepted by name, the dashboard on every address refused
without a token); the /proc/net/tcp format from the kernel's Documentation/networking/proc_net_tcp.rst.
"""

import shutil
import socket
import subprocess

import cluster_filters
import pytest
from ansible.errors import AnsibleFilterError
from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names

from ascend_grpo.cluster import firewall

DEFAULT_PORTS = ["6379", "10001", "8265", "8266", "44227", "44217", "6380", "6381", "52365", "52366", "52367", "52368",
                 "10002-19999"]


def test_every_port_ray_opens_is_pinned_with_rays_defaults_where_it_has_them():
    rows = firewall.port_plan({})
    assert [firewall.span(r) for r in rows] == DEFAULT_PORTS
    assert firewall.start_options(rows, "head") == [
        "--ray-client-server-port=10001", "--dashboard-grpc-port=8266", "--node-manager-port=6380", "--object-manager-port=6381",
        "--dashboard-agent-listen-port=52365", "--dashboard-agent-grpc-port=52366", "--runtime-env-agent-port=52367",
        "--metrics-export-port=52368", "--min-worker-port=10002", "--max-worker-port=19999"]
    # the client server runs on the head only; a worker's firewall leaves the head's own ports alone
    assert "--ray-client-server-port=10001" not in firewall.start_options(rows, "worker")
    assert firewall.node_ports(rows, "worker") == ["6380", "6381", "52365", "52366", "52367", "52368", "10002-19999"]
    # the head's monitor and dashboard serve metrics on fixed ports that only their variables move
    assert firewall.start_env(rows, "head") == {"DASHBOARD_METRIC_PORT": "44227", "AUTOSCALER_METRIC_PORT": "44217"}
    assert firewall.start_env(rows, "worker") == {}
    off = [firewall.span(r) for r in firewall.port_plan({}, dashboard="off")]
    assert "8265" not in off and "8266" not in off and "44227" not in off and "44217" in off


def test_a_port_whose_option_the_stacks_ray_lacks_is_left_out(tmp_path, monkeypatch):
    from ascend_grpo.cluster import ray_nodes

    # a Ray whose CLI has no --dashboard-grpc-port (as Ray 2.60's: its dashboard has no gRPC server)
    package = tmp_path / "ray"
    (package / "scripts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "scripts" / "scripts.py").write_text("".join(
        '@click.option(\n    "%s",\n    type=int,\n)\n' % row["option"] for row in firewall.port_plan({})
        if row["option"] and row["option"] != "--dashboard-grpc-port") + '@click.option("--head", is_flag=True)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    options = ray_nodes.ray_start_options()
    assert "--head" in options and "--metrics-export-port" in options and "--dashboard-grpc-port" not in options
    rows = firewall.port_plan({}, options=options)
    assert "8266" not in [firewall.span(r) for r in rows]
    assert "--dashboard-grpc-port=8266" not in firewall.start_options(rows, "head")
    assert "--dashboard-grpc-port=8266" in firewall.start_options(firewall.port_plan({}, options=options + [
        "--dashboard-grpc-port"]), "head")


def test_the_cluster_stage_passes_the_pinned_ports_to_ray_start():
    from ascend_grpo.cluster import ray_nodes

    argv = ray_nodes.start_argv("worker", "10.0.0.12", head_ip="10.0.0.11",
                                port_options=firewall.start_options(firewall.port_plan({}), "worker"))
    assert "--node-manager-port=6380" in argv and "--min-worker-port=10002" in argv
    assert argv[-1] == "--disable-usage-stats"


@pytest.mark.parametrize("settings, message", [
    ({"ray_cluster_agent_port": 6379}, "ray_cluster_port (6379) and ray_cluster_agent_port (6379) share a port"),
    ({"ray_cluster_node_manager_port": 10500},
     "ray_cluster_node_manager_port (10500) and ray_cluster_min_worker_port..ray_cluster_max_worker_port "
     "(10002-19999) share a port"),
    ({"ray_cluster_client_port": 80}, "ray_cluster_client_port is 80: give a TCP port from 1024 to 65535"),
    ({"ray_cluster_port": "six"}, "ray_cluster_port is 'six': give a TCP port number"),
    ({"ray_cluster_min_worker_port": 20000, "ray_cluster_max_worker_port": 20010},
     "ray_cluster_min_worker_port is 20000 and ray_cluster_max_worker_port 20010: the range must hold at least 16 "
     "ports"),
])
def test_a_port_setting_that_clashes_or_is_out_of_range_is_refused_by_name(settings, message):
    """The cluster stage's filter (the role layer) names the settings the engine's fields stand for."""
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cluster_filters.ray_port_plan(settings)


@pytest.mark.parametrize("ports, message", [
    ({"agent_port": 6379}, "{port} (6379) and {agent_port} (6379) share a port"),
    ({"node_manager_port": 10500},
     "{node_manager_port} (10500) and {min_worker_port}..{max_worker_port} (10002-19999) share a port"),
    ({"client_port": 80}, "{client_port} is 80: give a TCP port from 1024 to 65535"),
    ({"port": "six"}, "{port} is 'six': give a TCP port number"),
    ({"min_worker_port": 20000, "max_worker_port": 20010},
     "{min_worker_port} is 20000 and {max_worker_port} 20010: the range must hold at least 16 ports"),
])
def test_the_engine_refuses_a_port_naming_its_fields(ports, message):
    with pytest.raises(firewall.FirewallError) as err:
        firewall.port_plan(ports)
    assert message in str(err.value)


def test_the_filters_plan_rows_carry_their_settings_for_the_clashes_and_the_record():
    names = cluster_filters.ray_port_settings()
    assert names[0] == "ray_cluster_port" and names[-2:] == ["ray_cluster_min_worker_port",
                                                             "ray_cluster_max_worker_port"]
    rows = cluster_filters.ray_port_plan({name: None for name in names})
    assert [firewall.span(r) for r in rows] == DEFAULT_PORTS
    record = cluster_filters.ray_port_record(rows)
    assert record["ray_cluster_agent_port"] == "52365"
    assert record["ray_cluster_min_worker_port..ray_cluster_max_worker_port"] == "10002-19999"
    assert cluster_filters.ray_port_clashes(rows, {"6380": ["0.0.0.0"]}, "worker") == [
        "ray_cluster_node_manager_port: port 6380 is already in use (listening on 0.0.0.0)"]


def test_the_rules_for_three_nodes():
    rules = firewall.ruleset(DEFAULT_PORTS, ["10.0.0.13", "10.0.0.11", "10.0.0.12", "10.0.0.11"])
    body = rules["rules"]
    # our own table, replaced in one transaction (the add-then-delete idiom never fails on a missing table)
    assert rules["script"].startswith("table inet grpo_ray\ndelete table inet grpo_ray\ntable inet grpo_ray {\n")
    assert "elements = { 10.0.0.11, 10.0.0.12, 10.0.0.13 }" in body
    assert ("elements = { 6379, 6380, 6381, 8265, 8266, 10001, 10002-19999, 44217, 44227, 52365, 52366, 52367, "
            "52368 }") in body
    chain = body[body.index("chain input"):].splitlines()
    assert [line.strip() for line in chain[1:7]] == [
        "type filter hook input priority filter; policy accept;",
        'iif "lo" accept',
        "ct state established,related accept",
        # a member reaches every port: HCCL, Gloo and the rendezvous store talk between the nodes
        "ip saddr @members accept",
        "udp dport @ray_ports drop",
        'tcp dport @ray_ports drop comment "%s"' % rules["fingerprint"]]
    # every drop names the kept ports: nothing else is dropped
    assert [line for line in body.splitlines() if "drop" in line] == chain[5:7]
    # the same nodes in another order give the same rules; another node, other rules
    assert firewall.ruleset(DEFAULT_PORTS, ["10.0.0.12", "10.0.0.13", "10.0.0.11"]) == rules
    assert firewall.ruleset(DEFAULT_PORTS, ["10.0.0.12", "10.0.0.14", "10.0.0.11"])["fingerprint"] != \
        rules["fingerprint"]
    with pytest.raises(firewall.FirewallError, match="'10.0.0.300' is not an IPv4 address"):
        firewall.ruleset(DEFAULT_PORTS, ["10.0.0.300"])
    with pytest.raises(firewall.FirewallError, match="no cluster node address"):
        firewall.ruleset(DEFAULT_PORTS, [])


def test_a_tokenless_cluster_without_the_firewall_is_refused_naming_the_acceptance_setting():
    refused = cluster_filters.ray_protections(False, False, "loopback")
    assert not refused["ok"]
    assert "ray_cluster_accept_open_ports_without_auth: true" in refused["problems"][0]
    assert "Turn ray_cluster_firewall on" in refused["problems"][0]
    accepted = cluster_filters.ray_protections(False, False, "loopback", True)
    assert accepted["ok"] and accepted["summary"] == (
        "token authentication off (this Ray has none); firewall off (accepted: "
        "ray_cluster_accept_open_ports_without_auth); dashboard on the head's loopback")
    # the engine names its inputs; the filter above, the settings
    refused = firewall.protections(token=False, firewall=False, dashboard="loopback")
    assert not refused["ok"]
    assert "{accept_open}: true" in refused["problems"][0] and "Turn {firewall} on" in refused["problems"][0]
    accepted = firewall.protections(token=False, firewall=False, dashboard="loopback", accept_open=True)
    assert accepted["ok"] and "firewall off (accepted: {accept_open})" in accepted["summary"]
    assert firewall.protections(token=False, firewall=True, dashboard="loopback")["ok"]
    assert firewall.protections(token=True, firewall=False, dashboard="off")["ok"]
    assert firewall.protections(token=True, firewall=True, dashboard="loopback")["summary"] == (
        "token authentication on; firewall on (Ray's ports for the cluster's nodes only); dashboard on the head's "
        "loopback")


def test_the_dashboard_on_every_address_is_refused_without_a_token_even_behind_the_firewall():
    refused = cluster_filters.ray_protections(False, True, "all")
    assert not refused["ok"] and refused["problems"][0].startswith("ray_cluster_dashboard is all, but this stack's Ray")
    refused = firewall.protections(token=False, firewall=True, dashboard="all")
    assert not refused["ok"] and refused["problems"][0].startswith("{dashboard} is all, but this stack's Ray")
    assert firewall.protections(token=True, firewall=True, dashboard="all")["ok"]


# Documentation/networking/proc_net_tcp.rst: "46: 010310AC:9C4C 030310AC:1770 01" is 172.16.3.1:40012 to
# 172.16.3.3:6000, established (01); LISTEN is 0A. Each 32-bit word is in host (little-endian) order.
PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0
   1: 0100007F:2049 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 100 0 0 10 0
  46: 010310AC:9C4C 030310AC:1770 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0
"""
PROC_NET_TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000
   1: 0000000000000000FFFF00000100007F:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000
"""


def test_listening_ports_are_read_from_proc_net_tcp():
    assert firewall.listening_ports(PROC_NET_TCP, PROC_NET_TCP6) == {
        6379: ["0.0.0.0", "127.0.0.1"], 8265: ["127.0.0.1"], 8080: ["::"]}


def test_a_port_in_use_on_this_machine_is_seen_and_named_as_a_clash():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with open("/proc/net/tcp", encoding="ascii") as handle:
            listening = firewall.listening_ports(handle.read())
        assert listening[port] == ["127.0.0.1"]
        # the clash is judged on this socket alone: what else listens here (another test's server, a webhook
        # listener of molecule's on 18081, in Ray's worker range) is this machine's, not the test's
        listening = {port: listening[port]}
        settings = {"ray_cluster_agent_port": port} if not 10002 <= port <= 19999 else \
            {"ray_cluster_agent_port": port, "ray_cluster_min_worker_port": 30000, "ray_cluster_max_worker_port": 30100}
        rows = cluster_filters.ray_port_plan(settings)
        assert firewall.clashes(rows, listening, "worker") == [("ray_cluster_agent_port", port, ["127.0.0.1"])]
        # the engine's own rows are named by their fields
        fields = {key[len("ray_cluster_"):]: value for key, value in settings.items()}
        assert firewall.clashes(firewall.port_plan(fields), listening, "worker") == [("agent_port", port,
                                                                                     ["127.0.0.1"])]


# The module, for real: nft run through nsenter in a network namespace of its own (a process made with unshare -n),
# as the cluster stage enters a container's from the host.
@pytest.fixture
def netns():
    if not shutil.which("nft") or not shutil.which("unshare"):
        pytest.fail("nft and unshare are needed: apt-get install nftables util-linux (files/prepare-host.sh)")
    proc = subprocess.Popen(["unshare", "-n", "sleep", "600"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _listing(pid):
    return subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % pid, "nft", "list", "ruleset"], capture_output=True,
                          text=True, check=True).stdout


def test_the_module_loads_the_table_once_follows_the_members_shows_check_mode_and_removes_it(netns):
    params = {"ports": DEFAULT_PORTS, "members": ["10.0.0.11", "10.0.0.12"], "pid": netns}
    first = run_module("ray_firewall", params)
    assert first["changed"] and first["before"] == "", first.get("msg")
    listed = _listing(netns)
    assert "table inet grpo_ray" in listed and first["fingerprint"] in listed
    assert not run_module("ray_firewall", params)["changed"]
    # check mode: the change and its diff are shown, nothing is loaded
    moved = dict(params, members=["10.0.0.11", "10.0.0.22"])
    checked = run_module("ray_firewall", moved, check=True)
    assert checked["changed"] and "10.0.0.22" in checked["diff"]["after"] and "10.0.0.12" in checked["diff"]["before"]
    assert _listing(netns) == listed
    # a node back with a new address: the rules follow it
    assert run_module("ray_firewall", moved)["changed"]
    assert "10.0.0.22" in _listing(netns) and "10.0.0.12" not in _listing(netns)
    # our table only: another table in that namespace stays as it is
    subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % netns, "nft", "add", "table", "inet", "theirs"], check=True)
    assert run_module("ray_firewall", {"state": "absent", "pid": netns}, check=True)["changed"]
    assert "grpo_ray" in _listing(netns)
    gone = run_module("ray_firewall", {"state": "absent", "pid": netns})
    assert gone["changed"] and "grpo_ray" not in _listing(netns) and "table inet theirs" in _listing(netns)
    assert not run_module("ray_firewall", {"state": "absent", "pid": netns})["changed"]


def test_without_nft_the_check_fails_naming_the_package_and_absent_has_nothing_to_remove():
    missing = run_module("ray_firewall", {"state": "check", "nft": "/nonexistent/nft",
                                          "setting_names": role_setting_names("ray_cluster", "ray_firewall")})
    assert missing["failed"] and "install nftables on the host" in missing["msg"]
    assert "ray_cluster_firewall" in missing["msg"]
    assert run_module("ray_firewall", {"state": "absent", "nft": "/nonexistent/nft"})["changed"] is False


# Issue 44: one host is locked as a cluster is. The run's own servers (torch's rendezvous store, Gloo, vLLM) listen
# at free ports outside Ray's pinned set, 35 of 61 on the two-host cluster, and a one-host run's Ray picks its ports
# itself; a container's own namespace is kept whole, the host's network by Ray's ports and the ephemeral range.
def test_a_training_environment_with_its_own_namespace_keeps_every_port_and_one_host_needs_no_member():
    rows = firewall.port_plan({})
    assert firewall.guard_ports(rows, "head", True) == ["1-65535"]
    assert firewall.guard_ports(rows, "worker", False) == firewall.node_ports(rows, "worker")
    alone = firewall.ruleset(firewall.guard_ports(rows, "head", True), [], allow_no_members=True)
    body = alone["rules"]
    assert "set members" not in body and "@members" not in body
    assert "elements = { 1-65535 }" in body
    assert [line.strip() for line in body.splitlines() if "drop" in line] == [
        "udp dport @ray_ports drop", 'tcp dport @ray_ports drop comment "%s"' % alone["fingerprint"]]
    # the host itself (its Docker gateway) is a member: the ssh tunnel to TensorBoard comes from there
    with_host = firewall.ruleset(["1-65535"], ["172.17.0.1"], allow_no_members=True)
    assert "elements = { 172.17.0.1 }" in with_host["rules"] and with_host["fingerprint"] != alone["fingerprint"]
    # a cluster still needs its members
    with pytest.raises(firewall.FirewallError, match="no cluster node address"):
        firewall.ruleset(["1-65535"], [])


def test_the_ephemeral_range_joins_rays_ports_without_overlapping_spans():
    # /proc/sys/net/ipv4/ip_local_port_range as the kernel prints it (ip-sysctl.rst: "32768 60999" by default)
    assert firewall.ephemeral_span("32768\t60999\n") == "32768-60999"
    with pytest.raises(firewall.FirewallError, match="not two numbers"):
        firewall.ephemeral_span("32768")
    rows = firewall.port_plan({})
    rules = firewall.ruleset(firewall.node_ports(rows, "head") + ["32768-60999"], ["10.0.0.11"])["rules"]
    # 44217, 44227 and 52365-52368 lie inside the range: an nft interval set refuses overlapping elements
    assert "elements = { 6379, 6380, 6381, 8265, 8266, 10001, 10002-19999, 32768-60999 }" in rules


def test_one_host_on_the_hosts_network_or_without_the_firewall_is_refused_naming_the_ways_out():
    assert cluster_filters.ray_one_host_problems(False, True) == []
    host = cluster_filters.ray_one_host_problems(True, True)
    assert len(host) == 1 and "npu_container_network: host" in host[0] and "npu_container_mode: none" in host[0]
    assert "Leave npu_container_network empty" in host[0]
    assert "ray_cluster_accept_open_ports_without_auth: true" in host[0]
    off = cluster_filters.ray_one_host_problems(False, False)
    assert len(off) == 1 and "Turn ray_cluster_firewall on" in off[0]
    assert cluster_filters.ray_one_host_problems(True, False, True) == []
    # the engine names its inputs; the filter above, the settings
    host = firewall.one_host_problems(host_network=True, firewall_on=True)
    assert "({network}: host, or {mode}: none)" in host[0] and "Leave {network} empty" in host[0]
    assert "{accept_open}: true" in host[0]
    assert "Turn {firewall} on" in firewall.one_host_problems(host_network=False, firewall_on=False)[0]
    assert firewall.one_host_problems(host_network=True, firewall_on=False, accept_open=True) == []


def test_the_module_loads_the_one_host_table_and_the_ephemeral_range_in_a_namespace(netns):
    alone = run_module("ray_firewall", {"ports": ["1-65535"], "members": [], "one_host": True, "pid": netns})
    assert alone["changed"], alone.get("msg")
    listed = _listing(netns)
    assert alone["fingerprint"] in listed and "1-65535" in listed
    assert not run_module("ray_firewall", {"ports": ["1-65535"], "members": [], "one_host": True,
                                           "pid": netns})["changed"]
    wide = run_module("ray_firewall", {"ports": DEFAULT_PORTS, "members": ["10.0.0.11"], "ephemeral": True,
                                       "pid": netns})
    span = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % netns, "cat",
                           "/proc/sys/net/ipv4/ip_local_port_range"], capture_output=True, text=True,
                          check=True).stdout.split()
    assert wide["changed"], wide.get("msg")
    assert "%s-%s" % (span[0], span[1]) in wide["rules"]
    refused = run_module("ray_firewall", {"ports": ["1-65535"], "members": [], "pid": netns})
    assert refused["failed"] and "no cluster node address" in refused["msg"]
