"""`--check --diff` on a fresh host (issue 43): the container stage only previews the container, so every later
stage finds its training environment not running. In check mode each one says which stage cannot preview and why,
and ends for that environment, green; a real run still refuses, naming the stage to run first.

Each stage's role runs alone on this machine as the environment the container stage described in check mode
(``grpo_env_ready`` false): no Docker, no container."""

import pytest
from grpo_testkit import run_role

STAGES = [("deps_pinning", "deps"), ("verl_compat_patch", "patch"), ("assets", "assets"), ("grpo_train", "train"),
          ("grpo_eval", "eval")]


@pytest.mark.parametrize("role, stage", STAGES)
def test_a_stage_without_its_container_says_so_in_check_mode_and_ends_green(tmp_path, role, stage):
    done = run_role(tmp_path, role, {"grpo_env_ready": False}, "--check", "--diff")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "the container does not exist yet (or does not run): the %s stage cannot preview; a real run creates it " \
           "first" % stage in " ".join(done.stdout.split()), done.stdout[-3000:]
    # it ended there: none of the stage's own tasks ran, nothing was written
    assert done.failed == [] and done.changed == []
    ran = [task for _host, task in done.tasks("runner_on_ok")]
    assert ran and all(task.startswith(("Common |", "Validating arguments against arg spec 'main' - The workspace "
                                        "layout")) for task in ran), ran
    assert sorted(p.name for p in tmp_path.iterdir()) == ["%s.yml" % role]


def test_a_real_run_still_refuses_naming_the_container_stage(tmp_path):
    done = run_role(tmp_path, "deps_pinning", {"grpo_env_ready": False})
    assert done.returncode != 0
    assert "does not run: run the container stage first" in done.stdout, done.stdout[-3000:]
