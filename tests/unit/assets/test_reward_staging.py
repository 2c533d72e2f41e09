"""A new reward is scored from a staging copy and only then replaces the workspace's: before, the reward_function
module wrote the new file over the old one (keeping a backup) and scored it after, so a reward that failed to score
had already replaced the one the next launch would train with."""

import os
import sys

from grpo_testkit import ROOT, run_module, tree_snapshot
from grpo_testkit.setting_names import role_setting_names

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
        result = run_module("reward_function", dict(params, content=text,
                                                    setting_names=role_setting_names("assets", "reward_function")))
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


def test_a_correct_reward_is_proven_on_a_host_too_busy_for_the_training_deadline(tmp_path, monkeypatch):
    """The proof scores a right answer although each judgment takes longer than the training deadline (a busy host:
    another stage, a run or a drill beside it): the deadline protects training's steps, not the proof. The package's
    reward, with a user's own 1 s deadline set and a math_verify that takes 1.5 s an answer."""
    import shutil

    from ascend_grpo.assets import reward_deploy

    folder = tmp_path / "reward"
    folder.mkdir()
    shutil.copy(os.path.join(ROOT, "roles", "assets", "files", "math_reward.py"), folder)
    engine = (open(os.path.join(ROOT, "roles", "assets", "files", "math_reward_engine.py"), encoding="utf-8").read()
              .replace("    def correct(truth: str, response: str) -> bool:\n",
                       "    def correct(truth: str, response: str) -> bool:\n        time.sleep(1.5 if served else 0)\n")
              .replace('    reply("ready")\n', '    served = True\n    reply("ready")\n')
              .replace("    for truth, response in _WARM_UP:", "    served = False\n    for truth, response in _WARM_UP:"))
    assert [engine.count(part) for part in ("time.sleep(1.5 if served", "served = True", "served = False")] == [1, 1, 1]
    (folder / "math_reward_engine.py").write_text(engine, encoding="utf-8")
    monkeypatch.setenv("GRPO_REWARD_TIMEOUT_S", "1")
    assert reward_deploy.score(sys.executable, str(folder / "math_reward.py"), "compute_score") == \
        {"right": 0.95, "wrong": 0.0}
