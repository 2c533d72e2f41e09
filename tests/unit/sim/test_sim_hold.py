"""The fault drills' hold (files/sim/sim_reward.py, SIMULATED HOST ONLY): a run stands inside the step after a given
save while the drill's hold file is there, whatever the machine's speed, and goes on once it is removed.

What the drills rely on, from molecule/common/tasks/hold.yml: the hold file is JSON with the tracker (verl's
latest_checkpointed_iteration.txt), the step, the marker to write and a timeout."""

import importlib.util
import json
import os
import shutil
import threading
import time

import pytest
from grpo_testkit import ROOT


@pytest.fixture
def reward(tmp_path):
    """sim_reward.py laid out as the sim host lays it out (<workspace>/sources/reward, the package's reward in
    <workspace>/reward), loaded as verl loads a custom reward: from its path."""
    (tmp_path / "sources" / "reward").mkdir(parents=True)
    (tmp_path / "reward").mkdir()
    (tmp_path / ".grpo").mkdir()
    shutil.copy(os.path.join(ROOT, "files", "sim", "sim_reward.py"), tmp_path / "sources" / "reward")
    for name in ("math_reward.py", "math_reward_engine.py"):  # the rules and the engine they load from their folder
        shutil.copy(os.path.join(ROOT, "roles", "assets", "files", name), tmp_path / "reward")
    spec = importlib.util.spec_from_file_location("sim_reward", tmp_path / "sources" / "reward" / "sim_reward.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hold(tmp_path, after, saved, timeout=30):
    tracker = tmp_path / "latest_checkpointed_iteration.txt"
    tracker.write_text("%d" % saved)
    marker = tmp_path / "held"
    (tmp_path / ".grpo" / "drill-hold").write_text(json.dumps(
        {"tracker": str(tracker), "after_step": after, "held": str(marker), "timeout_s": timeout}))
    return tracker, marker


def score(reward):
    return reward.compute_score("math", "The answer is \\boxed{2}", "2")


def test_without_a_hold_file_the_reward_scores_at_once(reward, tmp_path):
    start = time.monotonic()
    assert reward.hold_for_drill() is None
    assert 0 < score(reward) and time.monotonic() - start < 5


def test_before_the_step_is_saved_nothing_waits(reward, tmp_path):
    _, marker = hold(tmp_path, after=4, saved=3)
    assert reward.hold_for_drill() is None
    assert not marker.exists()


def test_after_the_save_the_reward_waits_until_the_hold_file_goes(reward, tmp_path):
    unheld = score(reward)
    _, marker = hold(tmp_path, after=4, saved=4)
    done = []
    worker = threading.Thread(target=lambda: done.append(score(reward)))
    worker.start()
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "4\n"
    time.sleep(0.5)
    assert worker.is_alive() and done == []  # held: the drill acts now
    (tmp_path / ".grpo" / "drill-hold").unlink()
    worker.join(5)
    assert not worker.is_alive() and done == [unheld]  # the hold changes no score


def test_a_forgotten_hold_ends_at_its_timeout_and_is_not_waited_for_again(reward, tmp_path):
    _, marker = hold(tmp_path, after=2, saved=5, timeout=0.3)
    start = time.monotonic()
    assert reward.hold_for_drill() == 5
    assert 0.3 <= time.monotonic() - start < 3
    marker.unlink()
    start = time.monotonic()
    assert reward.hold_for_drill() is None and not marker.exists()
    assert time.monotonic() - start < 0.1


def test_what_the_run_printed_reaches_its_log_before_it_stands_still(reward, tmp_path, monkeypatch):
    """A Ray worker's stdout is block buffered: the step line printed just before the hold must not wait in the
    buffer while the drill waits for it."""
    import io

    log = tmp_path / "worker.out"
    buffered = io.TextIOWrapper(open(log, "wb"), line_buffering=False)
    monkeypatch.setattr("sys.stdout", buffered)
    _, marker = hold(tmp_path, after=3, saved=3, timeout=30)
    buffered.write("step:3 - training/global_step:3\n")
    worker = threading.Thread(target=reward.hold_for_drill)
    worker.start()
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text() == "step:3 - training/global_step:3\n"
    (tmp_path / ".grpo" / "drill-hold").unlink()
    worker.join(5)
