"""The multi-host Ray cluster engine: the plan from the inventory, ray start's arguments, routes, joins, drift.

References come from verl's docs/start/multinode.rst at 634bd935 (ray start --head / --address=<head>:6379,
trainer.nnodes) and verl/single_controller/ray/base.py (on Ascend a worker asks Ray for {"NPU": n}), and from the
issue's facts (HCCL_IF_IP and the three *_SOCKET_IFNAME variables per node; token auth from Ray 2.52).
"""

import json
import socket

import pytest

from ascend_grpo.cluster import ray_nodes


def node(host, cards, head=False):
    return {"name": "qwen-grpo@" + host, "host": host, "cards": cards, "head": head}


def test_the_first_host_heads_and_the_inventory_gives_nnodes_and_cards():
    plan = ray_nodes.plan([node("a", [0, 1]), node("b", [0, 1]), node("c", [4, 5])])
    assert plan == {"head": "qwen-grpo@a", "head_host": "a", "nnodes": 3, "n_gpus_per_node": 2,
                    "workers": ["qwen-grpo@b", "qwen-grpo@c"], "problems": []}


def test_a_marked_host_or_the_setting_names_the_head():
    assert ray_nodes.plan([node("a", [0]), node("b", [0], head=True)])["head"] == "qwen-grpo@b"
    assert ray_nodes.plan([node("a", [0]), node("b", [0], head=True)], head="a")["head_host"] == "a"
    plan = ray_nodes.plan([node("a", [0], True), node("b", [0], True)])
    assert plan["problems"] == ["hosts a, b are all marked {head_node}: mark one"]
    plan = ray_nodes.plan([node("a", [0]), node("b", [0])], head="z")
    assert "{head} is z, which is not an NPU host (they are a, b)" in plan["problems"][0]


def test_unequal_cards_are_refused_naming_the_hosts_and_the_setting():
    plan = ray_nodes.plan([node("a", [0, 1, 2, 3, 4, 5, 6, 7]), node("b", [0, 1, 2, 3])])
    assert plan["problems"] == [
        "the hosts offer different numbers of cards (b: 4; a: 8), but verl gives every node the same "
        "trainer.n_gpus_per_node: set {cards} to as many cards on each host"]
    assert "has no card in {cards}" in ray_nodes.plan([node("a", [0]), node("b", [])])["problems"][0]
    assert ray_nodes.plan([])["problems"] == ["no NPU host in the inventory: list the hosts under npu_hosts"]


def test_versions_and_token_auth():
    assert ray_nodes.version_tuple("2.41.0") == (2, 41, 0)
    assert ray_nodes.version_tuple("2.60.0rc1") == (2, 60, 0)
    assert ray_nodes.version_tuple(None) == ()
    assert not ray_nodes.token_auth_supported("2.41.0")  # the guide's NPU pin
    assert not ray_nodes.token_auth_supported("2.51.9")
    assert ray_nodes.token_auth_supported("2.52.0")
    assert ray_nodes.token_auth_supported("2.60.0")  # the simulated host's
    assert not ray_nodes.token_auth_supported(None)


def test_each_node_gets_its_address_and_its_nic_for_hccl_gloo_and_tp():
    env = ray_nodes.node_env("10.0.0.12", "eth1", {"HCCL_CONNECT_TIMEOUT": "900"})
    assert env == {"HCCL_CONNECT_TIMEOUT": "900", "HCCL_IF_IP": "10.0.0.12", "HCCL_SOCKET_IFNAME": "eth1",
                   "GLOO_SOCKET_IFNAME": "eth1", "TP_SOCKET_IFNAME": "eth1"}


def test_the_head_keeps_its_dashboard_on_loopback_and_names_its_private_address():
    argv = ray_nodes.start_argv("head", "10.0.0.11", resources={"NPU": 8})
    assert argv == ["ray", "start", "--head", "--port=6379", "--include-dashboard=true",
                    "--dashboard-host=127.0.0.1", "--dashboard-port=8265", "--node-ip-address=10.0.0.11",
                    '--resources={"NPU":8}', "--disable-usage-stats"]
    assert "--include-dashboard=false" in ray_nodes.start_argv("head", "10.0.0.11", dashboard="off")
    assert "--dashboard-host=0.0.0.0" in ray_nodes.start_argv("head", "10.0.0.11", dashboard="all")
    with pytest.raises(ray_nodes.ClusterError, match=r"\{dashboard\} is one of"):
        ray_nodes.start_argv("head", "10.0.0.11", dashboard="public")


def test_a_worker_joins_the_heads_address():
    argv = ray_nodes.start_argv("worker", "10.0.0.12", head_ip="10.0.0.11", resources={"NPU": 8},
                                num_gpus=1, num_cpus=2, ray="/ws/venvs/stack/bin/ray")
    assert argv[:3] == ["/ws/venvs/stack/bin/ray", "start", "--address=10.0.0.11:6379"]
    assert "--head" not in argv and not any(a.startswith("--dashboard") for a in argv)
    assert "--num-gpus=1" in argv and "--num-cpus=2" in argv and "--node-ip-address=10.0.0.12" in argv
    with pytest.raises(ray_nodes.ClusterError):
        ray_nodes.start_argv("worker", "10.0.0.12")


