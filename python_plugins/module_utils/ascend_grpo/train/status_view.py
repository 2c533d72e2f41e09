"""What a person reads of a training run: one host's status, the per-host table, the comparison of runs, the plot.

Everything here reads :mod:`run_log`'s parse (:func:`run_log.parse`, :func:`run_log.merge`), never the log itself.
Standard library only at import, like :mod:`run_log`: only :func:`plot` needs matplotlib, and imports it when called.

- :func:`summary` reduces a parse to one host's status (step, progress, ETA, latest metrics under short names);
- :func:`render_table` prints such statuses, one row per host, as a fixed-width table;
- :func:`render_compare` puts runs side by side, the best validation score first;
- :func:`plot` draws score, response length and KL loss against step into a PNG.
"""

import time
from datetime import datetime

from ..common import secrets, workspace

# Short name in a summary -> verl's metric key (as printed in the step lines of verl@634bd935).
METRICS = {
    "score_mean": "critic/score/mean",
    "kl_loss": "actor/kl_loss",
    "response_length": "response_length/mean",
    "step_time_s": "timing_s/step",
    "throughput": "perf/throughput",
    "pg_loss": "actor/pg_loss",
    "grad_norm": "actor/grad_norm",
    "lr": "actor/lr",
    # with rollout.calculate_log_probs: how far the rollout's log-probs are from the actor's (the weight sync)
    "rollout_diff_max": "training/rollout_probs_diff_max",
    # the actor's model FLOPs utilisation, and the memory the device's allocator peaked at (verl's fsdp_workers)
    "mfu": "perf/mfu/actor",
    "peak_memory_gb": "perf/max_memory_allocated_gb",
    "reserved_memory_gb": "perf/max_memory_reserved_gb",
    "cpu_memory_gb": "perf/cpu_memory_used_gb",
}
# verl's "val-core/<data_source>/<acc or reward>/<mean|maj|best>@<n>": the validation score to watch
VAL_CORE = "val-core/"
# Where a step's time goes: (name, verl's marked_timer keys summed). RayPPOTrainer.fit times generation through
# the update inside "timing_s/step"; what none of those covers there (advantages, the driver's own work) is "other".
# Validation ("testing") and the checkpoint save run after the step's timer, in the same iteration.
TIME_SPLIT = (("generation", ("timing_s/gen",)), ("log-prob", ("timing_s/old_log_prob",)),
              ("reference", ("timing_s/ref",)),
              ("update", ("timing_s/update_actor", "timing_s/update_critic", "timing_s/values")),
              ("reward", ("timing_s/reward",)), ("validation", ("timing_s/testing",)),
              ("checkpoint", ("timing_s/save_checkpoint",)))
STEP_TIME = "timing_s/step"
AFTER_STEP = ("validation", "checkpoint")  # timed after timing_s/step ends
TIME_SHORT = {"generation": "gen", "log-prob": "logp", "reference": "ref", "update": "update", "reward": "reward",
              "validation": "val", "checkpoint": "ckpt", "other": "other"}
EPOCH_KEY = "training/epoch"
ETA_WINDOW = 5  # the ETA uses the mean step time of this many latest steps
PLOT_PANELS = (("score mean", "critic/score/mean"), ("response length mean", "response_length/mean"),
               ("KL loss", "actor/kl_loss"))


def validation_key(validations):
    """The validation score to watch: the first (by name) ``val-core/...`` key the validations logged, or None."""
    keys = sorted({key for entry in validations for key in entry["metrics"] if key.startswith(VAL_CORE)})
    return keys[0] if keys else None


def time_split(metrics):
    """Where one training iteration's time went, from its ``timing_s/...`` metrics: [{"part", "seconds", "share"}]
    in the order of :data:`TIME_SPLIT` (parts the iteration did not time are left out), then "other".

    The whole is ``timing_s/step`` plus validation and the checkpoint save, which verl@634bd935 times after the
    step's timer ends (``RayPPOTrainer.fit``); "other" is the part of ``timing_s/step`` that generation, log-prob,
    reference, update and reward do not cover. ``share`` is of the whole (0-1, four decimals). [] without a step
    time."""
    step = metrics.get(STEP_TIME)
    if not step or step <= 0:
        return []
    parts, inside = [], 0.0
    for name, keys in TIME_SPLIT:
        timed = [metrics[key] for key in keys if key in metrics]
        if timed:
            parts.append({"part": name, "seconds": sum(timed)})
            if name not in AFTER_STEP:
                inside += sum(timed)
    parts.append({"part": "other", "seconds": max(step - inside, 0.0)})
    whole = step + sum(part["seconds"] for part in parts if part["part"] in AFTER_STEP)
    for part in parts:
        part["share"] = round(part["seconds"] / whole, 4)
    return parts


