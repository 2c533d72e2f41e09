"""Why a training run ended, from a catalogue of known failures (data: roles/grpo_train/files/triage.yml).

Each catalogue entry is one failure users of this stack meet:

- ``id``: a short name; ``cause``: what happened, in a user's words; ``fix``: what to change, a template whose
  ``{name}`` fields are filled from the run (see :func:`diagnose`), ``{rerun.TAG}`` with the command that reruns
  that tag with the user's inventory (``ansible-playbook site.yml -i ... --tags TAG``, :mod:`rerun`); ``setting``:
  the setting (or verl override) to
  change; ``upstream``: the threads it comes from (URLs);
- what identifies it, any of: ``signatures`` (regular expressions, one of which a log line matches, searched
  anywhere in the line; never in verl's sample prints, whose text is the data set's: see
  :func:`run_log.sample_print_lines`), ``exit_status`` (the job's exit status is one of these), ``low_disk``
  (true: where the
  checkpoints go has less than :data:`LOW_SPACE_MB` free) and ``no_exit_status`` (true: the job's wrapper could
  not record one: the process, its container or the machine went all at once). An entry with several of them needs
  a signature match or the other conditions to hold (``match: any``, the default) or all of them (``match: all``).

The entries are tried in the catalogue's order and the first that holds wins, so the specific ones (the KV cache
that does not fit) come before the generic ones (a Ray worker that died, which the first one also causes). A failure
no entry knows is reported with the log's first error line (the first exception of a traceback, else the first
line that says Error), not the tail, with its line number.

Standard library only.
"""

import re

from ..common import rerun
from . import run_log

LOW_SPACE_MB = 512
REQUIRED = ("id", "cause", "fix", "setting")
CONDITIONS = ("signatures", "exit_status", "low_disk", "no_exit_status")

_ERROR_WORD = re.compile(r"\b(?:ERROR|FATAL)\b|\w*(?:Error|Exception)\b:|\berror:")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # Ray colours its prefixes
_FIELD = re.compile(r"\{([A-Za-z_][\w.]*)\}")


class CatalogueError(ValueError):
    """The catalogue is malformed (names the entry and the field)."""


def validate(entries):
    """The catalogue checked: a list of mappings with the required fields, unique ids, at least one condition, and
    signatures that compile. Returns the entries with their signatures compiled (``_patterns``)."""
    if not isinstance(entries, list) or not entries:
        raise CatalogueError("the triage catalogue is a non-empty list of entries")
    seen, out = set(), []
    for index, entry in enumerate(entries):
        where = "triage entry %d (%s)" % (index, entry.get("id") if isinstance(entry, dict) else entry)
        if not isinstance(entry, dict):
            raise CatalogueError("%s is not a mapping" % where)
        missing = [k for k in REQUIRED if not isinstance(entry.get(k), str) or not entry[k].strip()]
        if missing:
            raise CatalogueError("%s lacks %s" % (where, ", ".join(missing)))
        if entry["id"] in seen:
            raise CatalogueError("%s: the id is used twice" % where)
        seen.add(entry["id"])
        if not any(entry.get(k) for k in CONDITIONS):
            raise CatalogueError("%s names no condition (%s)" % (where, ", ".join(CONDITIONS)))
        unknown = sorted(set(entry) - set(REQUIRED) - set(CONDITIONS) - {"upstream", "match"})
        if unknown:
            raise CatalogueError("%s: unknown field(s) %s" % (where, ", ".join(unknown)))
        try:
            patterns = [re.compile(p) for p in entry.get("signatures") or []]
        except re.error as err:
            raise CatalogueError("%s: a signature does not compile: %s" % (where, err)) from err
        out.append(dict(entry, _patterns=patterns))
    return out


def first_error(text):
    """(line number, line) of the log's first error: the exception of the first traceback that was not logged and
    handled (run_log.parse: an ERROR record followed by its traceback is noise, e.g. Ray's "Failed to detect NPU
    type" on a host without the NPU's acl module), else the first line that says Error; (None, None) when there is
    none. Lines are counted by "\\n" from 1, as ``sed -n Np`` counts them in the log on disk (read it with
    ``newline=""``: Python's default turns a lone "\\r" into a line of its own)."""
    lines = (text or "").split("\n")
    samples = run_log.sample_print_lines(text or "")
    first = run_log.parse(text or "").get("first_error")
    if first:
        for number, line in enumerate(lines, 1):
            if number - 1 in samples:
                continue
            plain = run_log.strip_ansi(line)
            if plain.rstrip().endswith(first) or first in plain:
                return number, first
        return None, first
    for number, line in enumerate(lines, 1):
        if number - 1 not in samples and _ERROR_WORD.search(line):
            return number, line.strip()
    return None, None


