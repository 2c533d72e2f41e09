# -*- coding: utf-8 -*-
"""Two decisions about a training run, in plain Python: whether the train stage launches it (a run whose newest
whole checkpoint is at or past its total trains nothing), and whether the eval stage may evaluate now (never
while a run of the workspace holds the cards OpenCompass would use). Also the commands a message tells the user to
run, with the inventory they ran with (built by :mod:`rerun`, the one place that builds them).

Why a finished run must not be launched again (verl at 634bd935, ``RayPPOTrainer.fit``): the loop loads the newest
checkpoint (step S), starts at S + 1, trains that step and only then compares the step with the total. A launch of
a run already at its total therefore trains one step past it, every time (three relaunches of a finished 2-step run
left it at 5/2).

How the total is known before a launch (``RayPPOTrainer._create_dataloader``): ``trainer.total_training_steps``
when it is not null, else ``len(train dataloader) x trainer.total_epochs``. The loader's length (batches an epoch,
after ``filter_overlong_prompts``) is only known from a log: verl prints "Size of train dataloader: N" and "Total
training steps: N". So the total is the override when the launch sets one; else the last launch's logged total
when nothing that decides it changed (every ``data.*`` override, the model path, the epochs, the total); else the
epochs times the last launch's loader size when the data did not change; else unknown (the launch goes ahead, as
verl alone would decide).

The overrides come as data, the merged mapping the run's words are written from (``overrides.override_map``), this
launch's from the role and the last launch's from its record in ``launches.jsonl``: no override word is parsed back.

Messages name the stage's inputs as ``{field}`` (:mod:`ascend_grpo.common.errors`): ``{overrides}`` and
``{relaunch}`` in the launch's, ``{step}`` in the gate's; the stages' filters render them as their settings
(``grpo_train_overrides``, ``grpo_train_relaunch``, ``grpo_eval_step``).

Standard library only.
"""

from ..common import rerun

# Overrides that decide the loader's length (the data, the batch, the prompt filter's tokenizer and length).
_DATA_PREFIXES = ("data.",)
_DATA_KEYS = ("actor_rollout_ref.model.path",)
TOTAL_STEPS = "trainer.total_training_steps"
TOTAL_EPOCHS = "trainer.total_epochs"
RESUME_MODE = "trainer.resume_mode"


def _keyed(values):
    """``{dotted key: value}`` of a merged overrides mapping (overrides.override_map, the run spec's shape), each
    key without Hydra's ``+``/``~`` in front: ``+trainer.x`` and ``trainer.x`` are one setting of verl's."""
    return {str(key).lstrip("+~"): value for key, value in (values or {}).items()}


def _int(raw):
    """An override's whole number, or None (null, absent, a bool, not a whole number)."""
    if raw is None or isinstance(raw, bool):
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        return None


def _deciding(values, with_epochs):
    keys = {key: value for key, value in values.items()
            if key.startswith(_DATA_PREFIXES) or key in _DATA_KEYS}
    if with_epochs:
        keys.update({key: values.get(key) for key in (TOTAL_STEPS, TOTAL_EPOCHS)})
    return keys


def planned_total(overrides, last_overrides=None, last_logged=None):
    """The total verl's loop stops at for a launch with ``overrides``, the merged overrides as data
    (``{dotted key: value}``: overrides.override_map, the mapping the run's words are written from).

    ``last_overrides`` are the last launch's, the same mapping as its record in the run folder's ``launches.jsonl``
    keeps it (``override_map``); ``last_logged`` what that launch's log said: ``{"total_steps": N,
    "batches_per_epoch": B, "total_epochs": E}`` (any may be None). A launch recorded before the records kept the
    mapping (words only) comes as None: it counts as "no earlier launch logged the loader's size" (unknown), and its
    words are never parsed back.

    Returns ``{"total": N or None, "how": text for people, "raise": the setting that would raise it, with
    ``{overrides}`` for the run's overrides}``.
    """
    new = _keyed(overrides)
    logged = last_logged or {}
    steps = _int(new.get(TOTAL_STEPS))
    if steps is not None:
        return {"total": steps, "how": "%s=%d" % (TOTAL_STEPS, steps),
                "raise": "%s in {overrides}" % TOTAL_STEPS}
    epochs_hint = "%s in {overrides} (or set %s)" % (TOTAL_EPOCHS, TOTAL_STEPS)
    if last_overrides is None:
        return {"total": None, "how": "unknown: no earlier launch logged the loader's size", "raise": epochs_hint}
    last = _keyed(last_overrides)
    if _deciding(new, True) == _deciding(last, True) and _int(logged.get("total_steps")) is not None:
        return {"total": int(logged["total_steps"]),
                "how": "as the last launch logged it (Total training steps: %d)" % int(logged["total_steps"]),
                "raise": epochs_hint}
    epochs = _int(new.get(TOTAL_EPOCHS))
    batches = _int(logged.get("batches_per_epoch"))
    if epochs is not None and batches and _deciding(new, False) == _deciding(last, False):
        return {"total": epochs * batches,
                "how": "%s=%d x %d steps an epoch (%s null)" % (TOTAL_EPOCHS, epochs, batches, TOTAL_STEPS),
                "raise": epochs_hint}
    return {"total": None, "how": "unknown: the data or the epochs changed since the last launch logged the "
                                  "loader's size", "raise": epochs_hint}


