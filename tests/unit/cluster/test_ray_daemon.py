"""The ray_node module's engine (ascend_grpo.cluster.ray_daemon), in-process: the start script runs once and again
only when it changed or Ray stopped, check mode runs nothing, a failed head start and a timed-out command say so.
Ray is a fake run_command here and "running" a switch, so no Ray, no process table and no ansible process."""
import hashlib
import json
import os

import pytest

from ascend_grpo.cluster import ray_daemon


class FakeNode(object):
    """run_command for ``timeout <s> bash <script>`` and ``timeout <s> ray stop ...``: records each argv; a start
    sets the node running unless ``start_rc`` says it failed; a stop clears it."""

    def __init__(self, monkeypatch, running=False, start_rc=0, start_output="Ray runtime started."):
        self.running, self.start_rc, self.start_output, self.calls = running, start_rc, start_output, []
        monkeypatch.setattr(ray_daemon, "_running", lambda: self.running)

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[2] == "bash":
            self.running = self.start_rc == 0
            return self.start_rc, self.start_output, ""
        if argv[3] == "stop":
            self.running = False
            return 0, "Stopped all 3 Ray processes.", ""
        return 127, "", "unexpected"


def _params(tmp_path, **changes):
    script = tmp_path / "ray-start.sh"
    if not script.exists():
        script.write_text("ray start --head --port=6379\n")
    params = dict(state="started", state_dir=str(tmp_path), role="head", script=str(script), head_address=None,
                  port=6379, ray="ray", timeout=180)
    params.update(changes)
    return params


def test_the_script_runs_once_and_its_digest_is_kept(tmp_path, monkeypatch):
    node = FakeNode(monkeypatch)
    first = ray_daemon.converge(_params(tmp_path), False, node)
    assert first["changed"] is True and first["running"] is True
    assert node.calls == [["timeout", "180", "bash", str(tmp_path / "ray-start.sh")]]
    digest = hashlib.sha1(b"ray start --head --port=6379\n").hexdigest()
    assert first["diff"]["after"] == {"script_sha1": digest, "running": True}
    with open(os.path.join(str(tmp_path), "ray-node.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    assert record["script_sha1"] == digest and record["role"] == "head"
    assert ray_daemon.converge(_params(tmp_path), False, node) == {"changed": False, "running": True}
    assert len(node.calls) == 1


def test_a_changed_script_stops_ray_first_then_starts_it(tmp_path, monkeypatch):
    node = FakeNode(monkeypatch)
    ray_daemon.converge(_params(tmp_path), False, node)
    (tmp_path / "ray-start.sh").write_text("ray start --head --port=6390\n")
    again = ray_daemon.converge(_params(tmp_path), False, node)
    assert again["changed"] is True
    assert [argv[2:4] for argv in node.calls[1:]] == [["ray", "stop"], ["bash", str(tmp_path / "ray-start.sh")]]


def test_check_mode_runs_nothing_and_stopped_stops_only_a_running_ray(tmp_path, monkeypatch):
    node = FakeNode(monkeypatch)
    checked = ray_daemon.converge(_params(tmp_path), True, node)
    assert checked["changed"] is True and checked["running"] is False and node.calls == []
    assert ray_daemon.converge(_params(tmp_path, state="stopped"), False, node) == {"changed": False,
                                                                                   "running": False}
    node.running = True
    stopped = ray_daemon.converge(_params(tmp_path, state="stopped"), False, node)
    assert stopped["changed"] is True and stopped["running"] is False
    assert node.calls[0][2:5] == ["ray", "stop", "--grace-period"]


def test_a_failed_head_start_names_its_last_lines_and_a_timeout_says_so(tmp_path, monkeypatch):
    node = FakeNode(monkeypatch, start_rc=1, start_output="line 1\nValueError: port 6379 is in use\n")
    with pytest.raises(ray_daemon.NodeError, match=r"ray start --head failed: line 1 \| ValueError: port 6379") as err:
        ray_daemon.converge(_params(tmp_path), False, node)
    assert err.value.result["running"] is False
    slow = FakeNode(monkeypatch, start_rc=124, start_output="")
    with pytest.raises(ray_daemon.NodeError, match="did not finish within 180 s"):
        ray_daemon.converge(_params(tmp_path), False, slow)


def test_an_unreadable_script_is_refused(tmp_path, monkeypatch):
    node = FakeNode(monkeypatch)
    with pytest.raises(ray_daemon.NodeError, match="the start script .*nope.sh cannot be read"):
        ray_daemon.converge(_params(tmp_path, script=str(tmp_path / "nope.sh")), False, node)
    assert node.calls == []
