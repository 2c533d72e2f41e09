"""ray_cluster_view asks a driver for ray.nodes() through run_command under timeout(1) and compares the answer with
the nodes the plan expects. A stand-in Python prints what a driver prints (the ``@@nodes`` line of ray.nodes()
entries: NodeManagerAddress, Alive, Resources, as Ray documents them), sleeps, or fails."""

import json

from grpo_testkit import run_module

NODES = [{"NodeManagerAddress": "10.0.0.11", "Alive": True, "Resources": {"NPU": 8.0, "CPU": 192.0}},
         {"NodeManagerAddress": "10.0.0.12", "Alive": True, "Resources": {"NPU": 4.0, "CPU": 192.0}},
         {"NodeManagerAddress": "10.0.0.99", "Alive": False, "Resources": {}}]
EXPECTED = [{"name": "npu-a", "ip": "10.0.0.11", "resources": {"NPU": 8}},
            {"name": "npu-b", "ip": "10.0.0.12", "resources": {"NPU": 8}},
            {"name": "npu-c", "ip": "10.0.0.13", "resources": {"NPU": 8}}]


def fake_python(tmp_path, body):
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_the_view_names_who_joined_who_is_short_and_who_is_missing(tmp_path):
    python = fake_python(tmp_path, "[ \"$RAY_AUTH_MODE\" = token ] || exit 3\n"
                                   "echo 'a log line first'\necho '@@nodes %s'" % json.dumps(NODES))
    view = run_module("ray_cluster_view", {"address": "10.0.0.11:6379", "python": python, "expected": EXPECTED,
                                           "env": {"RAY_AUTH_MODE": "token"}, "timeout": 10})
    assert not view.get("failed") and view["changed"] is False and view["error"] is None, view
    assert view["joined"] == ["npu-a"]
    assert view["missing"] == [{"name": "npu-b", "ip": "10.0.0.12", "why": "joined short of NPU 4 of 8"},
                               {"name": "npu-c", "ip": "10.0.0.13", "why": "not in Ray's view of the cluster"}]
    assert view["extra"] == []
    assert {"ip": "10.0.0.99", "alive": False, "resources": {}} in view["nodes"]


def test_a_driver_that_does_not_answer_in_time_is_reported_not_waited_on(tmp_path):
    python = fake_python(tmp_path, "sleep 30")
    view = run_module("ray_cluster_view", {"address": "10.0.0.11:6379", "python": python, "timeout": 1})
    assert not view.get("failed") and view["nodes"] == [], view
    assert view["error"] == "no answer from 10.0.0.11:6379 within 1s"


def test_a_driver_that_fails_is_reported_with_the_end_of_its_output(tmp_path):
    python = fake_python(tmp_path, "echo 'ConnectionError: could not connect to 10.0.0.11:6379' >&2; exit 1")
    view = run_module("ray_cluster_view", {"address": "10.0.0.11:6379", "python": python, "timeout": 10})
    assert view["error"] == "asking 10.0.0.11:6379 failed: ConnectionError: could not connect to 10.0.0.11:6379"


def test_a_python_that_is_not_there_is_reported(tmp_path):
    view = run_module("ray_cluster_view", {"address": "10.0.0.11:6379", "python": str(tmp_path / "nope"),
                                           "timeout": 10})
    assert view["error"].startswith("%s cannot run" % (tmp_path / "nope")), view
