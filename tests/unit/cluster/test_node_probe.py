"""The ray_node_info module's engine, in-process: the branches its module tests do not reach (an interface that
is not there, a port that frees while the probe waits)."""

import pytest

from ascend_grpo.cluster import firewall, node_probe

ARGS = {"head_address": None, "port": 6379, "interface": None, "check_port": False, "ports": [], "role": "worker",
        "wait_free": 0}


def test_an_interface_that_is_not_there_fails_naming_both_settings():
    with pytest.raises(node_probe.ProbeError) as err:
        node_probe.route(dict(ARGS, interface="no-such-nic0"))
    assert err.value.msg.startswith("interface: interface no-such-nic0 has no IPv4 address here"), err.value.msg
    assert "Set {interface} to the NIC that reaches the other hosts, or {head_address} to an address of the head" \
        in err.value.msg, err.value.msg
    assert err.value.result == {}


def test_no_interface_and_no_head_gives_no_route():
    assert node_probe.route(ARGS) == (None, None)


def test_a_port_that_frees_while_waiting_is_no_clash(monkeypatch):
    seen = iter([{"6379": ["0.0.0.0"]}, {}])
    monkeypatch.setattr(firewall, "listening_here", lambda: next(seen))
    slept = []
    row = {"setting": "ray_cluster_port", "first": 6379, "last": 6379, "nodes": "all"}
    listening, clashes = node_probe.listening_after([row], "worker", 60, sleep=slept.append)
    assert listening == {} and clashes == [] and slept == [2]
