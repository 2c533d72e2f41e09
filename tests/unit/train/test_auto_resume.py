"""The resume hook (grpo_train_resume_after_restart): its decision, its relaunch of the train job in a temp
workspace with a fake command (no Docker: a "previous container" is a job.json whose pid namespace is another's),
the secret environment it keeps (0600, never in the support bundle), and what --tags status says."""

import json
import os
import signal
import stat
import subprocess
import time

import pytest
import yaml

from ascend_grpo.bundle import support_bundle
from ascend_grpo.common import jobs
from ascend_grpo.train import auto_resume, status_view

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = jobs._pid_namespace()
ARM = {"job_started": "T1", "run_dir": "/r", "checkpoint_dir": "/c", "guarded": True}
META = {"started": "T1", "pidns": "pid:[1]", "pid": 5}
GONE = {"running": False, "state": "failed", "exit_status": None}
LEFT = {"launch": True, "why": "resumes from step 2 (total 4)"}


@pytest.mark.parametrize("arm, meta, job, plan, relaunch, disarm, why", [
    (ARM, META, GONE, LEFT, True, False, "the container started again"),
    (ARM, META, GONE, None, True, False, "the container started again"),  # the run's folders unreadable: verl decides
    (None, META, GONE, LEFT, False, False, "not armed"),
    (ARM, None, GONE, LEFT, False, True, "no train job"),
    (ARM, dict(META, started="T0"), GONE, LEFT, False, True, "armed for the launch at T1"),
    (ARM, META, dict(GONE, running=True, state="running", pid=5), LEFT, False, False, "is going"),
    (ARM, META, dict(GONE, state="stopped", stopped_at="T2"), LEFT, False, True, "stopped on request"),
    (ARM, META, dict(GONE, state="finished", exit_status=0), LEFT, False, True, "ended by itself (exit status 0)"),
    (ARM, META, dict(GONE, exit_status=1), LEFT, False, True, "ended by itself (exit status 1)"),
    (ARM, dict(META, pidns=None), GONE, LEFT, False, False, "not known"),
    (ARM, dict(META, pidns=HERE), GONE, LEFT, False, False, "a crash, not a restart"),
    (ARM, META, GONE, {"launch": False, "why": "at its total"}, False, True, "nothing left to train (at its total)"),
])
def test_the_decision(arm, meta, job, plan, relaunch, disarm, why):
    verdict = auto_resume.decide(arm, meta, job, plan, HERE)
    assert (verdict["relaunch"], verdict["disarm"]) == (relaunch, disarm) and why in verdict["why"], verdict


def _saved(ckpt, steps):
    for step in steps:
        actor = ckpt / ("global_step_%d" % step) / "actor"
        actor.mkdir(parents=True)
        (actor / "model_world_size_1_rank_0.pt").write_bytes(b"x")
        (actor.parent / "data.pt").write_bytes(b"x")
    (ckpt / "latest_checkpointed_iteration.txt").write_text("%d\n" % steps[-1])