def _seconds(moment):
    """Epoch seconds from epoch seconds (int, float), a datetime, or an ISO 8601 string ("2026-12-02T19:06:51+0000",
    as ``jobs`` records a start)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if isinstance(moment, datetime):
        return moment.timestamp()
    return float(moment)


def epoch_of(step, batches_per_epoch, total_epochs=None, logged=None):
    """The epoch (from 1) that global step ``step`` (from 1) belongs to, as verl's trainer walks them.

    ``RayPPOTrainer.fit`` runs ``trainer.total_epochs`` passes over a loader of ``batches_per_epoch`` batches, one
    step each, so step s is in epoch (s - 1) // batches_per_epoch + 1 (at most ``total_epochs``: a longer
    ``total_training_steps`` does not add epochs). The ``training/epoch`` metric is the loop's index from 0, which
    restarts at 0 after a resume: ``logged`` + 1 is used only when the loader's size is unknown. None before the
    first step.
    """
    if not step or step < 1:
        return None
    if batches_per_epoch:
        epoch = (int(step) - 1) // int(batches_per_epoch) + 1
        return min(epoch, int(total_epochs)) if total_epochs else epoch
    return int(logged) + 1 if logged is not None else None


def summary(parsed, now=None, started_at=None):
    """One host's training status from :func:`run_log.parse`'s result.

    ``started_at`` (when the run started) and ``now`` (default: the current time) are epoch seconds, datetimes or
    ISO 8601 strings; with ``started_at``, ``elapsed_s`` is given and the ETA falls back on elapsed time per step
    when the log has no step times.

    Returns a dict:

    - ``state``: "failed" (an error), "finished", "training" (steps seen) or "starting";
    - ``step``: the latest step (the resumed-from step, or 0, before the first one), ``total_steps``,
      ``progress_pct`` (0-100, one decimal; None without a total);
    - ``epoch`` and ``total_epochs``: the epoch the latest step belongs to, counted from 1 as ``trainer.total_epochs``
      counts them (see :func:`epoch_of`), and that setting; None when unknown;
    - ``eta_s``: mean ``timing_s/step`` of the latest :data:`ETA_WINDOW` steps x steps remaining; 0.0 when no
      step remains; None when unknown. ``elapsed_s``: seconds since ``started_at``, or None;
    - ``resumed_from``, ``last_checkpoint`` (latest saved step or None), ``error``;
    - the latest step's metrics under the short names of :data:`METRICS` (None when absent);
    - ``time_split``: where the latest step's time went (:func:`time_split`);
    - the validation score at its latest and best (:func:`validation_summary`).
    """
    steps = parsed["steps"]
    latest = steps[-1]["metrics"] if steps else {}
    step = steps[-1]["step"] if steps else (parsed["resumed_from"] or 0)
    total = parsed["total_steps"]
    remaining = max(total - step, 0) if total is not None else None
    elapsed = None
    if started_at is not None:
        elapsed = (time.time() if now is None else _seconds(now)) - _seconds(started_at)

    per_step = mean_step_time(steps)
    done_here = step - (parsed["resumed_from"] or 0)  # steps this run made, in ``elapsed``
    if per_step is None and elapsed is not None and done_here > 0:
        per_step = elapsed / done_here
    if remaining == 0:
        eta = 0.0
    elif remaining is not None and per_step is not None:
        eta = per_step * remaining
    else:
        eta = None

    if parsed["error"]:
        state = "failed"
    elif parsed["finished"]:
        state = "finished"
    else:
        state = "training" if steps else "starting"
    status = {
        "state": state,
        "step": step,
        "total_steps": total,
        "progress_pct": round(100.0 * step / total, 1) if total else None,
        "epoch": epoch_of(step, parsed.get("batches_per_epoch"), parsed.get("total_epochs"), latest.get(EPOCH_KEY)),
        "total_epochs": parsed.get("total_epochs"),
        "eta_s": eta,
        "elapsed_s": elapsed,
        "resumed_from": parsed["resumed_from"],
        "last_checkpoint": parsed["checkpoints_saved"][-1] if parsed["checkpoints_saved"] else None,
        "error": parsed["error"],
    }
    for name, key in METRICS.items():
        status[name] = latest.get(key)
    status["time_split"] = time_split(latest)
    status.update(validation_summary(parsed.get("validations", [])))
    return status


def validation_summary(validations):
    """The validation score to watch (:func:`validation_key`) at its latest and at its best: ``val_metric``,
    ``val_score`` and ``val_step`` (the latest validation that logged it), ``best_val_score`` and ``best_val_step``
    (the highest; the earliest step of a tie), ``validations`` (how many logged it); None/0 without one."""
    key = validation_key(validations)
    points = [(entry["step"], entry["metrics"][key]) for entry in validations if key in entry["metrics"]]
    best = max(points, key=lambda point: (point[1], -point[0])) if points else (None, None)
    return {"val_metric": key, "val_score": points[-1][1] if points else None,
            "val_step": points[-1][0] if points else None, "best_val_score": best[1], "best_val_step": best[0],
            "validations": len(points)}


def _hms(seconds):
    """Seconds as h:mm:ss (hours unbounded), rounded to the second."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return "%d:%02d:%02d" % (hours, minutes, secs)


