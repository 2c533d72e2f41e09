"""The workspace's shared pieces: each stage's hand-over record, and the small helpers every engine needs.

A stage hands its results on through ``<workspace>/.grpo/<stage>.json`` (its *record*): the deps stage names the
verl tree it installed, the assets stage the model, data and reward, the train stage its run and checkpoint
folders. A later stage reads the record instead of recomputing another role's paths, so a setting changed in one
place (say ``deps_pinning_verl_source: path``) reaches every stage that uses it.

Standard library only: it runs in the training environment, as part of modules and of the detached jobs.
"""

import hashlib
import json
import os
import tempfile
import time

from . import rerun, secrets

STAGES = ("container", "deps", "patch", "assets", "cluster", "train", "eval")
ISO_TIME = "%Y-%m-%dT%H:%M:%S%z"
STAMP_TIME = "%Y%m%d-%H%M%S"


class MissingRecord(Exception):
    """A stage's record is not there (or is not a JSON object): the message names the stage to run."""


# Below this much free space where a failing step wrote, a full disk is taken for the cause even when the step's
# output does not say so (venv's ensurepip, torch.save: "file write failed").
LOW_SPACE_MB = 128


def now_iso():
    """The local time with its offset, as every record and log line writes it."""
    return time.strftime(ISO_TIME)


def backup_path(path):
    """Where a file or folder someone may have edited is kept before it is replaced: ``<path>.bak-<time>``."""
    return "%s.bak-%s" % (path, time.strftime(STAMP_TIME))


def nearest_existing(path):
    """``path`` or, when it does not exist yet, its nearest parent that does (where it would be made)."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def read_json(path, default=None):
    """The JSON in ``path``, or ``default`` when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def write_json(path, data, indent=2, mode=None):
    """Write ``data`` to ``path`` atomically (a reader never sees half a file); returns whether it changed. By
    default 0644, or 0600 when ``data`` holds a credential (a URL with a password: secrets.record_mode)."""
    return write_text(path, json.dumps(data, indent=indent, sort_keys=True) + "\n",
                      mode=secrets.record_mode(data) if mode is None else mode)[0]


def write_text(path, text, mode=0o644, backup=False, check_mode=False):
    """Put ``text`` in ``path`` (atomically, making its folder) when it differs; with ``backup``, a copy that was
    there is kept as ``<path>.bak-<time>`` first. Returns (changed, backup path or None); nothing is written in
    check mode."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            before = handle.read()
    except OSError:
        before = None
    if before == text:
        if not check_mode and (os.stat(path).st_mode & 0o7777) != mode:
            os.chmod(path, mode)
        return False, None
    kept = backup_path(path) if backup and before is not None else None
    if check_mode:
        return True, kept
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        if kept:
            os.replace(path, kept)
            # the copy kept gets no more permission than the new file: a script holding secrets made 0700 does not
            # leave its 0755 former self readable beside it
            os.chmod(kept, os.stat(kept).st_mode & mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True, kept


def sha256_file(path, chunk=1 << 20):
    """The sha256 of a file's bytes, read in chunks (weights shards are gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def text_table(header, rows, right=()):
    """A fixed-width table as lines: the header, a rule of dashes, then the rows (lists of strings); columns two
    spaces apart, the columns numbered in ``right`` right-aligned, no trailing spaces."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(row) for row in rows]


def record_path(state_dir, stage):
    return os.path.join(state_dir, "%s.json" % stage)


def _check_stage(stage):
    if stage not in STAGES:
        raise ValueError("unknown stage %r: one of %s" % (stage, ", ".join(STAGES)))


def read_record(state_dir, stage, inventory=""):
    """The record the stage left, or raise :class:`MissingRecord` naming the stage to run first (its command with
    ``inventory``, the user's -i words: :mod:`rerun`)."""
    _check_stage(stage)
    path = record_path(state_dir, stage)
    data = read_json(path)
    if not isinstance(data, dict):
        raise MissingRecord("%s is %s: run the %s stage first (%s)." % (
            path, "missing" if not os.path.exists(path) else "not a JSON object", stage,
            rerun.command(stage, inventory)))
    return data


def write_record(state_dir, stage, data, check_mode=False):
    """Leave the stage's record for the stages after it; returns whether it changed (nothing written in check mode).
    """
    _check_stage(stage)
    path = record_path(state_dir, stage)
    if check_mode:
        return read_json(path) != data
    return write_json(path, data)


def verl_dir(state_dir, explicit="", inventory=""):
    """The verl source tree to use: ``explicit`` when set, else the one the deps stage installed (its record).
    ``inventory``: the -i words the command to run the deps stage carries."""
    if explicit:
        return explicit
    if not state_dir:
        raise MissingRecord("no verl tree named: give the tree, or the state folder whose deps record names it.")
    record = read_record(state_dir, "deps", inventory)
    if not record.get("verl_dir"):
        raise MissingRecord("%s names no verl_dir: run the deps stage again (%s)."
                            % (record_path(state_dir, "deps"), rerun.command("deps", inventory)))
    return record["verl_dir"]