def test_the_route_to_an_address_names_the_loopback_interface_here():
    known = ray_nodes.interfaces()
    assert known.get("lo") == "127.0.0.1"
    assert ray_nodes.route_to("127.0.0.1") == ("127.0.0.1", "lo")
    assert ray_nodes.address_of("lo") == "127.0.0.1"
    with pytest.raises(ray_nodes.ClusterError, match="interface nosuch0 has no IPv4 address here"):
        ray_nodes.address_of("nosuch0")
    with pytest.raises(ray_nodes.ClusterError, match="no interface has"):
        ray_nodes.route_to("127.0.0.1", known={"eth9": "10.9.9.9"})


def test_a_port_that_answers_and_one_that_refuses():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    assert ray_nodes.tcp_reachable("127.0.0.1", port) is None
    server.close()
    assert ray_nodes.tcp_reachable("127.0.0.1", port).startswith("connection refused")


def test_a_failed_join_says_why():
    why = ray_nodes.join_failure("", "10.0.0.11", 6379, "timed out after 5s (a firewall dropping the port, or a "
                                 "wrong address)")
    assert why.startswith("cannot reach the head at 10.0.0.11:6379 (timed out") and "({head_address})" in why
    why = ray_nodes.join_failure("", "10.0.0.11", 6379, None, head_version="2.41.0", own_version="2.60.0")
    assert why.startswith("version mismatch: the head runs Ray 2.41.0, this node Ray 2.60.0") and "deps" in why
    assert ray_nodes.join_failure("boom\nlast line\n", "h", 1, None) == "ray start failed: boom | last line"
    # what ray start printed when a proxy, not Ray, answered at the address (seen on the test machines)
    output = ("[2026-12-05 00:12:30,752 W 5094 5094] gcs_client.cc:210: Failed to get cluster ID from GCS server: "
              "RpcError: RPC error: Received http2 header with status: 404 rpc_code: 12\n")
    why = ray_nodes.join_failure(output, "10.255.255.1", 6379, None)
    assert why.startswith("something answers at 10.255.255.1:6379, but it is not a Ray head of this version (Failed")
    assert "Check {head_address} and {port}: they must name the head's Ray" in why
    # what a node with another token met (Ray 2.60 with RAY_AUTH_MODE=token, on the simulated hosts)
    output = ("gcs_client.cc:210: Failed to get cluster ID from GCS server: Unauthenticated: RPC error: "
              "InvalidAuthToken: Authentication token is missing or incorrect\n")
    assert ray_nodes.join_failure(output, "10.0.0.11", 6379, None).startswith("the head refused this node's token")


def test_ray_view_compared_with_the_inventory():
    seen = [{"NodeManagerAddress": "10.0.0.11", "Alive": True, "Resources": {"NPU": 8.0, "CPU": 192.0}},
            {"NodeManagerAddress": "10.0.0.12", "Alive": True, "Resources": {"NPU": 4.0}},
            {"NodeManagerAddress": "10.0.0.13", "Alive": False, "Resources": {"NPU": 8.0}},
            {"NodeManagerAddress": "10.0.0.99", "Alive": True, "Resources": {}}]
    expected = [{"name": "a", "ip": "10.0.0.11", "resources": {"NPU": 8}},
                {"name": "b", "ip": "10.0.0.12", "resources": {"NPU": 8}},
                {"name": "c", "ip": "10.0.0.13", "resources": {"NPU": 8}}]
    assert ray_nodes.compare_nodes(expected, seen) == {
        "joined": ["a"],
        "missing": [{"name": "b", "ip": "10.0.0.12", "why": "joined short of NPU 4 of 8"},
                    {"name": "c", "ip": "10.0.0.13", "why": "not in Ray's view of the cluster"}],
        "extra": ["10.0.0.99"]}


def test_stacks_compared_across_nodes():
    stacks = {"b": {"ray": "2.41.0", "torch": "2.8.0"}, "a": {"ray": "2.41.0", "torch": "2.8.0", "vllm": "0.13.0"}}
    assert ray_nodes.stack_drift(stacks) == ["vllm: a 0.13.0, b missing"]
    assert ray_nodes.stack_drift({"a": {"ray": "1"}, "b": {"ray": "1"}}) == []


def test_this_pythons_packages():
    packages = ray_nodes.installed_packages()
    assert packages["pytest"] == pytest.__version__
    json.dumps(packages)


def test_rays_daemons_are_found_by_their_executables(tmp_path):
    """What `ray start` leaves running: gcs_server (the head only) and raylet, named by their argv[0]."""
    procs = {"101": b"/ws/venvs/stack/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server\0--gcs_server_port=6379\0",
             "102": b"/ws/venvs/stack/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet\0--node_ip_address=10.0.0.11\0",
             "103": b"/ws/venvs/stack/bin/python\0-m\0verl.trainer.main_ppo\0",
             "self": b"bash\0"}
    for pid, cmdline in procs.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "cmdline").write_bytes(cmdline)
    (tmp_path / "104").mkdir()  # a process that ended while we looked: no cmdline
    assert ray_nodes.ray_processes(str(tmp_path)) == {"raylet": [102], "gcs_server": [101]}


