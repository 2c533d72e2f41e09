"""The grpo_job module's engine, in-process: what each state does in check mode and when the job already is so,
and a failure that names the job."""

import os

import pytest

from ascend_grpo.common import jobs


def args(tmp_path, **extra):
    p = {"name": "train", "state_dir": str(tmp_path / "jobs"), "state": "status", "command": None, "chdir": None,
         "log": None, "env": {}, "secret_env": {}, "wait": 0, "grace": 30, "tail_lines": 40}
    p.update(extra)
    return p


def test_check_mode_says_a_start_would_change_and_starts_nothing(tmp_path):
    found = jobs.converge(args(tmp_path, state="started", command=["sleep", "30"]), check_mode=True)
    assert found["changed"] is True and found["running"] is False
    assert not os.path.exists(tmp_path / "jobs" / "train")


def test_stopping_a_job_that_does_not_run_changes_nothing(tmp_path):
    found = jobs.converge(args(tmp_path, state="stopped"), check_mode=False)
    assert found["changed"] is False and found["running"] is False


def test_status_waits_for_the_job_to_end_and_a_second_start_while_running_changes_nothing(tmp_path):
    started = jobs.converge(args(tmp_path, state="started", command=["sh", "-c", "sleep 1; echo done"]), False)
    assert started["changed"] is True and started["running"] is True
    again = jobs.converge(args(tmp_path, state="started", command=["sh", "-c", "sleep 1; echo done"]), False)
    assert again["changed"] is False and again["running"] is True
    ended = jobs.converge(args(tmp_path, wait=20), False)
    assert ended["changed"] is False and ended["running"] is False


def test_a_start_that_cannot_happen_fails_naming_the_job(tmp_path):
    with pytest.raises(jobs.JobFailure) as err:
        jobs.converge(args(tmp_path, state="started", command=["true"], chdir=str(tmp_path / "nope")), False)
    assert err.value.msg == "job train: the job's folder %s does not exist" % (tmp_path / "nope")