def _cell(value, fmt):
    """``value`` formatted with the %-format ``fmt``, or with function ``fmt``; "-" when None."""
    if value is None:
        return "-"
    return fmt(value) if callable(fmt) else fmt % value


def _of_cell(value, total):
    """ "2/2", "1/?" (total unknown) or "-" (value unknown)."""
    if value is None:
        return "-"
    return "%d/%s" % (value, "?" if total is None else total)


def _at_cell(score, step):
    """ "0.375@4" (a validation score and its step), or "-"."""
    return "-" if score is None else "%.3f@%s" % (score, "?" if step is None else step)


def split_text(parts):
    """ "gen 82%, logp 3%, ..., other 2% of 30.8 s" from :func:`time_split`'s parts (the whole: their sum), or ""
    without parts."""
    if not parts:
        return ""
    total = sum(part["seconds"] for part in parts)
    return "%s of %.1f s" % (", ".join("%s %.0f%%" % (TIME_SHORT.get(part["part"], part["part"]),
                                                      100 * part["share"]) for part in parts), total)


# (header, row -> cell text, right-aligned) in table order; the NPU column only when a row has "npu".
_TABLE = (
    ("HOST", lambda row: _cell(row.get("host"), "%s"), False),
    ("STATE", lambda row: _cell(row.get("state"), "%s"), False),
    ("STEP", lambda row: _of_cell(row.get("step"), row.get("total_steps")), True),
    ("EPOCH", lambda row: _of_cell(row.get("epoch"), row.get("total_epochs")), True),
    ("ETA", lambda row: _cell(row.get("eta_s"), _hms), True),
    ("SCORE", lambda row: _cell(row.get("score_mean"), "%.3f"), True),
    ("KL_LOSS", lambda row: _cell(row.get("kl_loss"), "%.3g"), True),
    ("RESP_LEN", lambda row: _cell(row.get("response_length"), "%.1f"), True),
    ("STEP_S", lambda row: _cell(row.get("step_time_s"), "%.2f"), True),
    ("TOK/S", lambda row: _cell(row.get("throughput"), "%.0f"), True),
    ("VAL", lambda row: _at_cell(row.get("val_score"), row.get("val_step")), True),
    ("CKPT", lambda row: _cell(row.get("last_checkpoint"), "%d"), True),
)
_NPU_COLUMN = ("NPU", lambda row: row.get("npu") or "-", False)
# Several hosts: Ray's view of the row's node ("10.0.0.12 alive, NPU 8"), shown when any row has one.
_RAY_COLUMN = ("RAY", lambda row: row.get("ray") or "-", False)


def _job_text(text):
    """A job's text (a log's error line, its last line) on one line, fit for a terminal, credentials masked."""
    return secrets.mask_url(secrets.printable(text, newlines=False))


