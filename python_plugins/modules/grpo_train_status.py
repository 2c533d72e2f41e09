#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: what a verl training run is doing, from its job state, its log and its checkpoints."""

DOCUMENTATION = r"""
---
module: grpo_train_status
short_description: Report a training run's state, step, ETA, latest metrics and checkpoints
description:
  - Reads the run's detached job (running, finished, failed, stopped), its logs (every launch's
    C(run_dir/logs/grpo-*.log), oldest first, so a resumed run's history keeps the steps before the resume; the state
    is the current log's, C(logs/latest.log)) and the checkpoint folder, and returns one summary; a failed run's
    reason is the exception at the end of its traceback.
  - The summary has the latest validation score and the best one (with their steps), where the latest step's time
    went (generation, log-prob, reference, update, reward, validation, checkpoint, other), the actor's MFU and the
    device's peak memory, as verl logs them.
  - With C(wait), blocks up to that many seconds while the run is going and has logged no new step, so an C(until)
    loop shows progress once per step. With C(plot), writes a PNG of score, response length, KL loss, the
    validation score and the step-time split against step (needs matplotlib in the environment). With
    C(compare_root), also reads every run under it and returns them side by side. Changes nothing else.
options:
  run_dir:
    description: The run folder (holds C(run_grpo.sh) and C(logs/)).
    type: path
    required: true
  state_dir:
    description: Where jobs keep their state (the workspace's C(.grpo/jobs)).
    type: path
    required: true
  checkpoint_dir:
    description: The run's checkpoint folder (C(trainer.default_local_dir)).
    type: path
    required: true
  job:
    description: The job's name.
    type: str
    default: train
  wait:
    description: Seconds to wait for a new step while the run is going.
    type: float
    default: 0
  plot:
    description: Write a PNG of the metrics to this path.
    type: path
  triage:
    description:
      - The catalogue of known failures (the train role's C(files/triage.yml)), to say why a failed run ended and
        what to change. Empty, only the exception is reported.
    type: list
    elements: dict
    default: []
  inventory:
    description:
      - The C(-i) words of the inventory the user ran with (roles/grpo_common's C(grpo_common_inventory_args)), which
        the commands in a fix carry (C(ansible-playbook site.yml -i ... --tags doctor)). Empty, a placeholder.
    type: str
    default: ""
  tensorboard_dir:
    description: The run's TensorBoard folder (C(TENSORBOARD_DIR)); its event files are counted.
    type: path
  compare_root:
    description:
      - The workspace's runs folder (C(runs/<project>/<experiment>)); every run under it that has a log is read and
        returned in C(compare), with a table in C(compare_table).
    type: path
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Look at the run
  grpo_train_status:
    run_dir: /data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single
    state_dir: /data/grpo/.grpo/jobs
    checkpoint_dir: /data/grpo/checkpoints/verl_grpo_example_math/qwen2_5_1_5b_math_single
  register: run
"""

