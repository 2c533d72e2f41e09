# -*- coding: utf-8 -*-
"""A rented instance's lease: when it ends, what verl is told so that it saves a checkpoint before, and whether
the run fits in what is left. Plain Python, standard library only.

What verl at 634bd935 does with it (``verl/utils/checkpoint/checkpoint_manager.py`` ``should_save_ckpt_esi`` and
``verl/trainer/ppo/ray_trainer.py`` ``fit``): after each step it reads ``MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP``
(epoch seconds) from its environment and saves when ``0 < end - now <= 60 + max step time + trainer.esi_redundant_time``
(60 s is its fixed estimate of a save), printing "Force saving checkpoint: ESI instance expiration approaching." first (run_log.FORCE_SAVE). The longest step is 0 until the first
step ended, so step 1 never triggers; inside the window every step saves; past the end nothing does; and nothing
saves unless ``trainer.save_freq`` > 0.

The setting (``{lease_end}``): an absolute time (ISO 8601 with its zone), epoch seconds, or a duration (``8h``,
``90m``, ``3600s``, ``1h30m``) counted from the launch. A duration is resolved when the stage launches and kept in the
launch's record: a later pass under the same lease (same setting, end not passed) keeps that end, so a rerun renders
the same script; once that end passed, the same duration is a new lease counted from the new launch. Messages name
the inputs as ``{field}`` (:mod:`ascend_grpo.common.errors`): ``{lease_end}``, ``{lease_margin}``, ``{env}``,
``{overrides}``.
"""

import datetime
import re
import time

ENV = "MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"
MARGIN_KEY = "trainer.esi_redundant_time"
SAVE_FREQ_KEY = "trainer.save_freq"
# several hosts: the job's runtime environment reaches every Ray worker, whenever the node's Ray was started
RUNTIME_ENV_KEY = "ray_kwargs.ray_init.runtime_env.env_vars." + ENV
# verl's save_ckpt_duration default (should_save_ckpt_esi), the save the window leaves room for
SAVE_S = 60
# the step time the doctor assumes before any step was logged: stated in its row, never taken for a measurement
ESTIMATED_STEP_S = 300

_EPOCH = re.compile(r"[0-9]{9,11}(\.[0-9]+)?")
_DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")


class LeaseError(ValueError):
    """A lease setting that cannot be read; the message names ``{lease_end}`` and the forms it takes."""


def _forms(value):
    return ("{lease_end} (%r) is not a lease end: give an ISO 8601 time with its zone (2030-01-31T18:00:00+08:00, "
            "or ...Z for UTC), epoch seconds (1896253200), or a duration from the launch (8h, 90m, 3600s, 1h30m)"
            % (value,))


def parse(value):
    """``{"kind": "absolute"|"epoch"|"duration", "end": epoch or None, "seconds": duration or None}`` of the setting,
    or None when it is empty (no lease). Raises :class:`LeaseError`."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and (value != value.strip() or not value.isprintable()):
        raise LeaseError(_forms(value))
    if isinstance(value, bool):
        raise LeaseError(_forms(value))
    if isinstance(value, datetime.datetime):  # YAML reads an unquoted time as one
        moment = value
    elif isinstance(value, (int, float)):
        moment = None
        text = str(value)
    else:
        text = str(value).strip()
        moment = None
    if moment is None and _EPOCH.fullmatch(text):
        return {"kind": "epoch", "end": int(float(text)), "seconds": None}
    if moment is None:
        match = _DURATION.fullmatch(text)
        if match and any(match.groups()):
            days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
            total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
            if total <= 0:
                raise LeaseError("{lease_end} (%r) is a duration of 0: give the time the instance has left" % (text,))
            return {"kind": "duration", "end": None, "seconds": total}
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise LeaseError(_forms(value))
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise LeaseError("{lease_end} (%r) has no zone: add it (Z for UTC, or +08:00), since the run's clock and "
                         "yours may not share one" % (str(value),))
    return {"kind": "absolute", "end": int(moment.timestamp()), "seconds": None}


def setting_problem(setting, value):
    """The settings pass's check (kind ``lease``): None, or the problem naming ``setting``."""
    try:
        parse(value)
    except LeaseError as err:
        return str(err).replace("{lease_end}", setting)
    return None