def _newest_saved(before):
    saved = ((before or {}).get("checkpoints") or {}).get("saved") or []
    return saved[-1] if saved else None


def launch_plan(before, overrides, script_sha1, relaunch=False):
    """Whether the train stage launches, from the run's status (the ``grpo_train_status`` module's result, with its
    ``launch_override_map`` and ``last_log``), the merged overrides this launch would use (``{dotted key: value}``,
    as :func:`planned_total` takes them), the script's sha1, and grpo_train_relaunch (``{relaunch}`` in the
    message).

    Returns ``{"wanted", "launch", "why", "message", "total", "newest"}``: ``wanted`` is what the state alone says
    (not going; and relaunch asked, or not finished, or another script), ``launch`` that and a run with something
    left to train; ``message`` says why nothing is launched (None when it launches or a run is going).
    """
    before = before or {}
    last = before.get("last_launch") or {}
    finished_same = before.get("state") == "finished" and last.get("script_sha1", "") == script_sha1
    plan = {"wanted": False, "launch": False, "why": "", "message": None, "total": None,
            "newest": _newest_saved(before)}
    if before.get("running"):
        plan["why"] = "going"
        return plan
    if finished_same and not relaunch:
        plan.update(why="finished with this script", message=(
            "The last run finished with this very script (%s of %s steps): nothing to do. Change the overrides "
            "(more steps or epochs resume from the newest checkpoint) or set {relaunch}=true."
            % (before.get("step") if before.get("step") is not None else "-", before.get("total_steps") or "?")))
        return plan
    plan["wanted"] = True
    mode = str(_keyed(overrides).get(RESUME_MODE, "auto"))
    newest = plan["newest"]
    if mode != "auto" or newest is None:
        plan.update(launch=True, why="from scratch" if newest is None else "resume_mode %s" % mode)
        return plan
    total = planned_total(overrides, before.get("launch_override_map"), before.get("last_log"))
    plan["total"] = total["total"]
    if total["total"] is None or newest < total["total"]:
        plan.update(launch=True, why="resumes from step %d (total %s)" % (newest, total["total"] or "unknown"))
        return plan
    plan.update(why="at its total", message=(
        "Nothing to train: the newest whole checkpoint is step %d and the run's total is %d steps (%s). A launch "
        "would train step %d past the end (verl resumes at the saved step + 1 and compares with the total only "
        "after that step), so nothing is launched%s. To train on from step %d, raise %s above %d."
        % (newest, total["total"], total["how"], newest + 1,
           " although {relaunch} is set" if relaunch else "", newest, total["raise"], newest)))
    return plan