RETURN = r"""
state:
  description: absent (never launched), running, finished, failed or stopped.
  returned: always
  type: str
step:
  description: The last logged training step (null before the first).
  returned: always
  type: int
total_steps:
  description: The run's total training steps, as verl logged them.
  returned: always
  type: int
steps_logged:
  description: Training steps logged by this run's log (0 until the first).
  returned: always
  type: int
summary:
  description: >-
    Progress, ETA and the latest metrics under short names; C(epoch) is the epoch the latest step is in, counted
    from 1 as C(trainer.total_epochs) counts them (from the loader's size verl logs; its C(training/epoch) metric
    counts from 0 and restarts on a resume), beside C(total_epochs).
  returned: always
  type: dict
checkpoints:
  description: >-
    Saved steps (saved: folders whose save finished, every rank's actor shards and data.pt, not beyond verl's
    record; as the eval stage counts them), incomplete (folders a cut save left, or one being saved now: neither
    resumed from nor merged) and latest (the step verl's record names).
  returned: always
  type: dict
error:
  description: For a failed run, the exception that ended it.
  returned: when failed
  type: str
progress:
  description: One line for people ("step 3/29 ..."; before the first step, whether it validates before training).
  returned: always
  type: str
validating:
  description:
    - Whether the running run is in a validation now (it began generating a validation batch and logged neither
      its metrics nor a step since); before the first step, the validation before training.
  returned: always
  type: bool
running:
  description: Whether the run's process (or anything in its process group) runs.
  returned: always
  type: bool
pid:
  description: The run's process id (the job's wrapper); null when never launched.
  returned: always
  type: int
log:
  description: The run's log (C(run_dir/logs/latest.log), else the job's own log).
  returned: always
  type: str
triage:
  description: >-
    For a failed run with a catalogue: the known failure it matches (C(id), C(cause), C(fix) with the run's values,
    C(setting) to change, C(upstream) threads, C(evidence), the log C(line)), or C(id) unknown with the log's first
    error line; C(first_error) is [line number, line].
  returned: when failed and a catalogue was given
  type: dict
  sample: {id: kv_cache_too_small, setting: actor_rollout_ref.rollout.gpu_memory_utilization, line: 812}
traceback_tail:
  description: For a failed run, the last lines of the traceback (or of the log).
  returned: when failed
  type: list
  elements: str
last_launch:
  description: The run folder's record of the last launch (C(.launch.json)), empty when it was never launched.
  returned: always
  type: dict
  sample: {script_sha1: 3f2a..., pid: 4242, started_at: "2026-12-03T10:00:00+0000", profile: npu-single, cards: "0"}
launch_overrides:
  description: >-
    The overrides of the last launch, from the run folder's history (C(launches.jsonl), its last line); null when it
    has none. The train stage works out from them whether the run's total changed (C(ascend_grpo.train.run_plan)).
  returned: always
  type: list
  elements: str
last_log:
  description: >-
    What the current log (the last launch's) says of the run's length: C(total_steps) ("Total training steps"),
    C(batches_per_epoch) ("Size of train dataloader"), C(total_epochs); each null until verl printed it.
  returned: always
  type: dict
  sample: {total_steps: 2, batches_per_epoch: 6, total_epochs: 1}
plot:
  description: The PNG written (with the C(plot) option and at least one logged step).
  returned: when a plot was written
  type: str
history:
  description: >-
    The run over all its launches: C(segments) (logs read), C(steps) (step numbers of the one timeline the run
    followed), C(validations) ([step, score] of C(summary.val_metric)).
  returned: always
  type: dict
  sample: {segments: 2, steps: [1, 2, 3, 4], validations: [[0, 0.125], [2, 0.25], [4, 0.375]]}
tensorboard:
  description: With C(tensorboard_dir), the folder and how many event files it holds.
  returned: when tensorboard_dir was given
  type: dict
  sample: {dir: /data/grpo/tensorboard/p/e, event_files: 2}
compare:
  description: >-
    With C(compare_root), one row per run: C(project), C(experiment), C(run_dir), C(state) (this run's from its job;
    another run's from its log: finished, failed, or unfinished), C(step), C(total_steps), C(val_metric),
    C(val_score)/C(val_step), C(best_val_score)/C(best_val_step), C(score_mean), C(mean_step_time_s), C(segments).
  returned: when compare_root was given
  type: list
  elements: dict
compare_table:
  description: The runs side by side, the best validation score first.
  returned: when compare_root was given
  type: str
"""

import json
import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import jobs, secrets, workspace
from ansible.module_utils.ascend_grpo.eval import checkpoint_pick
from ansible.module_utils.ascend_grpo.train import run_log, status_view, triage


def checkpoints(path):
    """Saved steps as the eval stage counts them (checkpoint_pick.checkpoint_steps: a step whose save finished), the
    step folders a cut save left (or a save going on now), and the step verl's record names."""
    return dict(checkpoint_pick.checkpoint_steps(path), dir=path)


def _run_values(run_dir):
    """The overrides the run's script passes verl, for the fix's "now" values."""
    path = os.path.join(run_dir, "run_grpo.sh")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        return triage.run_values(handle.read())


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


def last_launch_overrides(run_dir):
    """The overrides of the run's last launch (the last line of ``launches.jsonl``), or None."""
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
        if isinstance(entry, dict) and isinstance(entry.get("overrides"), list):
            return entry["overrides"]
        return None
    return None


def look(p):
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
            result["triage"] = triage.diagnose(text or "\n".join(job["tail"]), triage.validate(p["triage"]),
                                               job.get("exit_status"), free, _run_values(p["run_dir"]),
                                               inventory=p["inventory"])
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


def main():
    module = AnsibleModule(
        argument_spec=dict(run_dir=dict(type="path", required=True), state_dir=dict(type="path", required=True),
                           checkpoint_dir=dict(type="path", required=True), job=dict(type="str", default="train"),
                           wait=dict(type="float", default=0), plot=dict(type="path"),
                           triage=dict(type="list", elements="dict", default=[]),
                           inventory=dict(type="str", default=""),
                           tensorboard_dir=dict(type="path"), compare_root=dict(type="path")),
        supports_check_mode=True,
    )
    p = module.params
    result, parsed = look(p)
    deadline = time.monotonic() + p["wait"]
    logged = result["steps_logged"]
    while result["running"] and result["steps_logged"] == logged and time.monotonic() < deadline:
        time.sleep(1.0)
        result, parsed = look(p)
    if p["compare_root"]:
        result["compare"] = compare(p["compare_root"], p["run_dir"], result["state"])
        result["compare_table"] = status_view.render_compare(result["compare"])
    if p["plot"] and parsed["steps"] and not module.check_mode:
        try:
            status_view.plot(parsed, p["plot"], title=os.path.basename(p["run_dir"]))
            result["plot"] = p["plot"]
        except ImportError as err:
            result["plot_error"] = "no plot: %s" % err
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
