"""The tests' module runner: a module run in the tests' process reports what ``ansible localhost -m`` reports.

The reference is Ansible itself: each case runs the module both ways on the same input (``spawn_module`` is
``ansible -m`` with the json callback) and compares the whole host result, key for key and value for value."""

import json
import os

import pytest
from grpo_testkit import run_module, spawn_module


@pytest.fixture
def no_spawning(monkeypatch):
    """run_module must not fall back to ``ansible``: a spawn here fails the test."""
    import grpo_testkit

    def refuse(*args, **kwargs):
        raise AssertionError("run_module spawned ansible: %r" % (args,))

    monkeypatch.setattr(grpo_testkit, "spawn_module", refuse)
    monkeypatch.delenv("GRPO_SPAWN_MODULES", raising=False)


def _both(name, params, check=False):
    ours = run_module(name, params, check=check)
    return ours, spawn_module(name, params, check=check)


def test_a_failure_is_reported_as_ansible_reports_it(tmp_path, no_spawning):
    """fail_json: ``failed`` present and true, the message, the invocation, the controller's keys."""
    params = {"state_dir": str(tmp_path), "read": ["assets", "train"], "inventory": "-i inventories/sim"}
    (tmp_path / "assets.json").write_text(json.dumps({"model_dir": "/m"}))
    ours = run_module("grpo_handover", params)
    assert ours["failed"] is True and "train.json is missing" in ours["msg"]
    assert ours == spawn_module("grpo_handover", params)


def test_check_mode_and_a_success_are_reported_as_ansible_reports_them(tmp_path, no_spawning):
    """Check mode reaches the module (nothing written, ``changed`` true); a success carries ``changed`` and no
    ``failed`` key at all, as the json callback prints it."""
    params = {"state_dir": str(tmp_path), "stage": "train", "record": {"run_dir": "/w/runs/p/e"}}
    ours, theirs = _both("grpo_handover", params, check=True)
    assert ours == theirs
    assert ours["changed"] is True and "failed" not in ours and not (tmp_path / "train.json").exists()
    done = run_module("grpo_handover", params)
    assert done["changed"] is True and "failed" not in done
    assert json.loads((tmp_path / "train.json").read_text()) == params["record"]
    again, theirs = _both("grpo_handover", params)  # the record is there now: both see the same state
    assert again == theirs and again["changed"] is False


def test_the_environment_and_the_working_folder_are_the_callers_again_afterwards(tmp_path, no_spawning):
    before, here = dict(os.environ), os.getcwd()
    os.chdir(tmp_path)
    try:
        run_module("grpo_handover", {"state_dir": str(tmp_path), "read": ["assets"]}, env={"GRPO_RUNNER_PROBE": "1"})
        assert os.getcwd() == str(tmp_path)
    finally:
        os.chdir(here)
    assert dict(os.environ) == before


def test_own_processes_still_spawns(monkeypatch):
    """A module that must see a /proc of its own cannot run in this process: that call keeps spawning."""
    import grpo_testkit

    calls = []
    monkeypatch.setattr(grpo_testkit, "spawn_module", lambda *a, **k: calls.append((a, k)) or {"changed": False})
    assert run_module("ray_node_info", {"interface": "lo"}, own_processes=True) == {"changed": False}
    assert calls and calls[0][1]["own_processes"] is True
