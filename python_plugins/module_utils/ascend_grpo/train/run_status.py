"""What a verl training run is doing, from its job state, its logs, its checkpoints and its spec: the engine of the
``grpo_train_status`` module (whose ``main()`` is its argument spec and a call into :func:`watch`). The log's parse
is :mod:`run_log`, what a person reads :mod:`status_view`.

The run's values a triage fix names ("gpu_memory_utilization, now 0.8") come from the run's spec
(:mod:`ascend_grpo.train.run_spec`, written by the train stage's check), never from the run script read back.

Plain Python (no Ansible import): tested in-process.
"""

import json
import os
import shutil
import time

from ..common import jobs, secrets, workspace
from ..eval import checkpoint_pick
from . import lease, run_log, run_spec, status_view, triage


def checkpoints(path):
    """Saved steps as the eval stage counts them (checkpoint_pick.checkpoint_steps: a step whose save finished), the
    step folders a cut save left (or a save going on now), and the step verl's record names."""
    return dict(checkpoint_pick.checkpoint_steps(path), dir=path)


def spec_values(records_dir, inventory="", run_dir=None):
    """``(values, problem)``: the run's values a triage fix names (:func:`run_spec.values`), and None; or ``{}``
    and the sentence saying why there are none (no spec: the command that writes it)."""
    if not records_dir:
        return {}, None
    found = run_spec_of(records_dir, inventory, run_dir)
    return (run_spec.values(found["spec"]) if found["spec"] else {}), found.get("spec_problem")


def run_spec_of(records_dir, inventory="", run_dir=None):
    """``{"spec": the run's spec}`` as the train stage's check wrote it in ``records_dir``, or ``{"spec": {},
    "spec_problem": why not}`` (none, an older version's, another run's than ``run_dir``: the command that writes
    it)."""
    if not records_dir:
        return {"spec": {}, "spec_problem": "no state folder was given to read the run's spec from"}
    try:
        return {"spec": run_spec.read(records_dir, inventory, run_dir)}
    except run_spec.MissingSpec as err:
        return {"spec": {}, "spec_problem": str(err)}


