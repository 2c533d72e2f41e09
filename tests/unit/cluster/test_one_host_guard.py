"""One host locked as a cluster is (issue 44): with one NPU host verl's ray.init() starts Ray on the container's
address at random ports, the dashboard agent's job API (52365) among them, and the guide's Ray 2.41 has no token.
On the host's network (npu_container_network: host, npu_container_mode: none) nothing can keep them, so the
container stage refuses before it makes anything; the table itself is proven in tests/unit/cluster/test_firewall.py and by
molecule's intruder drill."""
import os

import pytest

from grpo_testkit import run_role

REFUSAL = "Preflight | Refuse a one-host run on the host's network that nothing keeps from the network"


@pytest.mark.parametrize("setting", [{"npu_container_network": "host"}, {"npu_container_mode": "none"}])
def test_one_host_on_the_hosts_network_is_refused_before_anything_is_made(tmp_path, setting):
    done = run_role(tmp_path, "npu_container", dict(setting, npu_container_workspace_host=str(tmp_path / "ws")))
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == REFUSAL, msg
    assert "verl's Ray would listen on the host's own addresses" in msg
    assert "Leave npu_container_network empty" in msg and "ray_cluster_accept_open_ports_without_auth" in msg
    assert os.listdir(tmp_path) == ["npu_container.yml"]  # nothing made


def test_the_refusal_is_lifted_only_by_the_users_own_firewall_setting(tmp_path):
    done = run_role(tmp_path, "npu_container", {"npu_container_network": "host",
                                                "ray_cluster_accept_open_ports_without_auth": True,
                                                "npu_container_workspace_host": str(tmp_path / "ws")})
    assert REFUSAL not in [task for _host, task, _msg in done.failed]