def render_table(rows):
    """A fixed-width table of per-host statuses (:func:`summary` dicts plus "host" and, optionally, "npu": a
    summary of the NPU cards as a str), one row each in the given order.

    Columns: HOST, STATE, STEP ("2/2"), EPOCH ("1/1"), ETA (h:mm:ss), SCORE (critic/score/mean), KL_LOSS, RESP_LEN
    (mean response length), STEP_S (seconds per step), TOK/S (throughput), VAL (the latest validation score to
    watch, "score@step"), CKPT (latest saved step), then RAY (a cluster node in Ray's view, a str) and NPU when any
    row has one; "-" for an unknown value. A row is followed by indented lines when it has them: ``step time:
    ...`` (:func:`split_text`, then the actor's MFU and the device allocator's peak memory), ``validation: best
    0.375@4 of 3 logged (<metric>)``, ``lease: ...`` (the instance's lease: its end, the time left, whether the
    ETA fits, the steps it made verl save at: lease.status), ``tensorboard: ...`` (where its events are and how to
    see them), ``resume: ...`` (whether the run resumed by itself after its container restarted, and whether the
    resume hook is armed);
    ``error: ...``, ``why: ...`` and ``fix: ...`` for a failure (the last two when the triage catalogue knows it). Text columns are left-aligned, numbers right-aligned, columns two spaces apart; no trailing spaces, no
    final newline.
    """
    columns = (_TABLE + ((_RAY_COLUMN,) if any(row.get("ray") for row in rows) else ())
               + ((_NPU_COLUMN,) if any(row.get("npu") for row in rows) else ()))
    # a name (a host, a state) shown escaped: it cannot add a row or a column, nor reach the terminal raw
    cells = [[secrets.table_cell(render(row)) for _, render, _ in columns] for row in rows]
    lines = workspace.text_table([header for header, _, _ in columns], cells,
                                 right={i for i, (_, _, right) in enumerate(columns) if right})
    out = lines[:2]
    for row, line in zip(rows, lines[2:]):
        out.append(line)
        if row.get("time_split"):
            out.append("    step time: %s" % "; ".join(
                [split_text(row["time_split"])]
                + (["MFU %.1f%%" % (100 * row["mfu"])] if row.get("mfu") is not None else [])
                + (["peak memory %.1f GB" % row["peak_memory_gb"]] if row.get("peak_memory_gb") is not None else [])))
        if row.get("val_metric"):
            out.append("    validation: best %s of %d logged (%s)" % (
                _at_cell(row.get("best_val_score"), row.get("best_val_step")), row.get("validations") or 0,
                row["val_metric"]))
        if row.get("lease"):
            out.append("    lease: %s" % _job_text(row["lease"]["line"]))
        if row.get("tensorboard"):
            out.append("    tensorboard: %s" % _job_text(row["tensorboard"]))
        if row.get("auto_resume"):
            out.append("    resume: %s" % _job_text(row["auto_resume"]))
        if row.get("error"):
            out.append("    error: %s" % _job_text(row["error"]))
        if row.get("why"):
            out.append("    why: %s" % _job_text(row["why"]))
        if row.get("fix"):
            out.append("    fix: %s" % _job_text(row["fix"]))
    return "\n".join(out)


def plot(parsed, path, title=None):
    """Write a PNG at ``path``: score mean, response length mean and KL loss against step, the validation score
    to watch (:func:`validation_key`, also at step 0: before training) and, as stacked bars, where each step's
    time went (:func:`time_split`, seconds).

    ``parsed`` is :func:`run_log.parse`'s (or :func:`run_log.merge`'s) result; ``title`` goes above the panels.
    Raises ValueError when the log has no step yet, ImportError when matplotlib is missing. Draws with the Agg
    canvas directly (no pyplot, no global backend switch), so it works without a display and inside other
    matplotlib users. Returns ``path``.
    """
    steps = parsed["steps"]
    if not steps:
        raise ValueError("the log has no training step yet: nothing to plot")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ImportError("plot() needs matplotlib (pip install matplotlib): %s" % exc) from exc

    validations = parsed.get("validations", [])
    key = validation_key(validations)
    figure = Figure(figsize=(8, 14), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(PLOT_PANELS) + 2, 1, sharex=True)
    series = [(label, [(entry["step"], entry["metrics"][metric]) for entry in steps if metric in entry["metrics"]])
              for label, metric in PLOT_PANELS]
    series.append(("validation\n" + ("/".join(key.split("/")[-2:]) if key else "score"),
                   [(entry["step"], entry["metrics"][key]) for entry in validations if key in entry["metrics"]]))
    for ax, (label, points) in zip(axes, series):
        if points:
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o")
        else:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center")
        ax.set_ylabel(label, fontsize=8 if "\n" in label else None)
        ax.grid(True, alpha=0.3)
    _plot_split(axes[-1], steps)
    first = min([steps[0]["step"]] + [entry["step"] for entry in validations if key in entry["metrics"]])
    axes[-1].set_xlabel("step")
    axes[-1].set_xlim(first - 0.5, steps[-1]["step"] + 0.5)  # a single step still gets a width
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if title:
        figure.suptitle(title)
    figure.savefig(path, format="png")
    return path


