"""Detached jobs: one run at a time, exit status recorded by the job itself, stop, and a log tail for progress."""

import json
import os
import subprocess
import sys
import time

import pytest

from ascend_grpo.common import jobs


def _wait_state(state_dir, name, timeout=10):
    return jobs.wait(str(state_dir), name, timeout, interval=0.05)


def test_absent_job(tmp_path):
    st = jobs.status(str(tmp_path), "nothing")
    assert st["state"] == "absent" and not st["running"] and st["exit_status"] is None


def test_finished_job_records_exit_status_and_output(tmp_path):
    changed, st = jobs.start(str(tmp_path), "echo", [sys.executable, "-c", "print('hello'); print('bye')"])
    assert changed and st["pid"]
    st = _wait_state(tmp_path, "echo")
    assert st["state"] == "finished" and st["exit_status"] == 0
    assert st["tail"][-2:] == ["hello", "bye"] and st["progress"] == "bye"
    assert (tmp_path / "echo" / "exit").read_text().strip() == "0"


def test_a_job_that_ended_says_how_long_it_ran(tmp_path):
    assert jobs.start(str(tmp_path), "nap", [sys.executable, "-c", "import time; time.sleep(0.6)"])[1]["elapsed_s"] \
        is None  # running
    st = _wait_state(tmp_path, "nap")
    assert 0.5 <= st["elapsed_s"] < 10


def test_failed_job_keeps_its_status_and_traceback(tmp_path):
    jobs.start(str(tmp_path), "boom", [sys.executable, "-c", "raise SystemExit('bad value')"])
    st = _wait_state(tmp_path, "boom")
    assert st["state"] == "failed" and st["exit_status"] == 1 and st["tail"][-1] == "bad value"


def test_one_run_at_a_time(tmp_path):
    changed, first = jobs.start(str(tmp_path), "sleeper", ["sleep", "30"])
    assert changed
    try:
        changed, second = jobs.start(str(tmp_path), "sleeper", ["sleep", "1"])
        assert not changed and second["pid"] == first["pid"] and second["state"] == "running"
    finally:
        changed, st = jobs.stop(str(tmp_path), "sleeper", grace=5)
    assert changed and st["state"] == "stopped" and not st["running"] and st["stopped_at"]
    # stopping what does not run changes nothing
    assert jobs.stop(str(tmp_path), "sleeper")[0] is False


def test_stop_reaches_the_whole_process_group(tmp_path):
    # the wrapper runs a shell whose child ignores nothing: both must be gone after stop
    jobs.start(str(tmp_path), "tree", ["sh", "-c", "sleep 30 & sleep 30; wait"])
    time.sleep(0.3)
    meta_pid = jobs.status(str(tmp_path), "tree")["pid"]
    assert len(jobs._group_members(meta_pid)) >= 3
    changed, st = jobs.stop(str(tmp_path), "tree", grace=5)
    assert changed and jobs._group_members(meta_pid) == []


def test_stop_reaches_what_joins_the_group_after_the_sigterm(tmp_path):
    """Stopped while Ray starts, its daemons start their agents after the signal: those get one too, so the stop
    ends at once instead of waiting out the grace for a SIGKILL."""
    # on SIGTERM, the command starts one more process in the group (which never saw the first signal), then ends
    jobs.start(str(tmp_path), "late", ["sh", "-c", "trap 'sleep 300 & exit 0' TERM; sleep 300 & wait"])
    time.sleep(0.3)
    pgid = jobs.status(str(tmp_path), "late")["pid"]
    began = time.monotonic()
    changed, st = jobs.stop(str(tmp_path), "late", grace=20)
    assert changed and st["state"] == "stopped" and jobs._group_members(pgid) == []
    assert time.monotonic() - began < 5


def _pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _escaped_pid(path, timeout=5):
    """The pid a command wrote to ``path`` (a process it started in a session of its own)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(path.read_text())


def _ends(pid, timeout=2):
    """Whether ``pid`` is gone within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _pid_alive(pid)


