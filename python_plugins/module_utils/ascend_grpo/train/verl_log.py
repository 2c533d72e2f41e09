"""Read verl's training log (``python -m verl.trainer.main_ppo`` output): steps, resume, checkpoints, end, error.

Standard library only at import: this module also runs inside the training environment, through Ansible's
module machinery. Only :func:`plot` needs matplotlib, and imports it when called.

- :func:`parse` turns the log's text into steps and their metrics, the resume point, saved checkpoints, the final
  validation and, for a failed run, the exception that ended it;
- :func:`summary` reduces that to one host's status (step, progress, ETA, latest metrics under short names);
- :func:`render_table` prints such statuses, one row per host, as a fixed-width table;
- :func:`plot` draws score, response length and KL loss against step into a PNG.

What the log looks like (verl@634bd935, Ray driving the workers)::

    2026-12-02 19:06:54,713	ERROR npu.py:82 -- Failed to detect NPU type.      <- Ray's own log, then a traceback
    ESC[36m(TaskRunner pid=9581)ESC[0m Total training steps: 2                 <- Ray prefix, ANSI colours
    (TaskRunner pid=9581) \\rTraining Progress:  50%|##   | 1/2 [...]          <- tqdm frames joined by \\r
    (TaskRunner pid=9581) local_global_step_folder: /ckpt/global_step_1
    (TaskRunner pid=9581) step:1 - actor/kl_loss:0.0 - critic/score/mean:0.0 - ... - perf/throughput:669.3
    (TaskRunner pid=9581) 'Final validation metrics: None'                      <- pprint of a str, may wrap lines
    Error executing job with overrides: [...]                                   <- Hydra, before a fatal traceback
    Traceback (most recent call last):
      ...
    ray.exceptions.RayTaskError(AssertionError): ray::TaskRunner.run() (...)   <- Ray's wrapper, more frames follow
      ...
    AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2

Lines from different Ray processes interleave (a worker's lines can fall inside the driver's traceback), so lines
are grouped by their Ray prefix ("source") wherever lines are read as a sequence.
"""

import ast
import re
import signal
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
# RayPPOTrainer._validate: "val-core/<data_source>/<acc or reward>/<mean|maj|best>@<n>" is the score to watch (the
# core variable at the largest n), "val-aux/..." the rest.
VAL_PREFIXES = ("val-core/", "val-aux/")
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
TAIL_LINES = 20  # lines of the fatal traceback kept in ``traceback_tail``
PLOT_PANELS = (("score mean", "critic/score/mean"), ("response length mean", "response_length/mean"),
               ("KL loss", "actor/kl_loss"))

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# "(TaskRunner pid=9581) ", "(pid=12) ", "(WorkerDict pid=7, ip=10.0.0.2) ", "(raylet) ".
_RAY_PREFIX = re.compile(r"\((?:[^()\s]+ )?pid=\d+(?:, ip=[^()\s]+)?\) ?|\(raylet(?:, ip=[^()\s]+)?\) ?")
_RAY_DEDUP = re.compile(r"\s*\[repeated \d+x across cluster\].*$")
# "step:3 - key:value - ...", also right after a progress frame ("...1.96s/it]step:3 - ..."); never the
# "training/global_step:3" inside it.
_STEP = re.compile(r"(?<![\w/])step:(\d+) - (.+)$")
_NUMPY_SCALAR = re.compile(r"\bnp\.\w+\(([^()]*)\)")  # numpy 2 reprs: np.float64(0.5) -> 0.5
_TOTAL_STEPS = re.compile(r"Total training steps: (\d+)")
# RayPPOTrainer._create_dataloader: "Size of train dataloader: 6, Size of val dataloader: 1" (batches per epoch; the
# loader drops the last partial batch); main_ppo's pprint of the config: "'total_epochs': 1,".
_BATCHES = re.compile(r"Size of train dataloader: (\d+)")
_TOTAL_EPOCHS = re.compile(r"'total_epochs': (\d+)")
_LOADED = re.compile(r"Load from checkpoint folder: .*global_step_(\d+)/?\s*$")
_SET_STEP = re.compile(r"Setting global step to (\d+)")
_SAVED = re.compile(r"local_global_step_folder: .*global_step_(\d+)/?\s*$")
_FINAL_VALIDATION = "Final validation metrics:"
# verl's _validate prints this before it generates each validation batch (ray_trainer.py at 634bd935)
_VALIDATION_BATCH = "test_gen_batch meta info:"
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("The above exception was the direct cause of the following exception:",
            "During handling of the above exception, another exception occurred:")