def _plot_split(ax, steps):
    """Stacked bars of each step's :func:`time_split` (seconds), one colour per part, with a legend."""
    splits = [(entry["step"], {part["part"]: part["seconds"] for part in time_split(entry["metrics"])})
              for entry in steps]
    splits = [(number, parts) for number, parts in splits if parts]
    names = [name for name, _ in TIME_SPLIT if any(name in parts for _, parts in splits)] + ["other"]
    if not splits:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center")
    else:
        bottoms = [0.0] * len(splits)
        for name in names:
            heights = [parts.get(name, 0.0) for _, parts in splits]
            ax.bar([number for number, _ in splits], heights, bottom=bottoms, label=TIME_SHORT[name], width=0.8)
            bottoms = [low + high for low, high in zip(bottoms, heights)]
        ax.legend(fontsize=7, ncol=4, loc="upper left")
    ax.set_ylabel("step time (s)")
    ax.grid(True, alpha=0.3, axis="y")


# (header, row -> cell text, right-aligned) of the comparison across runs (render_compare).
_COMPARE = (
    ("PROJECT", lambda row: _cell(row.get("project"), "%s"), False),
    ("EXPERIMENT", lambda row: _cell(row.get("experiment"), "%s"), False),
    ("STATE", lambda row: _cell(row.get("state"), "%s"), False),
    ("STEP", lambda row: _of_cell(row.get("step"), row.get("total_steps")), True),
    ("BEST_VAL", lambda row: _at_cell(row.get("best_val_score"), row.get("best_val_step")), True),
    ("VAL", lambda row: _at_cell(row.get("val_score"), row.get("val_step")), True),
    ("SCORE", lambda row: _cell(row.get("score_mean"), "%.3f"), True),
    ("STEP_S", lambda row: _cell(row.get("mean_step_time_s"), "%.2f"), True),
    ("LOGS", lambda row: _cell(row.get("segments"), "%d"), True),
)


def mean_step_time(steps):
    """The mean ``timing_s/step`` of the latest :data:`ETA_WINDOW` steps that logged one, or None."""
    times = [entry["metrics"][STEP_TIME] for entry in steps[-ETA_WINDOW:] if STEP_TIME in entry["metrics"]]
    return sum(times) / len(times) if times else None


def render_compare(rows):
    """Runs side by side: one row per run (:func:`summary` dicts plus "project", "experiment", "segments" and
    "mean_step_time_s"), the best validation score first (runs without one last, then by name). Columns:
    PROJECT, EXPERIMENT, STATE, STEP, BEST_VAL, VAL (latest), SCORE (latest training score), STEP_S (mean of the
    latest steps), LOGS (launches read). Each validation metric differs between datasets: a footnote names the
    metric of each row whose metric is not the first row's."""
    ordered = sorted(rows, key=lambda row: (row.get("best_val_score") is None, -(row.get("best_val_score") or 0),
                                            row.get("project") or "", row.get("experiment") or ""))
    # run folders' names shown escaped: a name with a newline or "|" cannot add a row or a column
    cells = [[secrets.table_cell(render(row)) for _, render, _ in _COMPARE] for row in ordered]
    lines = workspace.text_table([header for header, _, _ in _COMPARE], cells,
                                 right={i for i, (_, _, right) in enumerate(_COMPARE) if right})
    metrics = [row.get("val_metric") for row in ordered if row.get("val_metric")]
    if metrics:
        lines.append("validation: %s" % secrets.table_cell(metrics[0]))
        lines += ["  %s: %s" % (secrets.table_cell(row.get("experiment")), secrets.table_cell(row["val_metric"]))
                  for row in ordered
                  if row.get("val_metric") and row["val_metric"] != metrics[0]]
    return "\n".join(lines)