def card_list(value):
    """The cards of an ``ASCEND_RT_VISIBLE_DEVICES`` value or a list, as strings ("0,1" -> ["0", "1"])."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip() != ""]


def _hms(seconds):
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return "%d:%02d:%02d" % (hours, minutes, secs)


def _where(run):
    """'step 1/2, ETA 0:01:10' (what the status engine knows)."""
    step = run.get("step")
    total = run.get("total_steps")
    if not run.get("steps_logged") and not step:
        text = "no step logged yet%s" % (" (of %s)" % total if total else "")
    else:
        text = "step %s/%s" % (step if step is not None else "-", total or "?")
    eta = (run.get("summary") or {}).get("eta_s")
    if eta is not None and run.get("running"):
        text += ", ETA %s" % _hms(eta)
    return text


def eval_gate(run, eval_cards, step=0, name="", command=None):
    """Whether the eval stage evaluates now, from the train job's status (the ``grpo_train_status`` module's result
    for the run and the checkpoint folder the eval stage reads; None when the train stage never handed a run on),
    the cards OpenCompass would use (``eval_cards``), the step asked for (0: the newest), the run's name
    (project/experiment) and ``command`` (a function: tags -> the command to copy, with the user's inventory).

    Returns ``{"action", "lines", "shared_cards", "run_cards"}``. ``action`` is:

    - evaluate: the run finished, or ended (failed, stopped: its newest whole checkpoint, said in ``lines``), or it
      goes on other cards than OpenCompass's and a step is saved;
    - wait: a run goes on the cards OpenCompass would use (or on other cards with nothing saved yet): nothing is
      evaluated, nothing changes, ``lines`` say where it is, where to watch it and what to run once it is done;
    - refuse: the stage must fail (``lines`` say why): a step asked for while the run holds the cards, or nothing
      saved and no run going.
    """
    command = command or rerun.command
    run = run or {}
    state = run.get("state") or "absent"
    saved = ((run.get("checkpoints") or {}).get("saved")) or []
    run_cards = card_list((run.get("last_launch") or {}).get("cards"))
    eval_cards = card_list(eval_cards)
    # a launch recorded before its cards were: it may hold any of them
    shared = sorted(set(run_cards) & set(eval_cards), key=lambda c: (len(c), c)) if run_cards else list(eval_cards)
    label = "The run %s" % name if name else "The run"
    out = {"action": "evaluate", "lines": [], "shared_cards": shared, "run_cards": run_cards}
    if run.get("running"):
        where = "%s is going: %s (pid %s)." % (label, _where(run), run.get("pid"))
        if shared or not eval_cards:
            # the ids ASCEND_RT_VISIBLE_DEVICES names in the training environment (0 to n-1 in a container, whatever
            # the cards' host numbers): docs/container.md
            cards = ("card id%s %s" % ("s" if len(shared) > 1 else "", ", ".join(shared))) if shared else "the cards"
            hold = "It holds %s, which OpenCompass would use here" % cards
            if step:
                out["action"] = "refuse"
                out["lines"] = [where, "%s: {step} %s is not evaluated while it goes (OpenCompass would "
                                       "share the card with the training and could run either out of memory)."
                                % (hold, step),
                                "Stop it first: %s, or evaluate once it has finished." % command("stop"),
                                "Watch it: %s." % command("status")]
                return out
            out["action"] = "wait"
            out["lines"] = [where, "%s, so nothing is evaluated now and nothing changed." % hold,
                            "Watch it: %s." % command("status"),
                            "When it has finished, run the same command again (%s, or %s): it evaluates the "
                            "newest checkpoint." % (command(None), command("eval")),
                            "To evaluate sooner, stop it first: %s (a later launch resumes from its newest "
                            "checkpoint)." % command("stop")]
            return out
        if not saved:
            out["action"] = "wait"
            out["lines"] = [where, "It runs on card(s) %s, not OpenCompass's (%s), but no step is saved yet: "
                                   "nothing to evaluate now, nothing changed." % (", ".join(run_cards),
                                                                                  ", ".join(eval_cards)),
                            "Watch it: %s; once a step is saved, %s evaluates it." % (command("status"),
                                                                                     command("eval"))]
            return out
        out["lines"] = [where, "It runs on card(s) %s, OpenCompass on %s: evaluating a saved step while it goes."
                        % (", ".join(run_cards), ", ".join(eval_cards))]
        return out
    if not saved:
        out["action"] = "refuse"
        if state == "absent":
            out["lines"] = ["No run was launched in this workspace and no step is saved: nothing to evaluate. "
                            "Train first: %s." % command("train")]
        else:
            out["lines"] = ["%s %s (%s) before any step was saved: nothing to evaluate." % (
                                label, state, run.get("error") or _where(run)),
                            "See why: %s; a rerun of the train stage (%s) launches it again." % (
                                command("status"), command("train"))]
        return out
    if state in ("failed", "stopped"):
        picked = "step %s, as asked" % step if step else "its newest whole checkpoint, step %d" % saved[-1]
        out["lines"] = ["%s %s at %s (%s): evaluating %s." % (
            label, state, _where(run), run.get("error") or "see %s" % command("status"), picked)]
    elif state == "absent":
        out["lines"] = ["No run of this workspace's train stage is recorded: evaluating the checkpoints in %s."
                        % ((run.get("checkpoints") or {}).get("dir") or "the checkpoint folder")]
    return out


def serve_gate(run, serve_cards, name="", command=None):
    """Whether ``--tags serve`` may start vLLM's server now: never while a run of the workspace goes on the cards
    the server would use (``serve_cards``; a launch recorded before its cards were may hold any of them). Returns
    ``{"action": serve|refuse, "lines"}``, the lines saying where the run is and what to run."""
    command = command or rerun.command
    run = run or {}
    run_cards = card_list((run.get("last_launch") or {}).get("cards"))
    serve_cards = card_list(serve_cards)
    shared = sorted(set(run_cards) & set(serve_cards), key=lambda c: (len(c), c)) if run_cards else list(serve_cards)
    if not run.get("running") or not (shared or not serve_cards):
        return {"action": "serve", "lines": [], "shared_cards": shared}
    label = "The run %s" % name if name else "The run"
    cards = ("card id%s %s" % ("s" if len(shared) > 1 else "", ", ".join(shared))) if shared else "the cards"
    return {"action": "refuse", "shared_cards": shared, "lines": [
        "%s is going: %s (pid %s)." % (label, _where(run), run.get("pid")),
        "It holds %s, which the server would use: nothing is served while it goes (the server would share the "
        "card with the training and could run either out of memory), and nothing changed." % cards,
        "Watch it: %s; once it has finished, run %s again." % (command("status"), command("serve")),
        "To serve sooner, stop it first: %s (a later launch resumes from its newest checkpoint)." % command("stop")]}
