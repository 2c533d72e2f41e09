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


# The engine in-process: a stand-in run_command answers as timeout(1) and a driver would.

def runner(*answers):
    """A run_command of module.run_command's shape that gives ``answers`` in turn and keeps what it was asked."""
    calls = []

    def run_command(argv, environ_update=None):
        calls.append((argv, environ_update))
        return answers[min(len(calls), len(answers)) - 1]
    return run_command, calls


def test_the_engine_asks_again_until_every_expected_node_is_there():
    from ascend_grpo.cluster import cluster_view
    short = (0, "@@nodes %s\n" % json.dumps(NODES[:1]), "")
    full = (0, "@@nodes %s\n" % json.dumps(NODES[:1] + [dict(NODES[1], Resources={"NPU": 8.0})]), "")
    run_command, calls = runner(short, full)
    slept = []
    view = cluster_view.view({"address": "10.0.0.11:6379", "python": "/venv/bin/python", "expected": EXPECTED[:2],
                              "env": {"RAY_AUTH_MODE": "token"}, "wait": 60, "timeout": 7}, run_command,
                             sleep=slept.append)
    assert view["error"] is None and view["missing"] == [] and view["joined"] == ["npu-a", "npu-b"], view
    assert len(calls) == 2 and slept == [5]
    argv, env = calls[0]
    assert argv[:3] == ["timeout", "7", "/venv/bin/python"] and argv[-1] == "10.0.0.11:6379"
    assert env == {"RAY_AUTH_MODE": "token"}


def test_the_engine_reports_a_timed_out_driver_with_timeouts_status():
    """124 is timeout(1)'s documented exit status when the command ran out of time."""
    from ascend_grpo.cluster import cluster_view
    run_command, calls = runner((124, "", ""))
    view = cluster_view.view({"address": "h:6379", "python": "py", "expected": [], "env": {}, "wait": 0,
                              "timeout": 3}, run_command)
    assert view["error"] == "no answer from h:6379 within 3s" and view["nodes"] == [] and len(calls) == 1


def test_a_driver_that_prints_no_nodes_and_no_output_is_named_by_its_status():
    from ascend_grpo.cluster import cluster_view
    nodes, error = cluster_view.ask(runner((2, "", ""))[0], "py", "h:6379", {}, 3)
    assert nodes == [] and error == "asking h:6379 failed: rc 2"