def _cut_run(tmp_path, saved=(2,), total=4, secret="wandb-secret-123"):
    """A run launched with the hook armed and a secret, then cut by a container restart: its whole group killed
    (no exit status) and its job.json naming another container's namespaces."""
    jobs_dir, run, ckpt = tmp_path / "jobs", tmp_path / "run", tmp_path / "ckpt"
    (run / "logs").mkdir(parents=True)
    _saved(ckpt, list(saved))
    got = tmp_path / "got"
    # the fake run: what environment it got (a test's file; the package writes no secret anywhere but its 0600 file)
    command = ["sh", "-c", 'printf "%%s|%%s\\n" "${WANDB_API_KEY-}" "${PYTHONPATH-unset}" >> %s; sleep 30' % got]
    changed, first = jobs.start(str(jobs_dir), "train", command, chdir=str(run), log=str(run / "logs" / "launcher.log"),
                                secret_env={"WANDB_API_KEY": secret}, keep_env=True)
    assert changed
    deadline = time.monotonic() + 10
    while not got.exists() and time.monotonic() < deadline:  # it ran before the restart cut it
        time.sleep(0.05)
    got.unlink()
    os.killpg(first["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while jobs.status(str(jobs_dir), "train")["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    meta_path = jobs_dir / "train" / "job.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps(dict(meta, pidns="pid:[4026530001]", netns="net:[4026530002]")))
    (run / "launches.jsonl").write_text(json.dumps({"started_at": meta["started"], "script_sha1": "abc",
                                                    "override_map": {"trainer.total_training_steps": total}}) + "\n")
    (run / ".launch.json").write_text(json.dumps({"script_sha1": "abc", "pid": meta["pid"],
                                                  "started_at": meta["started"], "cards": "0"}))
    hook = tmp_path / "on-start.sh"
    hook.write_text("#!/bin/sh\n")
    (jobs_dir / "train" / auto_resume.ARM).write_text(json.dumps({
        "job_started": meta["started"], "run_dir": str(run), "checkpoint_dir": str(ckpt), "hook": str(hook),
        "guarded": True}))
    return jobs_dir, run, got, hook, meta


def test_the_hook_relaunches_the_cut_run_as_launched_once_and_says_so(tmp_path):
    jobs_dir, run, got, hook, before = _cut_run(tmp_path)
    try:
        out = auto_resume.run_hook(str(jobs_dir))
        assert out["action"] == "relaunched" and out["from_step"] == 2 and out["unguarded"], out
        meta = json.loads((jobs_dir / "train" / "job.json").read_text())
        assert (meta["command"], meta["chdir"], meta["log"]) == (before["command"], before["chdir"], before["log"])
        assert meta["pidns"] == HERE and meta["started"] == out["job_started"]
        deadline = time.monotonic() + 10
        while not (got.exists() and got.read_text().endswith("\n")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got.read_text().startswith("wandb-secret-123|")  # the secret survived the restart
        assert "wandb-secret-123" not in (jobs_dir / "train" / "job.json").read_text()
        assert "wandb-secret-123" not in (run / "logs" / "launcher.log").read_text()
        launches = [json.loads(line) for line in (run / "launches.jsonl").read_text().splitlines()]
        assert len(launches) == 2 and launches[-1]["by"] == "resume hook"
        assert launches[-1]["started_at"] == meta["started"] and launches[-1]["override_map"]
        assert json.loads((run / ".launch.json").read_text())["pid"] == meta["pid"]
        record = json.loads((jobs_dir / "train" / auto_resume.RECORD).read_text())
        assert record["from_pidns"] == "pid:[4026530001]" and "container started again" in record["why"]
        # armed for the relaunched job: a second restart resumes it again; this very container does nothing twice
        assert json.loads((jobs_dir / "train" / auto_resume.ARM).read_text())["job_started"] == meta["started"]
        again = auto_resume.run_hook(str(jobs_dir))
        assert again["action"] == "left" and "is going" in again["why"]
        view = auto_resume.view(str(jobs_dir), "-i inventories/sim")
        assert view["armed"] and view["line"].startswith(
            "resumed by itself after the container restarted at %s (from step 2)" % record["at"])
        assert "--tags container" in view["line"] and "-i inventories/sim" in view["line"]
    finally:
        jobs.stop(str(jobs_dir), "train", grace=5)
    assert not (jobs_dir / "train" / jobs.SECRET_ENV).exists()  # a stopped run keeps no secret


def test_a_stopped_run_is_not_relaunched_and_the_hook_is_removed(tmp_path):
    jobs_dir, _, _, hook, _ = _cut_run(tmp_path)
    (jobs_dir / "train" / "stopped").write_text("T9\n")
    out = auto_resume.run_hook(str(jobs_dir))
    assert out["action"] == "left" and "stopped on request" in out["why"]
    assert not hook.exists() and not (jobs_dir / "train" / auto_resume.ARM).exists()
    assert not (jobs_dir / "train" / jobs.SECRET_ENV).exists()
    assert not jobs.status(str(jobs_dir), "train")["running"]


def test_a_run_at_its_total_is_not_relaunched(tmp_path):
    jobs_dir, run, _, hook, _ = _cut_run(tmp_path, saved=(2, 4), total=4)
    out = auto_resume.run_hook(str(jobs_dir))
    assert out["action"] == "left" and "nothing left to train" in out["why"] and not hook.exists()
    assert len((run / "launches.jsonl").read_text().splitlines()) == 1


def test_one_hook_at_a_time(tmp_path):
    jobs_dir, _, _, _, _ = _cut_run(tmp_path)
    lock = jobs.locked(str(jobs_dir / "train"), auto_resume.LOCK)
    try:
        assert auto_resume.run_hook(str(jobs_dir))["action"] == "busy"
    finally:
        os.close(lock)
    assert not jobs.status(str(jobs_dir), "train")["running"]


def test_the_kept_secret_environment_is_roots_only_and_goes_when_the_command_ends(tmp_path):
    changed, _ = jobs.start(str(tmp_path), "t", ["sh", "-c", "sleep 1"], secret_env={"K": "v"}, keep_env=True)
    kept = tmp_path / "t" / jobs.SECRET_ENV
    assert changed and stat.S_IMODE(kept.stat().st_mode) == 0o600 and jobs.kept_env(str(tmp_path), "t") == {"K": "v"}
    assert "v" not in json.loads((tmp_path / "t" / "job.json").read_text()).values()
    jobs.wait(str(tmp_path), "t", 10, interval=0.05)
    assert not kept.exists()  # ended by itself: nothing to relaunch
    jobs.start(str(tmp_path), "u", ["sleep", "0"], secret_env={"K": "v"})
    assert not (tmp_path / "u" / jobs.SECRET_ENV).exists()  # kept only when asked


def test_the_support_bundle_never_collects_the_kept_secret_environment(tmp_path):
    state = tmp_path / "ws" / ".grpo"
    (state / "jobs" / "train").mkdir(parents=True)
    for folder in (state, state / "jobs", state / "jobs" / "train"):
        (folder / jobs.SECRET_ENV).write_text('{"WANDB_API_KEY": "k"}')
    (state / "train.json").write_text("{}")
    members = support_bundle.collect(lambda argv: (0, "", ""), {
        "texts": {}, "python": "p", "run_dir": str(tmp_path / "run"), "workspace": str(tmp_path / "ws"),
        "plog_dir": str(tmp_path / "plog"), "log_lines": 5})
    assert "records/train.json" in members and not any(jobs.SECRET_ENV in name for name in members)
    assert jobs.SECRET_ENV in support_bundle.NEVER_COLLECTED


def test_the_status_says_whether_the_hook_is_armed_and_the_table_shows_it(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "job.json").write_text(json.dumps({"started": "T1"}))
    assert auto_resume.view(str(tmp_path)) == {"armed": False, "resumed": None, "line": "auto-resume off"}
    (tmp_path / "train" / auto_resume.ARM).write_text(json.dumps({"job_started": "T1"}))
    (tmp_path / "train" / auto_resume.RECORD).write_text(json.dumps({"job_started": "T0", "at": "x"}))
    view = auto_resume.view(str(tmp_path))
    assert view["armed"] and view["resumed"] is None and view["line"].startswith("auto-resume armed")
    (tmp_path / "train" / auto_resume.RECORD).write_text(json.dumps(
        {"job_started": "T1", "at": "2025-06-01T10:00:00+0000", "from_step": 4, "unguarded": False}))
    line = auto_resume.view(str(tmp_path))["line"]
    assert line == ("resumed by itself after the container restarted at 2025-06-01T10:00:00+0000 (from step 4); "
                    "auto-resume armed: a restart of the container relaunches this run from its newest checkpoint")
    table = status_view.render_table([{"host": "h", "state": "running", "auto_resume": line}])
    assert "    resume: resumed by itself after the container restarted at 2025-06-01T10:00:00+0000" in table


def test_the_hook_gives_the_run_the_environment_without_its_own_import_path(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", "/state/lib")
    monkeypatch.setenv("GRPO_PRIOR_PYTHONPATH", "/site")
    assert auto_resume.main(["--jobs-dir", str(tmp_path / "none")]) == 0
    assert os.environ["PYTHONPATH"] == "/site" and "GRPO_PRIOR_PYTHONPATH" not in os.environ
    assert json.loads(capsys.readouterr().out)["action"] == "left"


def test_the_containers_command_runs_the_hook_when_there_is_one_then_the_shell(tmp_path):
    with open(os.path.join(ROOT, "roles", "npu_container", "tasks", "container.yml"), encoding="utf-8") as handle:
        task = yaml.safe_load(handle)[0]["community.docker.docker_container"]
    argv = list(task["command"])
    assert argv[-1] == "{{ npu_container_workspace }}/.grpo/on-start.sh" and "exec /bin/bash" in argv[2]
    argv[2] = argv[2].replace("exec /bin/bash", "exec echo shell")  # the interactive shell, as a test can see it
    hook = tmp_path / "on-start.sh"
    argv[-1] = str(hook)
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == "shell\n"
    hook.write_text("echo hook\nexit 3\n")  # a failing hook still leaves the shell
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout == "hook\nshell\n"


def test_a_reboot_leaves_a_run_on_the_hosts_network_for_the_stages():
    """On the host's network Ray's ports are kept by the host's table, which a reboot (a new boot id) takes away."""
    arm = {"job_started": "t0", "host_firewall": True, "boot_id": "boot-1"}
    meta = {"started": "t0", "pidns": "pid:[1]"}
    job = {"running": False, "state": "failed", "exit_status": None}
    left = auto_resume.decide(arm, meta, job, {"launch": True}, "pid:[2]", "boot-2")
    assert not left["relaunch"] and "booted again" in left["why"] and "cluster stage" in left["why"]
    # an engine restart (the same boot) resumes; so does a reboot of a host whose Ray is not on its network
    assert auto_resume.decide(arm, meta, job, {"launch": True}, "pid:[2]", "boot-1")["relaunch"]
    assert auto_resume.decide(dict(arm, host_firewall=False), meta, job, {"launch": True}, "pid:[2]",
                              "boot-2")["relaunch"]