def test_stop_reaches_what_left_the_group_in_a_session_of_its_own(tmp_path):
    """Ray's raylet starts its workers with setsid: one forked as the run is stopped outlives the group's SIGKILL, its
    parent gone (a default_worker.py was still there 15 s after a stop on the simulated host). It carries the job's
    environment, and goes with the job."""
    escaped = tmp_path / "escaped.pid"
    command = "setsid sh -c 'echo $$ > %s; exec sleep 300' & sleep 300" % escaped
    jobs.start(str(tmp_path), "ray", ["sh", "-c", command])
    pid = _escaped_pid(escaped)
    pgid = jobs.status(str(tmp_path), "ray")["pid"]
    assert os.getpgid(pid) != pgid and _pid_alive(pid)  # out of the group: killpg alone misses it
    changed, st = jobs.stop(str(tmp_path), "ray", grace=5)
    assert changed and st["state"] == "stopped"
    assert _ends(pid)


def test_stop_of_an_ended_job_takes_what_it_left(tmp_path):
    """A run that ended by itself (its driver gone) with a worker left in a session of its own: a stop takes it."""
    escaped = tmp_path / "escaped.pid"
    # it ends once the worker wrote its pid (out of the group by then: the wrapper's last SIGTERM to its group misses it)
    jobs.start(str(tmp_path), "gone", ["sh", "-c", "setsid sh -c 'echo $$ > %s; exec sleep 300' & "
                                       "while [ ! -s %s ]; do sleep 0.05; done" % (escaped, escaped)])
    st = _wait_state(tmp_path, "gone")
    assert st["state"] == "finished"
    pid = _escaped_pid(escaped)
    assert _pid_alive(pid)
    changed, st = jobs.stop(str(tmp_path), "gone", grace=5)
    assert changed and st["state"] == "finished"
    assert _ends(pid)
    assert jobs.stop(str(tmp_path), "gone")[0] is False  # nothing left: a second stop changes nothing


def test_stop_sends_each_process_one_sigterm(tmp_path):
    """A driver's clean shutdown (Ray's handler exits, then stops the workers) is not cut by a second signal."""
    seen = tmp_path / "terms"
    driver = ("import signal, sys, time\n"
              "def term(*_):\n"
              "    open(sys.argv[1], 'a').write('term\\n')\n"
              "    time.sleep(1.5)\n"  # the shutdown takes a while; the stop keeps looking at the group meanwhile
              "    sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, term)\n"
              "while True:\n"
              "    time.sleep(1)\n")
    jobs.start(str(tmp_path), "driver", [sys.executable, "-c", driver, str(seen)])
    time.sleep(0.5)
    changed, st = jobs.stop(str(tmp_path), "driver", grace=20)
    assert changed and not st["running"]
    assert seen.read_text() == "term\n"


def _group_gone(pgid, timeout):
    deadline = time.monotonic() + timeout
    while jobs._group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return jobs._group_members(pgid) == []


def test_what_the_command_leaves_in_its_group_goes_with_it(tmp_path):
    """A driver killed from outside leaves Ray's daemons in its group (about a minute before they notice): once the
    command ends, its status is written and they are stopped, so the job is over at once."""
    # the command leaves a child behind and fails, as a killed driver leaves raylet and gcs_server
    began = time.monotonic()
    jobs.start(str(tmp_path), "leaves", ["sh", "-c", "sleep 300 & exit 3"])
    pgid = jobs.status(str(tmp_path), "leaves")["pid"]
    st = _wait_state(tmp_path, "leaves", timeout=8)
    assert st["state"] == "failed" and st["exit_status"] == 3 and not st["running"]
    assert _group_gone(pgid, 1) and time.monotonic() - began < jobs.GRACE_S


def test_a_leftover_that_ignores_sigterm_gets_sigkill_after_the_grace(tmp_path):
    began = time.monotonic()
    jobs.start(str(tmp_path), "stubborn", ["sh", "-c", "(trap '' TERM; exec sleep 300) & sleep 0.3; exit 0"])
    pgid = jobs.status(str(tmp_path), "stubborn")["pid"]
    st = _wait_state(tmp_path, "stubborn", timeout=jobs.GRACE_S + 8)
    # the status was written before the cleanup: a run that ended well stays finished
    assert st["state"] == "finished" and st["exit_status"] == 0 and not st["running"]
    assert _group_gone(pgid, 1) and time.monotonic() - began >= jobs.GRACE_S


