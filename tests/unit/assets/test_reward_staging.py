"""A new reward is scored from a staging copy and only then replaces the workspace's: before, the reward_function
module wrote the new file over the old one (keeping a backup) and scored it after, so a reward that failed to score
had already replaced the one the next launch would train with."""

import os
import sys

from grpo_testkit import ROOT, run_module, tree_snapshot

from ascend_grpo.assets import reward_deploy

REWARD = open(os.path.join(ROOT, "roles", "assets", "files", "math_reward.py"), encoding="utf-8").read()
ENGINE = open(os.path.join(ROOT, "roles", "assets", "files", "math_reward_engine.py"), encoding="utf-8").read()
# scores every answer alike: it cannot tell a right answer from a wrong one
BAD = "def compute_score(**kwargs):\n    return 0.5\n"
BROKEN = "def compute_score(**kwargs):\n    raise RuntimeError('no math_verify here')\n"


def _workspace(tmp_path):
    """A workspace whose reward was deployed and proven, with a user's edit on top of it."""
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    params = {"content": REWARD, "engine_content": ENGINE, "dest": str(ws / "reward" / "math_reward.py"),
              "name": "compute_score", "python": sys.executable, "workspace": str(ws), "state_dir": str(ws / ".grpo")}
    first = run_module("reward_function", params)
    assert first["scored"] and not first.get("failed"), first.get("msg")
    return ws, params


def test_a_new_reward_that_fails_its_scoring_leaves_the_old_one_byte_for_byte(tmp_path):
    ws, params = _workspace(tmp_path)
    before = tree_snapshot(str(ws))
    for text, words in ((BAD, "scored 0.500 for a right and 0.500 for a wrong answer"),
                        (BROKEN, "failed to score an answer")):
        result = run_module("reward_function", dict(params, content=text))
        assert result.get("failed"), result
        assert tree_snapshot(str(ws)) == before  # no staging copy, no backup, the proof as it was
        assert (ws / "reward" / "math_reward.py").read_text() == REWARD
        assert words in result["msg"] and "assets_reward_src" in result["msg"]
        assert "the one there is kept as it was" in result["msg"]


def test_a_failing_reward_never_reaches_a_workspace_that_had_none(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".grpo").mkdir(parents=True)
    before = tree_snapshot(str(ws))
    result = run_module("reward_function", {"content": BAD, "dest": str(ws / "reward" / "math_reward.py"),
                                            "python": sys.executable, "workspace": str(ws),
                                            "state_dir": str(ws / ".grpo")})
    assert result.get("failed")
    assert tree_snapshot(str(ws)) == before
    assert "scored 0.500" in result["msg"]


def test_a_new_reward_that_scores_replaces_the_old_one_keeping_it(tmp_path):
    ws, params = _workspace(tmp_path)
    dest = ws / "reward" / "math_reward.py"
    edited = REWARD + "\n# a new version\n"
    result = run_module("reward_function", dict(params, content=edited))
    assert result["changed"] and result["deploy"] == "replace" and result["scored"], result.get("msg")
    assert dest.read_text() == edited and open(result["backup"], encoding="utf-8").read() == REWARD
    assert [name for name in os.listdir(ws / ".grpo") if name.startswith("reward-staging")] == []


def test_the_engine_scores_the_staged_text_not_the_file_in_place(tmp_path):
    """The file in place scores well; the staged text does not: the engine must say so without touching it."""
    ws, params = _workspace(tmp_path)
    dest = ws / "reward" / "math_reward.py"
    try:
        reward_deploy.deploy(BAD, str(dest), "compute_score", sys.executable, str(ws), str(ws / ".grpo"),
                             engine=ENGINE)
    except reward_deploy.RewardError as err:
        assert "scored 0.500" in str(err) and str(dest) in str(err)
    else:
        raise AssertionError("a reward scoring 0.5 for every answer was deployed")
    assert dest.read_text() == REWARD