def _fill(template, values, inventory=""):
    """``template`` with each ``{name}`` replaced by ``values[name]`` (a dotted key of the run's overrides, or one
    of the diagnosis' own), "verl's default" when the run does not set it; ``{rerun.TAG}`` by the command that
    reruns TAG with ``inventory`` (the ``-i`` words, :func:`rerun.inventory_args`)."""
    def one(match):
        name = match.group(1)
        if name.startswith("rerun."):
            return rerun.command(name[len("rerun."):], inventory)
        value = values.get(name, "verl's default")
        return "null" if value is None else str(value)
    return _FIELD.sub(one, template)


def diagnose(text, entries, exit_status=None, free_mb=None, values=None, inventory=""):
    """The catalogue's verdict on a run that ended badly.

    ``text``: the run's log; ``entries``: :func:`validate`'s; ``exit_status``: the job's (None: none recorded);
    ``free_mb``: free space where checkpoints go; ``values``: {dotted key: value} the fix templates may name (the
    run's values from its spec, :func:`ascend_grpo.train.run_spec.values`); ``inventory``: the ``-i`` words the
    commands in a fix carry (empty: a placeholder the user fills in).

    Returns {"id", "cause", "fix", "setting", "upstream": [urls], "evidence": the matched line or condition,
    "line": its number or None, "first_error": [number, line] or None}; ``id`` is "unknown" when no entry holds
    (then ``cause`` is the first error line and ``fix`` says what to read)."""
    lines = (text or "").split("\n")
    number, line = first_error(text)
    values = dict(values or {}, exit_status=exit_status, free_mb=free_mb)
    samples = run_log.sample_print_lines(text or "")
    for entry in entries:
        hit = _hit(entry, lines, exit_status, free_mb, samples)
        if hit is not None:
            evidence, at = hit
            return {"id": entry["id"], "cause": _fill(entry["cause"], values, inventory),
                    "fix": _fill(entry["fix"], values, inventory),
                    "setting": entry["setting"], "upstream": list(entry.get("upstream") or []),
                    "evidence": evidence, "line": at, "first_error": [number, line] if line else None}
    return {"id": "unknown",
            # first_error gives no line number when it cannot place the error in the text (a log read mid-write)
            "cause": ("the first error in the log (%s): %s" % ("line %d" % number if number else "line unknown", line))
            if line else
            ("no error in the log; exit status %s" % exit_status),
            "fix": "read the log from that line; if it is none of the known failures, make a support bundle "
                   "(%s) and ask upstream with it" % rerun.command("bundle", inventory),
            "setting": "", "upstream": [], "evidence": line, "line": number,
            "first_error": [number, line] if line else None}


def _hit(entry, lines, exit_status, free_mb, samples=frozenset()):
    """(evidence, line number) when ``entry`` holds, else None. ``samples``: indexes of the lines to pass over
    (verl's sample prints)."""
    found = None
    for number, line in enumerate(lines, 1):
        if number - 1 not in samples and any(p.search(line) for p in entry["_patterns"]):
            found = (_ANSI.sub("", line).strip(), number)
            break
    others = []
    if entry.get("exit_status"):
        others.append(("exit status %s" % exit_status, exit_status in entry["exit_status"]))
    if entry.get("low_disk"):
        others.append(("%s MB free where checkpoints go" % free_mb,
                       free_mb is not None and free_mb < LOW_SPACE_MB))
    if entry.get("no_exit_status"):
        others.append(("no exit status recorded", exit_status is None))
    if entry.get("match", "any") == "all":
        if (entry["_patterns"] and not found) or not all(ok for _, ok in others):
            return None
        return found or (", ".join(what for what, _ in others), None)
    if found:
        return found
    held = [what for what, ok in others if ok]
    return (held[0], None) if held else None