# The filters the cluster stage and the status view use.
import cluster_filters  # noqa: E402
import train_filters  # noqa: E402


class FakeHostVars(dict):
    pass


def test_the_plan_filter_reads_each_environment_and_the_head_mark_on_its_npu_host():
    envs = [{"inventory_hostname": "qwen-grpo@a", "grpo_npu_host": "a", "grpo_cards": [0]},
            {"inventory_hostname": "qwen-grpo@b", "grpo_npu_host": "b", "grpo_cards": [0]}]
    hostvars = FakeHostVars(a={}, b={"grpo_cluster_head_node": True})
    plan = cluster_filters.cluster_plan(envs, hostvars, "")
    assert (plan["head"], plan["workers"], plan["nnodes"]) == ("qwen-grpo@b", ["qwen-grpo@a"], 2)
    assert cluster_filters.cluster_plan(envs, hostvars, "a")["head"] == "qwen-grpo@a"


def test_the_plan_filters_name_the_settings_of_the_plans_problems():
    """The engine names its inputs ({head}, {head_node}, {cards}); the filters, the role layer, name the settings."""
    envs = [{"inventory_hostname": "qwen-grpo@a", "grpo_npu_host": "a", "grpo_cards": [0]},
            {"inventory_hostname": "qwen-grpo@b", "grpo_npu_host": "b", "grpo_cards": [0]}]
    marked = FakeHostVars(a={"grpo_cluster_head_node": True}, b={"grpo_cluster_head_node": True})
    assert cluster_filters.cluster_plan(envs, marked, "")["problems"] == [
        "hosts a, b are all marked grpo_cluster_head_node: mark one"]
    assert "grpo_cluster_head is z, which is not an NPU host (they are a, b)" in cluster_filters.cluster_plan(
        envs, FakeHostVars(a={}, b={}), "z")["problems"][0]
    assert cluster_filters.cluster_nodes_plan([node("a", [0, 1, 2, 3, 4, 5, 6, 7]), node("b", [0, 1, 2, 3])])[
        "problems"] == ["the hosts offer different numbers of cards (b: 4; a: 8), but verl gives every node the same "
                        "trainer.n_gpus_per_node: set npu_container_visible_devices to as many cards on each host"]
    assert "has no card in npu_container_visible_devices" in cluster_filters.cluster_nodes_plan(
        [node("a", [0]), node("b", [])])["problems"][0]


def test_the_start_argv_filter_names_the_dashboard_setting():
    with pytest.raises(ray_nodes.ClusterError, match="^ray_cluster_dashboard is one of loopback, off, all, not 'public'$"):
        cluster_filters.ray_start_argv("head", "10.0.0.11", dashboard="public")


def test_ray_start_argv_filter_drops_unset_counts():
    argv = cluster_filters.ray_start_argv("worker", "10.0.0.12", head_ip="10.0.0.11", num_gpus=None, num_cpus="",
                                          resources={"NPU": 1}, port=6379)
    assert not any(a.startswith(("--num-gpus", "--num-cpus")) for a in argv)


def test_a_node_in_rays_view_for_the_status_table():
    view = {"nodes": [{"ip": "10.0.0.11", "alive": True, "resources": {"NPU": 8.0, "CPU": 192.0, "memory": 1e12,
                                                                         "node:10.0.0.11": 1.0}},
                      {"ip": "10.0.0.12", "alive": False, "resources": {"NPU": 8.0}}], "error": None}
    assert train_filters.cluster_node_view(view, "10.0.0.11") == "10.0.0.11 alive, CPU 192, NPU 8"
    assert train_filters.cluster_node_view(view, "10.0.0.12") == "10.0.0.12 not in Ray's view"
    assert train_filters.cluster_node_view({"nodes": [], "error": "no answer"}, "10.0.0.12") == (
        "10.0.0.12: cluster not answering")


def test_the_status_table_gets_a_ray_column_only_for_a_cluster():
    rows = [{"host": "qwen-grpo@a", "state": "running", "summary": {"step": 3, "total_steps": 8},
             "ray": "10.0.0.11 alive, NPU 8"},
            {"host": "qwen-grpo@b", "state": "node of qwen-grpo@a", "ray": "10.0.0.12 alive, NPU 8"}]
    table = train_filters.train_status_table(rows).splitlines()
    assert table[0].split()[-1] == "RAY"
    assert table[2].startswith("qwen-grpo@a  running") and table[2].endswith("10.0.0.11 alive, NPU 8")
    assert table[3].startswith("qwen-grpo@b  node of qwen-grpo@a") and table[3].endswith("10.0.0.12 alive, NPU 8")
    single = train_filters.train_status_table([{"host": "h", "state": "finished"}])
    assert "RAY" not in single