# "AssertionError: message", "torch.OutOfMemoryError: ...", "ray.exceptions.RayTaskError(ValueError): ...", "KeyError".
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?:\([\w.]+\))?(?::(?:\s.*)?)?$")
_RAY_WRAPPER = re.compile(r"(?:[\w.]+\.)?RayTaskError\b")
# A log record at ERROR level ("2026-12-02 19:06:54,713\tERROR npu.py:82 -- ...", "ERROR:root:..."): a traceback
# right after one was logged (logger.exception) and handled, not what ended the run.
_ERROR_RECORD = re.compile(r"(?:\[?[\d\-/:,.\sT]*\]?\s*)?\[?(?:ERROR|CRITICAL)\b")
_NOT_A_LITERAL = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)  # from ast.literal_eval


def strip_ansi(text):
    """The text without terminal colour codes (Ray colours its prefixes)."""
    return _ANSI.sub("", text)


# verl's reward managers print samples from the data set (verl/workers/reward_manager/naive.py, batch.py, dapo.py
# at 634bd935): print("[prompt]", prompt), print("[response]", response), print("[ground_truth]", ground_truth),
# then print("[score]", score) or print(f"[{key}]", value) per key of a dict score. The texts span lines.
_SAMPLE_START = re.compile(r"\[prompt\](?: |$)")
_SAMPLE_MARK = re.compile(r"\[[a-z_]\w*\](?: |$)")  # [response], [ground_truth], [score], [acc]: never [ERROR]


def sample_print_lines(text):
    """The indexes (from 0, in ``text.split("\\n")``) of the lines that belong to verl's sample prints: text from
    the data set and the model, never verl's own output, so nothing in them may count as a step, an error or a
    failure's signature (a problem whose text says "NPU out of memory" must not steer the diagnosis).

    Per Ray source (the line's first prefix: every line a worker prints carries its own, so text cannot change
    it), a print runs from a "[prompt]" line to the last marker line ("[response]", "[ground_truth]", "[score]",
    "[<key>]") before the next "[prompt]"; a "[prompt]" with no marker after it runs to the next one or the end
    (a print still being written). The last marker is the one verl itself printed after the sample's text, so a
    marker the text holds cannot end the print early."""
    lines = text.split("\n")
    by_source = {}  # source -> [(index, kind)] of its start and marker lines
    for index, raw in enumerate(lines):
        plain = _ANSI.sub("", raw)
        prefix = _RAY_PREFIX.match(plain)
        body = plain[prefix.end():] if prefix else plain
        if _SAMPLE_START.match(body):
            kind = "start"
        elif _SAMPLE_MARK.match(body):
            kind = "mark"
        else:
            continue
        by_source.setdefault(prefix.group(0).strip() if prefix else "", []).append((index, kind))
    inside = set()
    for source, found in by_source.items():
        starts = [at for at, (index, kind) in enumerate(found) if kind == "start"]
        for number, at in enumerate(starts):
            following = found[at + 1:starts[number + 1]] if number + 1 < len(starts) else found[at + 1:]
            begin = found[at][0]
            if following:
                end = following[-1][0]
            elif number + 1 < len(starts):
                end = found[starts[number + 1]][0] - 1
            else:
                end = len(lines) - 1
            for index in range(begin, end + 1):
                plain = _ANSI.sub("", lines[index])
                prefix = _RAY_PREFIX.match(plain)
                if (prefix.group(0).strip() if prefix else "") == source:
                    inside.add(index)
    return inside


def _lines(text):
    """(source, line) for each complete line of ``text``, ANSI codes and Ray prefixes removed.

    ``source`` is the Ray prefix ("(TaskRunner pid=9581)"), "" for the driver's own output. Each ``\\r``-separated
    frame becomes a line of its own (empty frames are dropped). The text after the last newline, a line still
    being written, is left out: a cut step line would otherwise report half its metrics. verl's sample prints
    (:func:`sample_print_lines`) are left out: their text is the data set's, never verl's own output.
    """
    samples = sample_print_lines(text)
    for index, raw in enumerate(text.split("\n")[:-1]):
        if index in samples:
            continue
        raw = _ANSI.sub("", raw)
        prefix = _RAY_PREFIX.match(raw)
        source = prefix.group(0).strip() if prefix else ""
        body = _RAY_DEDUP.sub("", raw[prefix.end():] if prefix else raw)
        # Ray writes every worker's output into one stream: another worker's line can follow one that ended
        # without its newline ("...infer_tp: 2(WorkerDict pid=5661) Model config ..."); each is a line of its own
        pieces = []
        glued = _RAY_PREFIX.search(body, 1)
        while glued:
            pieces.append((source, body[:glued.start()]))
            source, body = glued.group(0).strip(), body[glued.end():]
            glued = _RAY_PREFIX.search(body, 1)
        pieces.append((source, body))
        for piece_source, piece in pieces:
            if "\r" in piece:
                for frame in piece.split("\r"):
                    if frame:
                        yield piece_source, frame
            else:
                yield piece_source, piece


