"""The GRPO math reward (roles/assets/files/math_reward.py): its deadline, threads, batches and helper processes (the
helpers and the reference: grpo_testkit/reward.py)."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from grpo_testkit.reward import (F4, HANG, REWARD_FILE, STEPS, engine, full, generated, reference, reward,
                                 score)

# GRPO_REWARD_TIMEOUT_S raised for every test here (tests/unit/assets/conftest.py)
pytestmark = pytest.mark.usefixtures("generous_time_limit")


# ---------------------------------------------------------------- the deadline, threads, batches, processes


def test_deadline_kills_and_replaces_the_helper(monkeypatch):
    """An answer math_verify cannot finish and no shortcut covers: not correct after the limit."""
    monkeypatch.setenv("GRPO_REWARD_TIMEOUT_S", "0.5")
    slow = full(r"\boxed{9^{9^{9^{9}}}-9^{9^{9^{9}}}+3}")
    assert engine._shortcut_verdict(slow, "5") is None
    start = time.monotonic()
    assert score(reward, slow, "5") == 0.0
    assert time.monotonic() - start < 2.0
    assert score(reward, full(r"\boxed{2x+1}"), "1+2x") == 0.7 + F4 + 0.1  # a new helper answers


def test_batch_with_a_slow_answer_in_the_middle(monkeypatch):
    monkeypatch.setenv("GRPO_REWARD_TIMEOUT_S", "0.5")
    texts = [full(r"\boxed{x+%d}" % i) for i in range(6)]
    texts[2] = full(r"\boxed{9^{9^{9^{9}}}-9^{9^{9^{9}}}+3}")
    truths = ["x+%d" % i for i in range(6)]
    scores = reward.compute_score_batch(["m"] * 6, texts, truths)
    assert scores == [0.7 + F4 + 0.1] * 2 + [0.0] + [0.7 + F4 + 0.1] * 3


def test_non_main_thread_gives_the_same_scores():
    cases = [(full(r"\boxed{x^2 - 1}"), "-1+x^2"), (full(r"\boxed{\sqrt{8}}"), r"2\sqrt{2}"), (HANG, "3")]
    results = []
    thread = threading.Thread(target=lambda: results.extend(score(reward, r, t) for r, t in cases))
    thread.start()
    thread.join(timeout=30)
    assert results == [0.7 + F4 + 0.1, 0.7 + F4 + 0.1, 0.0]


def test_invalid_inputs_score_zero_and_never_raise():
    for text, truth in [(None, "3"), (full(r"\boxed{3}"), None), (full(r"\boxed{3}").encode(), "3"), ("", "3"),
                        (full(r"\boxed{3}"), ["3"])]:
        assert score(reward, text, truth) == 0.0


def test_batch_equals_single_calls():
    cases = generated(300, seed=17) + [(HANG, "3")]
    batch = reward.compute_score_batch(["m"] * len(cases), [c[0] for c in cases], [c[1] for c in cases])
    assert batch == [score(reward, text, truth) for text, truth in cases]


def test_large_response():
    big = "Some words about the problem, repeated. " * 26_000  # about 1 MB
    text = full(r"\boxed{3}", STEPS + "\n" + big)
    assert score(reward, text, "3") == score(reference, text, "3") == 0.7 + F4 + 0.1


def test_helper_processes_end_with_the_interpreter():
    script = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("custom_module", {REWARD_FILE!r})
        module = importlib.util.module_from_spec(spec)
        sys.modules["custom_module"] = module
        spec.loader.exec_module(module)
        print(module.compute_score(data_source="m", solution_str=r"\\boxed{{x^2+1}}", ground_truth="1+x^2"))
        print(module.engine()._get_pool().all[0].proc.pid)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    verdict, pid = out.stdout.split()
    assert verdict == "0.7"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
