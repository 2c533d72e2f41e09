"""The cluster stage's modules name the stage's settings in their refusals, through the mapping each role's tasks
pass (``setting_names``); its filters name them for the engines' plans and protections (cluster_filters, tested in
test_firewall.py and test_cluster.py). The engines know only their options (issue 45, item 3)."""

import socket

import pytest
from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names


@pytest.fixture()
def closed_port():
    """A TCP port on loopback nothing listens on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize("role", ["ray_cluster", "npu_container", "grpo_train"])
def test_a_host_without_nft_names_the_firewall_setting_in_the_fix(role):
    """Three stages check for nft with ray_firewall; each names the cluster stage's switch for the table."""
    result = run_module("ray_firewall", {"state": "check", "nft": "/nonexistent/nft",
                                         "setting_names": role_setting_names(role, "ray_firewall")})
    assert result["failed"] and "install nftables on the host" in result["msg"]
    assert "or set ray_cluster_firewall to false and keep every other machine away from Ray's ports" in result["msg"]
    assert "{" not in result["msg"]


def test_an_interface_that_is_not_there_names_both_settings_of_the_fix():
    result = run_module("ray_node_info", {"interface": "no-such-nic0",
                                          "setting_names": role_setting_names("ray_cluster", "ray_node_info")})
    assert result["failed"] and result["msg"].startswith("interface: interface no-such-nic0 has no IPv4 address")
    assert ("Set ray_cluster_interface to the NIC that reaches the other hosts, or ray_cluster_head_address to an "
            "address of the head they reach") in result["msg"], result["msg"]


def test_a_head_that_does_not_answer_names_the_address_setting(closed_port):
    result = run_module("ray_node_info", {"head_address": "127.0.0.1", "port": closed_port, "check_port": True,
                                          "setting_names": role_setting_names("ray_cluster", "ray_node_info")})
    assert result["failed"] and "cannot reach the head at 127.0.0.1:%d" % closed_port in result["msg"]
    assert "one this node reaches (ray_cluster_head_address), and that the firewall" in result["msg"]


def test_a_worker_that_cannot_reach_the_head_names_the_address_setting_before_it_starts(tmp_path, closed_port):
    script = tmp_path / "start_ray.sh"
    script.write_text("touch %s/ran\n" % tmp_path)
    result = run_module("ray_node", {"state": "started", "role": "worker", "script": str(script),
                                     "state_dir": str(tmp_path), "head_address": "127.0.0.1", "port": closed_port,
                                     "setting_names": role_setting_names("ray_cluster", "ray_node")},
                        own_processes=True)
    assert result.get("failed") and "(ray_cluster_head_address)" in result["msg"], result
    assert not (tmp_path / "ran").exists()


def test_without_a_mapping_the_messages_name_the_options():
    missing = run_module("ray_firewall", {"state": "check", "nft": "/nonexistent/nft"})
    assert "or set firewall to false" in missing["msg"], missing["msg"]
    route = run_module("ray_node_info", {"interface": "no-such-nic0"})
    assert "Set interface to the NIC that reaches the other hosts, or head_address to" in route["msg"], route["msg"]