def test_a_new_run_clears_the_last_runs_status(tmp_path):
    jobs.start(str(tmp_path), "again", ["false"])
    assert _wait_state(tmp_path, "again")["state"] == "failed"
    jobs.start(str(tmp_path), "again", ["true"])
    st = _wait_state(tmp_path, "again")
    assert st["state"] == "finished" and st["exit_status"] == 0


def test_env_reaches_the_process_but_no_file(tmp_path):
    jobs.start(str(tmp_path), "secret", [sys.executable, "-c", "import os; print(len(os.environ['HUB_TOKEN']))"],
               env={"HUB_TOKEN": "hf_sekrit"})
    st = _wait_state(tmp_path, "secret")
    assert st["progress"] == "9"
    for root, _dirs, files in os.walk(tmp_path):
        for name in files:
            assert "hf_sekrit" not in open(os.path.join(root, name), encoding="utf-8").read()


def test_a_recycled_pid_is_not_the_job(tmp_path):
    jobs.start(str(tmp_path), "gone", ["true"])
    _wait_state(tmp_path, "gone")
    meta_path = tmp_path / "gone" / "job.json"
    data = json.loads(meta_path.read_text())
    # the job's pid now belongs to an unrelated process (same pid, other start time, not a group leader)
    other = subprocess.Popen(["sleep", "5"])
    try:
        data["pid"] = other.pid
        meta_path.write_text(json.dumps(data))
        assert jobs.status(str(tmp_path), "gone")["running"] is False
    finally:
        other.kill()
        other.wait()


def test_a_job_of_a_removed_container_is_gone_even_if_its_pid_and_group_run_here(tmp_path):
    """A recreated container numbers its processes from 1 again: the old job's pid (and group) may well be alive
    there, as something else. The job's pid namespace says it ran elsewhere."""
    _, started = jobs.start(str(tmp_path), "old", ["sleep", "30"])
    try:
        meta_path = tmp_path / "old" / "job.json"
        data = json.loads(meta_path.read_text())
        assert data["pidns"].split("@")[0] == os.readlink("/proc/self/ns/pid")
        assert jobs.status(str(tmp_path), "old")["running"] is True
        data["pidns"] = "pid:[1]"  # what the removed container's namespace was
        meta_path.write_text(json.dumps(data))
        st = jobs.status(str(tmp_path), "old")
        assert st["running"] is False and st["state"] == "failed"
        changed, _ = jobs.start(str(tmp_path), "old", ["true"])  # a rerun starts it again
        assert changed
    finally:
        os.killpg(started["pid"], 9)


def test_progress_bar_frames_resolve_to_the_last(tmp_path):
    log = tmp_path / "bar.log"
    log.write_bytes(b"start\n 10%|#   |\r 50%|##  |\r100%|####|\n")
    assert jobs.tail(str(log)) == ["start", "100%|####|"]


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(jobs.JobError, match="does not exist"):
        jobs.start(str(tmp_path), "nowhere", ["true"], chdir=str(tmp_path / "missing"))


def test_a_pid_namespace_number_given_out_again_is_another_start():
    """The kernel reuses a gone namespace's number: an engine restart may give the container the number it had; the
    start time of the namespace's first process tells the starts apart. One recorded before (number only) compares
    by number."""
    assert jobs.same_pid_namespace("pid:[4026532001]@100", "pid:[4026532001]@100")
    assert not jobs.same_pid_namespace("pid:[4026532001]@100", "pid:[4026532001]@900")
    assert jobs.same_pid_namespace("pid:[4026532001]", "pid:[4026532001]@900")
    assert not jobs.same_pid_namespace(None, "pid:[4026532001]@900")
    assert "@" in jobs._pid_namespace()  # pylint: disable=protected-access