def _number(text):
    """A metric value as float (numpy 2 reprs unwrapped), or None when it is not a number."""
    try:
        return float(_NUMPY_SCALAR.sub(r"\1", text.strip()))
    except ValueError:
        return None


def _metrics(text):
    """``key:value - key:value ...`` -> {key: float}; items without a numeric value are skipped."""
    metrics = {}
    for item in text.split(" - "):
        key, sep, value = item.rpartition(":")
        number = _number(value) if sep and key.strip() else None
        if number is not None:
            metrics[key.strip()] = number
    return metrics


def _literal(text):
    """``ast.literal_eval`` of ``text``, numpy scalar reprs unwrapped first; ``text`` itself when it is no literal."""
    try:
        return ast.literal_eval(_NUMPY_SCALAR.sub(r"\1", text))
    except _NOT_A_LITERAL:
        return text


class _Traceback:
    """One Python traceback (with its chained ones and Ray's nested ones) in the lines of one source."""

    def __init__(self, logged):
        self.logged = logged  # right after an ERROR log record: logged and handled
        self.lines = [_TRACEBACK]
        self.exceptions = []  # the "Xxx: message" lines, in order
        self._in_frames = True  # False right after an exception line

    def feed(self, line):
        """Take ``line`` if it continues this traceback; False once the traceback is over."""
        indented = line[:1] in (" ", "\t")
        stripped = line.strip()
        if self._in_frames:
            if indented or not stripped:
                pass
            elif _EXCEPTION.match(line):
                self.exceptions.append(stripped)
                self._in_frames = False
            else:
                return False
        elif indented or line.rstrip() == _TRACEBACK:  # Ray's wrapper line is followed by the remote frames
            self._in_frames = True
        elif stripped and stripped not in _CHAINED:
            return False
        self.lines.append(line.rstrip())
        return True

    def error(self):
        """The most specific exception line: the last one that is not a Ray ``RayTaskError`` wrapper."""
        specific = [line for line in self.exceptions if not _RAY_WRAPPER.match(line)]
        return (specific or self.exceptions)[-1]

    def tail(self):
        """The last :data:`TAIL_LINES` lines, trailing blank lines left out."""
        lines = list(self.lines)
        while lines and not lines[-1]:
            lines.pop()
        return lines[-TAIL_LINES:]


_INCOMPLETE = object()  # _validation's answer for a pprint-wrapped line whose closing part is still to come


