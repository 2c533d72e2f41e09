"""Ports in the range their use allows, checked in the stage's first preflight task: a TCP port is 1-65535, and
TensorBoard's port is also the local end of the `ssh -N -L PORT:...` the tensorboard view prints, which a user who
is not root can open only from 1024. Before, grpo_train_tensorboard_port was a count: 70000 passed."""

import pytest
from grpo_testkit import run_role, tree_snapshot

from ascend_grpo.common import settings


@pytest.mark.parametrize("value, minimum", [(1, 1), (65535, 1), ("22", 1), (1024, 1024), (6006, 1024)])
def test_ports_in_range_pass(value, minimum):
    assert settings.problems([["port", "p", value, minimum]]) == []


@pytest.mark.parametrize("value, minimum", [(0, 1), (65536, 1), (70000, 1024), (-1, 1), ("80 ", 1024), (80, 1024),
                                            (True, 1), ("6006x", 1), (1.5, 1)])
def test_ports_out_of_range_are_refused_naming_the_setting(value, minimum):
    (problem,) = settings.problems([["port", "grpo_train_tensorboard_port", value, minimum]])
    assert problem == ("grpo_train_tensorboard_port (%r) must be a TCP port, a whole number from %d to 65535"
                       % (value, minimum))


@pytest.mark.parametrize("port", [70000, 80])
def test_the_train_stage_refuses_a_tensorboard_port_out_of_range_before_anything_changes(tmp_path, port):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    (ws / ".grpo" / "train.json").write_text('{"run_dir": "/data/grpo/runs/p/e"}\n')
    before = tree_snapshot(str(ws))
    done = run_role(tmp_path, "grpo_train", {"grpo_workspace": str(ws), "grpo_train_tensorboard_port": port})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Preflight | Check every setting of the stage (names, paths, environment variables, profiles, counts)"
    assert "grpo_train_tensorboard_port (%d) must be a TCP port, a whole number from 1024 to 65535" % port in msg
    assert tree_snapshot(str(ws)) == before
