# -*- coding: utf-8 -*-
"""A run that was going when its container stopped (a reboot, a restart of the Docker engine) relaunched by itself
when the container starts again, without the controller: the train stage's resume hook
(``grpo_train_resume_after_restart``).

The container's command runs ``<workspace>/.grpo/on-start.sh`` (when there is one) before its shell; the train stage
writes that hook, this engine and the modules it imports (``<state>/lib``) and the arm record (``resume.json`` in the
train job's folder) when it launches a run with the setting on, and removes them with the setting off, on
``--tags stop`` and once the run has nothing left to train. The hook runs ``python -m
ascend_grpo.train.auto_resume`` (:func:`main`), which relaunches the ``train`` job as the train stage launched it
(its command, folder and log from ``job.json``; its secret environment from the 0600 file ``jobs.start`` kept) when
:func:`decide` says so:

- the hook is armed for the job's last launch;
- that job ran in another pid namespace than this one (the container started again since) and runs no more;
- it was not stopped on request (``stopped``) and has no exit status (it did not end by itself);
- the run has something left to train (``run_plan.launch_plan``: the newest whole checkpoint is below its total).

verl then resumes from its newest whole checkpoint by itself (``trainer.resume_mode`` auto). The relaunch adds a
line to the run's ``launches.jsonl`` (marked ``"by": "resume hook"``), updates ``.launch.json``, and leaves its
record (``resumed.json``: when, from which pid namespace, why, from which step) for ``--tags status``. One hook at a
time (``resume.lock``), and ``jobs.start`` itself never starts a job that runs.

Standard library only: this runs in the training environment at the container's start.
"""

import argparse
import json
import os
import sys

from ..common import jobs, rerun, workspace
from . import run_plan, run_status

JOB = "train"
ARM = "resume.json"
RECORD = "resumed.json"
LOCK = "resume.lock"
HOOK_NAME = "on-start.sh"


def _no(why, disarm=False):
    return {"relaunch": False, "why": why, "disarm": disarm}


BOOT_ID = "/proc/sys/kernel/random/boot_id"  # the host's, seen from any container: changes with each boot


def boot_id(path=BOOT_ID):
    """The host's boot id, or None where /proc lacks it."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def decide(arm, meta, job, plan, pidns, boot=None):
    """Whether the hook relaunches the job. ``arm``: the arm record (or None); ``meta``: the job's ``job.json`` (or
    None); ``job``: ``jobs.status``; ``plan``: ``run_plan.launch_plan`` of the run as it stands (or None when it could
    not be read); ``pidns``: this container's pid namespace.

    Returns ``{"relaunch", "why", "disarm"}``: ``disarm`` when the hook has nothing left to do for this run (it was
    stopped, it ended, it is at its total), so the train stage's next launch arms it again."""
    if not arm:
        return _no("the resume hook is not armed (its setting is off, or no launch armed it)")
    if not meta:
        return _no("no train job was launched in this workspace", disarm=True)
    if meta.get("started") != arm.get("job_started"):
        return _no("the hook was armed for the launch at %s, the last launch is at %s"
                   % (arm.get("job_started"), meta.get("started")), disarm=True)
    if job.get("running"):
        return _no("the run is going (pid %s)" % job.get("pid"))
    if job.get("state") == "stopped":
        return _no("the run was stopped on request at %s" % job.get("stopped_at"), disarm=True)
    if job.get("exit_status") is not None:
        return _no("the run ended by itself (exit status %s)" % job["exit_status"], disarm=True)
    if not meta.get("pidns") or not pidns:
        return _no("the job's pid namespace is not known, so a restart cannot be told from a crash")
    if jobs.same_pid_namespace(meta["pidns"], pidns):
        return _no("the run ended without an exit status in this very container: a crash, not a restart")
    # on the host's network the firewall table of Ray's ports is the host's: an engine restart keeps it, a reboot
    # takes it, and nothing in the container can load it again (no NET_ADMIN), so a run there would listen open
    # to every machine that reaches the host: left for the cluster stage, then the train stage
    if arm.get("host_firewall") and arm.get("boot_id") and boot and boot != arm["boot_id"]:
        return _no("the host booted again since the launch: the firewall table that keeps Ray's ports on the host's "
                   "network went with it, and a run would listen open to every machine that reaches the host; run "
                   "the cluster stage, then the train stage (it resumes from the newest checkpoint)")
    if plan is not None and not plan.get("launch"):
        return _no("the run has nothing left to train (%s)" % (plan.get("why") or "finished"), disarm=True)
    return {"relaunch": True, "disarm": False,
            "why": "the container started again (the run went with pid namespace %s, this is %s) while the run "
                   "was going, not stopped and with no exit status" % (meta["pidns"], pidns)}