def parse(text):
    """Parse verl's training log ``text`` (str). Never raises on odd input: what it cannot read it skips.

    Returns a dict:

    - ``steps``: [{"step": int, "metrics": {key: float}}] in step order. A step seen again (the run was resumed
      from an earlier checkpoint) replaces the earlier one, and drops the steps after it, which belong to the
      abandoned timeline. A line of validation metrics only (``val-core/...``, ``val-aux/...``: the validation
      before training, logged at the step training starts from) is not a step;
    - ``validations``: [{"step": int, "metrics": {val key: float}}] in step order, the same way: the validation
      before training (step 0, or the step a resume starts from) and every ``trainer.test_freq``-th step's;
    - ``total_steps``: the last "Total training steps: N", or None;
    - ``batches_per_epoch``: the last "Size of train dataloader: N" (steps in one epoch), or None;
    - ``total_epochs``: ``trainer.total_epochs`` from the config verl prints at start, or None;
    - ``resumed_from``: N of the last "Load from checkpoint folder: .../global_step_N" (or "Setting global step
      to N"), or None for a run trained from scratch;
    - ``checkpoints_saved``: steps of the "local_global_step_folder: .../global_step_N" lines, each once, the
      latest save last;
    - ``final_validation``: what "Final validation metrics: ..." printed, as a literal (a dict, None) where
      ``ast.literal_eval`` reads it, else as str; None when not printed (see ``finished``);
    - ``finished``: True once the final validation line is seen (verl prints it as the last thing of training);
    - ``validating``: True while a validation runs: verl began generating a validation batch and has logged
    neither its metrics nor a step since (the validation before training, for a long run most of the wait for
    the first step: 5,000 MATH problems with the reference run);
    - ``error``: for a run that did not finish, the most specific exception line of the last traceback that was
      not logged and handled (e.g. "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2",
      never the ``ray.exceptions.RayTaskError(...)`` wrappers around it); None otherwise. A run killed without a
      traceback (OOM killer, SIGKILL) looks like a running one here: the process state tells them apart;
    - ``traceback_tail``: the last lines (at most :data:`TAIL_LINES`) of that traceback, or None;
    - ``first_error``: like ``error``, of the first such traceback: where a failure began when one failure led to
      others (a worker's, then the driver's); None otherwise.
    """
    steps = []
    result = {"steps": steps, "validations": [], "total_steps": None, "batches_per_epoch": None, "total_epochs": None,
              "resumed_from": None, "checkpoints_saved": [],
              "final_validation": None, "finished": False, "validating": False, "error": None,
              "traceback_tail": None, "first_error": None}
    open_tracebacks = {}  # source -> the _Traceback its lines are in
    tracebacks = []  # in the order they start
    previous = {}  # source -> its previous line
    validation = None  # (source, lines) of a final validation line wrapped by pprint, until it closes

    for source, line in _lines(text):
        last_line = previous.get(source, "")
        previous[source] = line
        if validation is not None and validation[0] == source:
            if line.lstrip()[:1] in ("'", '"'):  # pprint's next 'part'
                validation[1].append(line)
                value = _validation(validation[1])
                if value is not _INCOMPLETE:
                    result["final_validation"] = value
                    validation = None
                continue
            result["final_validation"] = _validation(validation[1], complete=True)  # it never closed
            validation = None
        current = open_tracebacks.get(source)
        if current is not None:
            if current.feed(line):
                continue
            del open_tracebacks[source]
        if line.rstrip() == _TRACEBACK:
            current = _Traceback(logged=bool(_ERROR_RECORD.match(last_line)))
            open_tracebacks[source] = current
            tracebacks.append(current)
            continue
        if _VALIDATION_BATCH in line:
            result["validating"] = True
            continue
        match = _STEP.search(line)
        if match:
            result["validating"] = False
            number = int(match.group(1))
            metrics = _metrics(match.group(2))
            _add(result["validations"], number, {key: value for key, value in metrics.items()
                                                  if key.startswith(VAL_PREFIXES)})
            if metrics and all(key.startswith(VAL_PREFIXES) for key in metrics):
                continue  # the validation before training (val_before_train), logged at the step it starts from
            _add(steps, number, metrics)
            continue
        if _FINAL_VALIDATION in line:
            result["finished"] = True
            result["validating"] = False
            value = _validation([line])
            if value is _INCOMPLETE:
                validation = (source, [line])
            else:
                result["final_validation"] = value
            continue
        for pattern, key in ((_TOTAL_STEPS, "total_steps"), (_LOADED, "resumed_from"), (_SET_STEP, "resumed_from"),
                             (_BATCHES, "batches_per_epoch"), (_TOTAL_EPOCHS, "total_epochs")):
            match = pattern.search(line)
            if match:
                result[key] = int(match.group(1))
        match = _SAVED.search(line)
        if match:
            saved = result["checkpoints_saved"]
            number = int(match.group(1))
            if number in saved:
                saved.remove(number)
            saved.append(number)

    if validation is not None:  # the log ends inside the wrapped final validation line
        result["final_validation"] = _validation(validation[1], complete=True)
    fatal = [tb for tb in tracebacks if tb.exceptions and not tb.logged]
    if fatal and not result["finished"]:
        result["error"] = fatal[-1].error()
        result["traceback_tail"] = fatal[-1].tail()
        result["first_error"] = fatal[0].error()
    return result


def _add(entries, number, metrics):
    """Append step ``number``'s ``metrics`` to ``entries`` (in step order), dropping the entries at or after it: a
    step seen again starts a new timeline (a resume from an earlier checkpoint). Empty ``metrics`` only drop."""
    while entries and entries[-1]["step"] >= number:
        entries.pop()
    if metrics:
        entries.append({"step": number, "metrics": metrics})


