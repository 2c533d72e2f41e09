"""Every job of a workspace at once (``grpo_job`` with ``name: "*"``): which folders are jobs, each running one
stopped whatever its name, a job whose process is gone left as it is, an excluded one untouched, check mode, and a
second stop that changes nothing."""

import os
import sys

import pytest

from ascend_grpo.common import jobs


def args(tmp_path, **extra):
    p = {"name": "*", "state_dir": str(tmp_path / "jobs"), "state": "stopped", "command": None, "chdir": None,
         "log": None, "env": {}, "secret_env": {}, "wait": 0, "grace": 5, "tail_lines": 5, "exclude": []}
    p.update(extra)
    return p


def _by_name(result):
    return {job["name"]: job for job in result["jobs"]}


def test_names_are_the_folders_with_a_job_record_never_a_link(tmp_path):
    state = tmp_path / "jobs"
    jobs.start(str(state), "done", [sys.executable, "-c", "pass"])
    (state / "empty").mkdir()
    (state / "stray.txt").write_text("x")
    os.symlink(str(state / "done"), str(state / "linked"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "job.json").write_text("{}")
    (state / "meta-link").mkdir()
    os.symlink(str(other / "job.json"), str(state / "meta-link" / "job.json"))
    assert jobs.names(str(state)) == ["done"]
    assert jobs.names(str(tmp_path / "missing")) == []


def test_every_running_job_is_stopped_whatever_its_name_and_a_second_stop_changes_nothing(tmp_path):
    state = str(tmp_path / "jobs")
    for name in ("tensorboard", "serve", "some-later-job"):
        jobs.start(state, name, ["sleep", "30"])
    jobs.start(state, "weights", [sys.executable, "-c", "pass"])
    jobs.wait(state, "weights", 10, interval=0.05)
    try:
        first = jobs.converge(args(tmp_path), check_mode=False)
    finally:
        for name in ("tensorboard", "serve", "some-later-job"):
            jobs.stop(state, name, grace=1)
    found = _by_name(first)
    assert first["changed"] is True and sorted(found) == ["serve", "some-later-job", "tensorboard", "weights"]
    for name in ("serve", "some-later-job", "tensorboard"):
        assert found[name]["was_running"] and found[name]["changed"] and found[name]["state"] == "stopped"
        assert not found[name]["running"]
    # a job whose process is gone is left as it is: finished stays finished, no "stopped" mark
    assert not found["weights"]["changed"] and found["weights"]["state"] == "finished"
    assert not os.path.exists(os.path.join(state, "weights", "stopped"))
    assert first["said"] == ["serve: stopped (pid %s)" % found["serve"]["pid"],
                             "some-later-job: stopped (pid %s)" % found["some-later-job"]["pid"],
                             "tensorboard: stopped (pid %s)" % found["tensorboard"]["pid"],
                             "weights: was not running (finished)"]
    second = jobs.converge(args(tmp_path), check_mode=False)
    assert "serve: was not running (stopped)" in second["said"]
    assert second["changed"] is False and not any(job["changed"] for job in second["jobs"])


def test_an_excluded_job_is_left_running_and_not_listed(tmp_path):
    state = str(tmp_path / "jobs")
    jobs.start(state, "train", ["sleep", "30"])
    jobs.start(state, "tensorboard", ["sleep", "30"])
    try:
        result = jobs.converge(args(tmp_path, exclude=["train"]), check_mode=False)
        assert [job["name"] for job in result["jobs"]] == ["tensorboard"]
        assert jobs.status(state, "train")["running"] is True
    finally:
        jobs.stop(state, "train", grace=1)
        jobs.stop(state, "tensorboard", grace=1)


def test_check_mode_says_what_would_stop_and_stops_nothing(tmp_path):
    state = str(tmp_path / "jobs")
    jobs.start(state, "tensorboard", ["sleep", "30"])
    try:
        result = jobs.converge(args(tmp_path), check_mode=True)
        assert result["changed"] is True and result["jobs"][0]["changed"] is True
        assert result["said"][0].startswith("tensorboard: would be stopped (pid ")
        assert jobs.status(state, "tensorboard")["running"] is True
    finally:
        jobs.stop(state, "tensorboard", grace=1)


def test_status_of_every_job_changes_nothing(tmp_path):
    state = str(tmp_path / "jobs")
    jobs.start(state, "tensorboard", ["sleep", "30"])
    try:
        result = jobs.converge(args(tmp_path, state="status"), check_mode=False)
        assert result["changed"] is False and result["jobs"][0]["running"] is True
    finally:
        jobs.stop(state, "tensorboard", grace=1)


def test_every_job_cannot_be_started_and_exclude_needs_every_job(tmp_path):
    with pytest.raises(jobs.JobFailure) as err:
        jobs.converge(args(tmp_path, state="started", command=["true"]), check_mode=False)
    assert "can be stopped or reported, not started" in err.value.msg
    with pytest.raises(jobs.JobFailure) as err:
        jobs.converge(args(tmp_path, name="train", exclude=["x"]), check_mode=False)
    assert "exclude only goes with name *" in err.value.msg


def test_an_empty_or_missing_jobs_folder_is_nothing_to_stop(tmp_path):
    result = jobs.converge(args(tmp_path), check_mode=False)
    assert result == {"changed": False, "name": "*", "jobs": [], "said": ["no job in %s" % (tmp_path / "jobs")]}
