"""Fixtures of the assets stage's tests."""

import pytest


@pytest.fixture
def generous_time_limit(monkeypatch):
    """A loaded machine must not turn a slow math_verify call into a wrong verdict (one test lowers it). The reward's
    tests ask for it by name (``pytestmark``)."""
    monkeypatch.setenv("GRPO_REWARD_TIMEOUT_S", "10")