def look(jobs_dir, arm, name=JOB):
    """``(meta, job, before, plan)``: the job and the run as they stand (``plan`` None when the run's folders are
    not known or cannot be read)."""
    meta = workspace.read_json(os.path.join(jobs_dir, name, "job.json"))
    job = jobs.status(jobs_dir, name)
    before, plan = None, None
    if arm and arm.get("run_dir") and arm.get("checkpoint_dir"):
        try:
            before, _ = run_status.look({
                "state_dir": jobs_dir, "job": name, "run_dir": arm["run_dir"],
                "checkpoint_dir": arm["checkpoint_dir"], "tensorboard_dir": None, "triage": None,
                "inventory": "", "records_dir": None})
        except (OSError, ValueError):
            before = None
    if before is not None:
        last = before.get("last_launch") or {}
        plan = run_plan.launch_plan(before, before.get("launch_override_map") or {}, last.get("script_sha1", ""))
    return meta, job, before, plan


def disarm(jobs_dir, arm, name=JOB):
    """Remove the hook, the arm record and the kept secret environment; the paths removed."""
    removed = []
    for path in ([arm["hook"]] if arm and arm.get("hook") else []) + [os.path.join(jobs_dir, name, ARM)]:
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    if jobs.forget_env(jobs_dir, name):
        removed.append(os.path.join(jobs_dir, name, jobs.SECRET_ENV))
    return removed