def merge(segments):
    """One history from :func:`parse` results of a run's logs, oldest first (each launch writes its own log).

    Each segment continues the history where it resumed: its ``resumed_from`` drops the steps and validations
    after that step (a timeline abandoned when the run stopped after its last save), and its own steps replace
    any at or after them (:func:`_add`). State (``finished``, ``error``, ...) is the last segment's; counts it did
    not log (``total_steps``, ``batches_per_epoch``, ``total_epochs``) come from the newest segment that did.
    ``segments`` (int) says how many logs were read; ``checkpoints_saved`` is every segment's, in order.
    """
    if not segments:
        return dict(parse(""), segments=0)
    merged = dict(segments[-1], steps=[], validations=[], checkpoints_saved=[], segments=len(segments))
    for segment in segments:
        if segment.get("resumed_from") is not None:
            _add(merged["steps"], segment["resumed_from"] + 1, None)
            _add(merged["validations"], segment["resumed_from"] + 1, None)
        for entry in segment["steps"]:
            _add(merged["steps"], entry["step"], entry["metrics"])
        for entry in segment.get("validations", []):
            _add(merged["validations"], entry["step"], entry["metrics"])
        for number in segment["checkpoints_saved"]:
            if number in merged["checkpoints_saved"]:
                merged["checkpoints_saved"].remove(number)
            merged["checkpoints_saved"].append(number)
        for key in ("total_steps", "batches_per_epoch", "total_epochs"):
            if segment.get(key) is not None:
                merged[key] = segment[key]
    return merged


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


def _validation(lines, complete=False):
    """The value printed by verl's ``pprint(f"Final validation metrics: {metrics}")`` in ``lines``.

    pprint shows the str quoted, wrapped over several lines as ``('part' \\n 'part')`` when long: while the
    quoted form does not parse yet, :data:`_INCOMPLETE` (unless ``complete``: then the text as it is).
    """
    text = "\n".join(line.strip() for line in lines)
    if text[:1] in ("(", "'", '"'):
        try:
            text = ast.literal_eval(text)
        except SyntaxError:
            if not complete:
                return _INCOMPLETE
        except _NOT_A_LITERAL:  # parses, but more lines will not make it a literal
            pass
        if not isinstance(text, str):
            text = repr(text)
    value = text.split(_FINAL_VALIDATION, 1)[-1].strip()
    return _literal(value)


def why_it_ended(exit_status, error, last_line, saved, checkpoint_free_mb=None):
    """Why a run that is not going failed, in a user's terms, and what a rerun does.

    ``exit_status``: what the job's wrapper recorded (None: it could not: the process, its container or the
    machine went all at once); ``error``: the exception :func:`parse` found; ``last_line``: the log's last line;
    ``saved``: the steps whose save finished; ``checkpoint_free_mb``: free space where checkpoints go."""
    resume = ("a rerun resumes from step %d, the newest checkpoint whose save finished" % saved[-1] if saved
              else "a rerun starts from the beginning (no save finished)")
    # torch.save on a full disk says "file write failed", not ENOSPC: the free space left tells
    low = checkpoint_free_mb is not None and checkpoint_free_mb < workspace.LOW_SPACE_MB
    if error and ("No space left on device" in error or "Errno 28" in error or low):
        return ("%s: the disk is full%s. Free space (older global_step_N folders; grpo_max_actor_ckpt_to_keep, "
                "trainer.max_actor_ckpt_to_keep, keeps fewer), then rerun: %s" % (error, "" if checkpoint_free_mb is None else
                                                   " (%d MB free where checkpoints go)" % checkpoint_free_mb, resume))
    if error:
        return error
    if exit_status is None:
        return ("it ended without an exit status: its container was removed or restarted, or the machine went "
                "down; %s" % resume)
    if exit_status > 128:
        number = exit_status - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal %d" % number
        return ("killed by %s (exit %d), from outside the run (the kernel's OOM killer, or someone); %s" % (
            name, exit_status, resume))
    return last_line or "no log"


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
    """One host's training status from :func:`parse`'s result.

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
    0.375@4 of 3 logged (<metric>)``, ``tensorboard: ...`` (where its events are and how to see them);
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
        if row.get("tensorboard"):
            out.append("    tensorboard: %s" % _job_text(row["tensorboard"]))
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

    ``parsed`` is :func:`parse`'s (or :func:`merge`'s) result; ``title`` goes above the panels. Raises ValueError
    when the log has no step yet, ImportError when matplotlib is missing. Draws with the Agg canvas directly (no
    pyplot, no global backend switch), so it works without a display and inside other matplotlib users. Returns
    ``path``.
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