def resolve(value, margin, last=None, now=None):
    """The lease this pass uses: ``{"setting", "end", "margin", "resolved_at", "kind"}``, or {} without one.

    ``last``: the lease the last launch recorded (its ``.launch.json``'s ``lease``), which a duration keeps while it
    is the same setting and its end has not passed. ``now``: epoch seconds (default: the clock)."""
    parsed = parse(value)
    if parsed is None:
        return {}
    now = int(time.time() if now is None else now)
    last = last if isinstance(last, dict) else {}
    lease = {"setting": str(value), "kind": parsed["kind"], "margin": int(margin or 0), "resolved_at": now}
    if parsed["kind"] != "duration":
        lease["end"] = parsed["end"]
    elif last.get("setting") == str(value) and isinstance(last.get("end"), int) and last["end"] > now:
        lease.update(end=last["end"], resolved_at=last.get("resolved_at", now))
    else:
        lease["end"] = now + parsed["seconds"]
    return lease


def when(epoch):
    """The end for people: UTC and the controller's local time."""
    moment = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
    local = moment.astimezone()
    return "%s (%s local)" % (moment.strftime("%Y-%m-%d %H:%M:%S UTC"), local.strftime("%Y-%m-%d %H:%M:%S %Z"))


def hms(seconds):
    seconds = int(max(seconds, 0))
    return "%d:%02d:%02d" % (seconds // 3600, seconds % 3600 // 60, seconds % 60)


def layers(lease, cluster=False):
    """``{"env": {...}, "overrides": {...}}``: what the run gets for ``lease`` (empty without one). The end as a
    string in the environment; on several hosts also in the job's Ray runtime environment, so that the workers of
    nodes whose Ray started before this launch (the cluster stage's) read this very end."""
    if not lease:
        return {"env": {}, "overrides": {}}
    end = str(int(lease["end"]))
    overrides = {"trainer": {"esi_redundant_time": int(lease.get("margin") or 0)}}
    if cluster:
        overrides["+ray_kwargs"] = {"ray_init": {"runtime_env": {"env_vars": {ENV: end}}}}
    return {"env": {ENV: end}, "overrides": overrides}


def _keyed(override_map):
    return {str(key).lstrip("+~"): value for key, value in (override_map or {}).items()}


def problems(lease, user_env, user_override_map, run_override_map, now=None):
    """Why the run cannot take ``lease``: it ended, the user set what it sets (``{env}``, ``{overrides}``), or verl
    would never save (``trainer.save_freq`` <= 0 in the run's merged overrides). ``user_override_map`` and
    ``run_override_map``: ``{dotted key: value}`` (overrides.override_map) of the user's layer and of the run."""
    if not lease:
        return []
    now = int(time.time() if now is None else now)
    out = []
    if int(lease["end"]) <= now:
        out.append("{lease_end} (%s) ended at %s, %s ago: give the end of the instance the run goes on now, or "
                   "clear it (empty) for no lease" % (lease["setting"], when(lease["end"]), hms(now - lease["end"])))
    if ENV in (user_env or {}):
        out.append("{env} sets %s and {lease_end} sets it too: drop it from {env} and keep {lease_end}, or clear "
                   "{lease_end}" % ENV)
    user = _keyed(user_override_map)
    for key in (MARGIN_KEY, RUNTIME_ENV_KEY):
        if key in user:
            out.append("{overrides} sets %s and {lease_end} sets it (from {lease_margin}): drop it from "
                       "{overrides} and set {lease_margin}" % key)
    save_freq = _keyed(run_override_map).get(SAVE_FREQ_KEY)
    try:
        saving = save_freq is not None and not isinstance(save_freq, bool) and int(save_freq) > 0
    except (TypeError, ValueError):
        saving = False
    if not saving:
        out.append("verl saves no checkpoint with %s=%s, so {lease_end} would not save before the end either: set "
                   "{overrides} {trainer: {save_freq: N}} with N > 0" % (SAVE_FREQ_KEY, save_freq))
    return out


def status(lease, now=None, eta_s=None, running=False, saves=()):
    """The status's lease: ``{"end", "left_s", "fits", "saves", "line"}``, or None without one. ``eta_s``: the run's
    ETA (status_view.summary), ``saves``: the log's lease saves (run_log.parse's ``lease_saves``)."""
    if not lease or lease.get("end") is None:
        return None
    now = int(time.time() if now is None else now)
    left = int(lease["end"]) - now
    if left <= 0:
        fit = "ended %s ago" % hms(-left)
        fits = False
    elif eta_s is None:
        fit, fits = "the run's ETA is not known yet", None
    else:
        fits = eta_s + SAVE_S <= left
        fit = ("the run's ETA %s fits" % hms(eta_s)) if fits else (
            "the run's ETA %s does not fit: verl saves before the end (margin %ss)" % (hms(eta_s),
                                                                                     lease.get("margin", 0)))
    line = "ends %s, %s left; %s" % (when(lease["end"]), hms(left) if left > 0 else "none", fit)
    if saves:
        line += "; lease save at step %s" % ", ".join(str(s) for s in saves)
    return {"end": int(lease["end"]), "left_s": left, "fits": fits, "saves": list(saves), "line": line,
            "setting": lease.get("setting")}


def doctor_row(lease, now=None, remaining_steps=None, step_s=None):
    """The doctor's row for the lease (``{"check", "status", "detail", "fix"}``), or None without one: ``warn`` when
    the steps left at ``step_s`` seconds each plus a save (:data:`SAVE_S`) take longer than the time left, ``pass``
    otherwise. Without a measured step time it assumes :data:`ESTIMATED_STEP_S` and says so."""
    if not lease:
        return None
    now = int(time.time() if now is None else now)
    left = int(lease["end"]) - now
    check = "the lease (%s)" % ENV
    fix = ("set {lease_end} to the instance's real end, or fewer steps ({overrides} trainer.total_training_steps); "
           "verl saves before the end ({lease_margin} seconds earlier still) and a later launch resumes from it")
    if remaining_steps is None:
        return {"check": check, "status": "pass", "fix": "",
                "detail": "ends %s, %s left; the run's length is not known before its first launch logs it"
                          % (when(lease["end"]), hms(left))}
    measured = step_s is not None
    step_s = float(step_s) if measured else float(ESTIMATED_STEP_S)
    need = remaining_steps * step_s + SAVE_S
    how = "%d steps x %.0f s %s + %d s save = %s" % (remaining_steps, step_s,
                                                    "(measured)" if measured else "(an estimate: no step logged yet)",
                                                    SAVE_S, hms(need))
    if need > left:
        return {"check": check, "status": "warn", "fix": fix,
                "detail": "ends %s, %s left, before the run can finish (%s)" % (when(lease["end"]), hms(left), how)}
    return {"check": check, "status": "pass", "fix": "",
            "detail": "ends %s, %s left; the run fits (%s)" % (when(lease["end"]), hms(left), how)}


def doctor_row_of(lease, before=None, total=None, now=None):
    """:func:`doctor_row` from the run's status (the ``grpo_train_status`` module's result, ``before``) and the
    total the launch decision knows (run_plan; ``total``, else the status's): the steps left from the newest
    step, the step time from the status's ETA over those steps, else its latest step's time."""
    before = before if isinstance(before, dict) else {}
    summary = before.get("summary") if isinstance(before.get("summary"), dict) else {}
    total = total if total is not None else before.get("total_steps")
    step = before.get("step") or 0
    remaining = max(int(total) - int(step), 0) if total is not None else None
    step_s = None
    if remaining and summary.get("eta_s") is not None:
        step_s = float(summary["eta_s"]) / remaining
    elif summary.get("step_time_s") is not None:
        step_s = float(summary["step_time_s"])
    return doctor_row(lease, now=now, remaining_steps=remaining, step_s=step_s)