def _append_launch(run_dir, entry):
    path = os.path.join(run_dir, "launches.jsonl")
    workspace.refuse_links(run_dir, path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def relaunch(jobs_dir, arm, meta, before, why, pidns, netns, name=JOB):
    """Start the job again as it was started, record it in the run's folder and the job's; the record written, or
    None when the job runs already (started by someone else meanwhile)."""
    run_dir = arm["run_dir"]
    latest = os.path.join(run_dir, "logs", "latest.log")
    if os.path.islink(latest) or os.path.isfile(latest):
        os.unlink(latest)  # the status reads the new launch's log once the script links it, not the old one's
    changed, started = jobs.start(jobs_dir, name, meta["command"], chdir=meta.get("chdir"), log=meta.get("log"),
                                  secret_env=jobs.kept_env(jobs_dir, name), keep_env=True)
    if not changed:
        return None
    last = run_status._last_launch(run_dir)  # pylint: disable=protected-access
    if last is not None:
        _append_launch(run_dir, dict(last, started_at=started["started_at"], by="resume hook"))
    launch = workspace.read_json(os.path.join(run_dir, ".launch.json"))
    if isinstance(launch, dict):
        launch.update(pid=started["pid"], started_at=started["started_at"])
        workspace.write_text(os.path.join(run_dir, ".launch.json"), json.dumps(launch, indent=2) + "\n",
                             root=run_dir)
    saved = ((before or {}).get("checkpoints") or {}).get("saved") or []
    record = {"at": workspace.now_iso(), "job_started": started["started_at"], "pid": started["pid"],
              "from_pidns": meta.get("pidns"), "pidns": pidns, "from_step": saved[-1] if saved else None,
              "why": why,
              # the container's firewall table of the run's ports lives in its network namespace, which the
              # restart replaced (the kernel may give the new one the former's number, so the number proves
              # nothing): nothing keeps them until the container stage loads it again
              "unguarded": bool(arm.get("guarded"))}
    job_dir = os.path.join(jobs_dir, name)
    workspace.write_text(os.path.join(job_dir, RECORD), json.dumps(record, indent=2) + "\n", root=job_dir)
    workspace.write_text(os.path.join(job_dir, ARM), json.dumps(dict(arm, job_started=started["started_at"]),
                                                                 indent=2) + "\n", root=job_dir)
    return record


def run_hook(jobs_dir, name=JOB):
    """The hook's whole work: ``{"action": relaunched|left|busy, "why", ...}``."""
    job_dir = os.path.join(jobs_dir, name)
    if not os.path.isdir(job_dir):
        return {"action": "left", "why": "no %s job folder in %s" % (name, jobs_dir)}
    lock = jobs.locked(job_dir, LOCK, wait=False)
    if lock is None:
        return {"action": "busy", "why": "another resume hook is deciding"}
    try:
        arm = workspace.read_json(os.path.join(job_dir, ARM))
        meta, job, before, plan = look(jobs_dir, arm, name)
        pidns = jobs._pid_namespace()  # pylint: disable=protected-access
        verdict = decide(arm, meta, job, plan, pidns, boot_id())
        if verdict["relaunch"]:
            record = relaunch(jobs_dir, arm, meta, before, verdict["why"], pidns,
                              jobs._net_namespace(), name)  # pylint: disable=protected-access
            if record is None:
                return {"action": "left", "why": "the run was started meanwhile"}
            return dict(record, action="relaunched")
        out = {"action": "left", "why": verdict["why"]}
        if verdict["disarm"]:
            out["disarmed"] = disarm(jobs_dir, arm, name)
        return out
    finally:
        os.close(lock)


def view(jobs_dir, inventory="", name=JOB):
    """What ``--tags status`` says of the hook: ``{"armed", "resumed": the record when the hook relaunched the
    current launch (else None), "line": text for people}``."""
    job_dir = os.path.join(jobs_dir, name)
    arm = workspace.read_json(os.path.join(job_dir, ARM))
    record = workspace.read_json(os.path.join(job_dir, RECORD))
    meta = workspace.read_json(os.path.join(job_dir, "job.json")) or {}
    current = record if isinstance(record, dict) and record.get("job_started") == meta.get("started") \
        and meta.get("started") else None
    parts = []
    if current:
        step = current.get("from_step")
        parts.append("resumed by itself after the container restarted at %s (%s)" % (
            current.get("at"), "from step %s" % step if step is not None else "from the start: no whole checkpoint"))
        if current.get("unguarded"):
            parts.append("its ports have no firewall since the restart until the container stage loads it again: %s"
                         % rerun.command("container", inventory))
    armed = isinstance(arm, dict) and arm.get("job_started") == meta.get("started")
    parts.append("auto-resume armed: a restart of the container relaunches this run from its newest checkpoint"
                 if armed else "auto-resume off")
    return {"armed": armed, "resumed": current, "line": "; ".join(parts)}


def main(argv=None):
    """``python -m ascend_grpo.train.auto_resume --jobs-dir DIR``: the hook. Prints what it did as one JSON line."""
    parser = argparse.ArgumentParser(prog="auto_resume", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--jobs-dir", required=True)
    parser.add_argument("--name", default=JOB)
    args = parser.parse_args(argv)
    # the hook's own import path is not the run's: the relaunched job gets the environment it had without it
    prior = os.environ.pop("GRPO_PRIOR_PYTHONPATH", "")
    if prior:
        os.environ["PYTHONPATH"] = prior
    else:
        os.environ.pop("PYTHONPATH", None)
    try:
        out = run_hook(args.jobs_dir, args.name)
    except (OSError, ValueError, KeyError, jobs.JobError) as err:
        out = {"action": "failed", "why": "%s: %s" % (type(err).__name__, err)}
    print(json.dumps(dict(out, hook_at=workspace.now_iso())))
    return 1 if out["action"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
