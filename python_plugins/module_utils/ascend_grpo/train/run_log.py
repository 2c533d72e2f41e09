"""Read verl's training log (``python -m verl.trainer.main_ppo`` output): steps, resume, checkpoints, end, error.

Standard library only at import: this module also runs inside the training environment, through Ansible's
module machinery.

- :func:`parse` turns the log's text into steps and their metrics, the resume point, saved checkpoints, the final
  validation and, for a failed run, the exception that ended it;
- :func:`merge` joins the parses of a run's logs (one per launch) into one history;
- :func:`why_it_ended` says, in a user's terms, why a run that is not going failed.

What a person reads of that (one host's status, the per-host table, the plot) is :mod:`status_view`'s.

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

from ..common import workspace

# RayPPOTrainer._validate: "val-core/<data_source>/<acc or reward>/<mean|maj|best>@<n>" is the score to watch (the
# core variable at the largest n), "val-aux/..." the rest.
VAL_PREFIXES = ("val-core/", "val-aux/")
TAIL_LINES = 20  # lines of the fatal traceback kept in ``traceback_tail``

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
# printed before a save the instance's lease forced (verl's ray_trainer.py, fit; train/lease.py)
FORCE_SAVE = "Force saving checkpoint: ESI instance expiration approaching."
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
    - ``lease_saves``: the steps verl saved at because the instance's lease was ending (:data:`FORCE_SAVE`, then
      the save's "local_global_step_folder" line naming the step; a log that ends between them: the step after the
      last logged one), each once;
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
              "resumed_from": None, "checkpoints_saved": [], "lease_saves": [],
              "final_validation": None, "finished": False, "validating": False, "error": None,
              "traceback_tail": None, "first_error": None}
    open_tracebacks = {}  # source -> the _Traceback its lines are in
    tracebacks = []  # in the order they start
    previous = {}  # source -> its previous line
    validation = None  # (source, lines) of a final validation line wrapped by pprint, until it closes
    lease_save = False  # a forced save announced, its step not yet named

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
        if FORCE_SAVE in line:
            lease_save = True
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
            if lease_save:
                lease_save = False
                if number not in result["lease_saves"]:
                    result["lease_saves"].append(number)

    if lease_save:  # the log ends before the save named its step: the one after the last logged
        number = (steps[-1]["step"] if steps else (result["resumed_from"] or 0)) + 1
        if number not in result["lease_saves"]:
            result["lease_saves"].append(number)
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
    ``segments`` (int) says how many logs were read; ``checkpoints_saved`` and ``lease_saves`` are every segment's, in order.
    """
    if not segments:
        return dict(parse(""), segments=0)
    merged = dict(segments[-1], steps=[], validations=[], checkpoints_saved=[], lease_saves=[],
                  segments=len(segments))
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
        for number in segment.get("lease_saves", []):
            if number not in merged["lease_saves"]:
                merged["lease_saves"].append(number)
        for key in ("total_steps", "batches_per_epoch", "total_epochs"):
            if segment.get(key) is not None:
                merged[key] = segment[key]
    return merged


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
    ``saved``: the steps whose save finished; ``checkpoint_free_mb``: free space where checkpoints go. A full disk's
    fix names the setting that keeps fewer checkpoints as ``{max_actor_ckpt_to_keep}`` (grpo_train_status's option,
    which the role maps to grpo_max_actor_ckpt_to_keep)."""
    resume = ("a rerun resumes from step %d, the newest checkpoint whose save finished" % saved[-1] if saved
              else "a rerun starts from the beginning (no save finished)")
    # torch.save on a full disk says "file write failed", not ENOSPC: the free space left tells
    low = checkpoint_free_mb is not None and checkpoint_free_mb < workspace.LOW_SPACE_MB
    if error and ("No space left on device" in error or "Errno 28" in error or low):
        return ("%s: the disk is full%s. Free space (older global_step_N folders; {max_actor_ckpt_to_keep}, "
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