def _read(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read()


def read_history(run_dir):
    """(the current log's text, its parse, the run's history over every launch's log: run_log.merge)."""
    folder = os.path.join(run_dir, "logs")
    names = sorted(name for name in os.listdir(folder) if name.startswith("grpo-") and name.endswith(".log")) \
        if os.path.isdir(folder) else []
    latest = os.path.join(folder, "latest.log")
    current = os.path.realpath(latest) if os.path.isfile(latest) else None
    segments, text, parsed = [], "", run_log.parse("")
    for name in names:
        path = os.path.join(folder, name)
        if os.path.realpath(path) != current:  # the current log is read last: it is the run's state
            segments.append(run_log.parse(_read(path)))
    if current:
        text = _read(current)
        parsed = run_log.parse(text)
        segments.append(parsed)
    return text, parsed, run_log.merge(segments)


def compare(root, this_run, this_state):
    """Every run under ``root`` (<project>/<experiment> with a log), as the status's compare rows."""
    rows = []
    projects = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for project in projects:
        folder = os.path.join(root, project)
        for experiment in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            run_dir = os.path.join(folder, experiment)
            _, _, history = read_history(run_dir)
            if not history["segments"]:
                continue
            row = status_view.summary(history)
            if os.path.realpath(run_dir) == os.path.realpath(this_run):
                row["state"] = this_state
            elif row["state"] in ("training", "starting"):
                row["state"] = "unfinished"  # its log stops without an end; no job of this run is watched
            row.update(project=project, experiment=experiment, run_dir=run_dir, segments=history["segments"],
                       mean_step_time_s=status_view.mean_step_time(history["steps"]))
            rows.append({key: row.get(key) for key in (
                "project", "experiment", "run_dir", "state", "step", "total_steps", "val_metric", "val_score",
                "val_step", "best_val_score", "best_val_step", "score_mean", "mean_step_time_s", "segments")})
    return rows


def _last_launch(run_dir):
    """The record of the run's last launch (the last line of ``launches.jsonl`` that is JSON), or None."""
    path = os.path.join(run_dir, "launches.jsonl")
    try:
        lines = [line for line in _read(path).splitlines() if line.strip()]
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        return entry if isinstance(entry, dict) else None
    return None


def last_launch_overrides(run_dir):
    """The override words of the run's last launch (its record's ``overrides``, for people), or None."""
    entry = _last_launch(run_dir) or {}
    return entry["overrides"] if isinstance(entry.get("overrides"), list) else None


def last_launch_override_map(run_dir):
    """The merged overrides of the run's last launch as data (its record's ``override_map``: ``{dotted key: value}``,
    overrides.override_map), what the launch decision compares with (run_plan.planned_total); None when there is
    none. A record written before the records kept the mapping holds the words only: None too, which the decision
    reads as "no earlier launch logged the loader's size" (unknown). Its words are never parsed back."""
    entry = _last_launch(run_dir) or {}
    return entry["override_map"] if isinstance(entry.get("override_map"), dict) else None


def look(p):
    """``(result, history)``: the run as the module returns it. ``p``: the module's parameters."""
    job = jobs.status(p["state_dir"], p["job"])
    log = os.path.join(p["run_dir"], "logs", "latest.log")
    if not os.path.isfile(log):
        log = job.get("log")
    text, parsed, history = read_history(p["run_dir"])
    summary = status_view.summary(history, now=time.time(), started_at=None)
    saved = checkpoints(p["checkpoint_dir"])
    # the newest save that finished, from the folder (the log names a step when its save starts, also a cut one)
    summary["last_checkpoint"] = saved["saved"][-1] if saved["saved"] else None
    result = {"state": job["state"], "running": job["running"], "pid": job.get("pid"),
              "exit_status": job.get("exit_status"), "log": log, "step": summary.get("step"),
              "total_steps": summary.get("total_steps"), "steps_logged": len(parsed["steps"]),
              "resumed_from": parsed.get("resumed_from"), "summary": summary,
              "checkpoints": saved,
              "last_launch": workspace.read_json(os.path.join(p["run_dir"], ".launch.json")) or {},
              "launch_overrides": last_launch_overrides(p["run_dir"]),
              "launch_override_map": last_launch_override_map(p["run_dir"]),
              "last_log": {key: parsed.get(key) for key in ("total_steps", "batches_per_epoch", "total_epochs")},
              "history": {"segments": history["segments"], "steps": [entry["step"] for entry in history["steps"]],
                          "validations": [[entry["step"], entry["metrics"][summary["val_metric"]]]
                                          for entry in history["validations"]
                                          if summary["val_metric"] in entry["metrics"]]}}
    if p["tensorboard_dir"]:
        events = [name for _, _, names in os.walk(p["tensorboard_dir"]) for name in names
                  if name.startswith("events.out.tfevents.")]
        result["tensorboard"] = {"dir": p["tensorboard_dir"], "event_files": len(events)}
    if job["state"] == "stopped":
        result["error"] = "stopped on request at %s" % job["stopped_at"]
    elif job["state"] == "failed":
        where = workspace.nearest_existing(p["checkpoint_dir"])
        free = shutil.disk_usage(where).free // (1 << 20) if os.path.isdir(where) else None
        # the log's text is shown to a person: no control character reaches a terminal, no URL password is shown
        result["error"] = secrets.mask_url(secrets.printable(run_log.why_it_ended(
            job.get("exit_status"), parsed.get("error"), job["tail"][-1] if job["tail"] else None, saved["saved"],
            free), newlines=False))
        result["traceback_tail"] = [secrets.mask_url(secrets.printable(line, newlines=False))
                                    for line in parsed.get("traceback_tail") or job["tail"][-20:]]
        if p["triage"]:
            values, problem = spec_values(p.get("records_dir"), p["inventory"], p["run_dir"])
            result["triage"] = triage.diagnose(text or "\n".join(job["tail"]), triage.validate(p["triage"]),
                                               job.get("exit_status"), free, values, inventory=p["inventory"])
            if problem:  # the fix's "now" values are unknown, not verl's defaults
                result["triage"]["fix"] += " (the run's values are not known: %s)" % problem
    # the lease the last launch recorded (lease.resolve): its end, the time left, whether the ETA fits, its saves
    result["lease"] = lease.status(result["last_launch"].get("lease"), now=time.time(), eta_s=summary.get("eta_s"),
                                   running=job["running"], saves=history.get("lease_saves") or [])
    # the resume hook (grpo_train_resume_after_restart): whether it is armed, and whether it relaunched this run;
    # imported here, as auto_resume reads the run through this module
    from . import auto_resume  # pylint: disable=import-outside-toplevel,cyclic-import
    result["auto_resume"] = auto_resume.view(p["state_dir"], p.get("inventory", ""), p["job"])
    result["validating"] = bool(job["running"] and parsed.get("validating"))
    if job["running"] and not parsed["steps"]:  # Ray, the workers and vLLM are starting, or a resume loads
        step = "no step logged yet%s" % (" (resuming from step %s)" % result["resumed_from"]
                                         if result["resumed_from"] else " (of %s)" % result["total_steps"]
                                         if result["total_steps"] else ": verl is starting")
        if result["validating"]:
            step += ": validating before training (trainer.val_before_train)"
    else:
        step = "step %s/%s" % (result["step"] if result["step"] is not None else "-", result["total_steps"] or "?")
    metrics = ", ".join("%s %s" % (k, ("%.4g" % summary[k]) if isinstance(summary[k], float) else summary[k])
                        for k in ("score_mean", "kl_loss", "response_length", "step_time_s")
                        if summary.get(k) is not None)
    result["progress"] = "%s: %s%s" % (job["state"], step, (" (" + metrics + ")") if metrics else "")
    return result, history


def watch(p, sleep=time.sleep, check_mode=False):
    """The module's whole result: :func:`look`, again once a second for up to ``p["wait"]`` seconds while the run goes
    and logs no new step; with ``compare_root`` the runs side by side, with ``plot`` the PNG (not in check mode)."""
    result, parsed = look(p)
    deadline = time.monotonic() + (p.get("wait") or 0)
    logged = result["steps_logged"]
    while result["running"] and result["steps_logged"] == logged and time.monotonic() < deadline:
        sleep(1.0)
        result, parsed = look(p)
    if p.get("spec"):
        result.update(run_spec_of(p.get("records_dir"), p.get("inventory") or "", p["run_dir"]))
    if p.get("compare_root"):
        result["compare"] = compare(p["compare_root"], p["run_dir"], result["state"])
        result["compare_table"] = status_view.render_compare(result["compare"])
    if p.get("plot") and parsed["steps"] and not check_mode:
        try:
            status_view.plot(parsed, p["plot"], title=os.path.basename(p["run_dir"]))
            result["plot"] = p["plot"]
        except ImportError as err:
            result["plot_error"] = "no plot: %s" % err
    return result
