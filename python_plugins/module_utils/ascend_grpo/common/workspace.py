"""The workspace's shared pieces: each stage's hand-over record, and the small helpers every engine needs.

A stage hands its results on through ``<workspace>/.grpo/<stage>.json`` (its *record*): the deps stage names the
verl tree it installed, the assets stage the model, data and reward, the train stage its run and checkpoint
folders. A later stage reads the record instead of recomputing another role's paths, so a setting changed in one
place (say ``deps_pinning_verl_source: path``) reaches every stage that uses it.

Standard library only: it runs in the training environment, as part of modules and of the detached jobs.
"""

import errno
import hashlib
import json
import os
import stat
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


def write_json(path, data, indent=2, root=None, mode=None):
    """Write ``data`` to ``path`` atomically (a reader never sees half a file); returns whether it changed.
    ``root``: as :func:`write_text`'s. By default 0644, or 0600 when ``data`` holds a credential (a URL with a
    password: secrets.record_mode)."""
    return write_text(path, json.dumps(data, indent=indent, sort_keys=True) + "\n", root=root,
                      mode=secrets.record_mode(data) if mode is None else mode)[0]


# Writes never follow a link. The host's stages write as root into the workspace the container also writes in as
# root: a link planted there (.grpo -> /etc, container.json -> /root/.bashrc) would otherwise have the host make,
# chmod or replace files outside it. Every part below the folder the caller trusts is opened with O_NOFOLLOW
# relative to its parent's descriptor, so nothing can swap a part for a link between a check and a write.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class LinkedPath(OSError):
    """A part of a path the package writes is a symbolic link (or no folder where one is needed): nothing was
    written through it. The message names the path and what to do."""


def _refusal(path, st):
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "somewhere"
        return LinkedPath("%s is a symbolic link (to %s). The package writes there as root and never through a "
                          "link: one made from inside the training environment could point its writes at the "
                          "host's own files. Nothing was written. Check who made it, then remove the link itself "
                          "(rm %s, which leaves what it points to alone) and run the stage again."
                          % (path, target, path))
    return LinkedPath("%s is not a folder, and the package keeps its files in it. Nothing was written. Move it "
                      "aside (mv %s %s.moved) and run the stage again." % (path, path, path))


def open_folder(root, path, make=False, mode=0o755):
    """(descriptor, folders made) of the folder ``path``, reached from ``root`` one part at a time without
    following a link. ``root`` is the caller's to trust (the workspace a user named may lie behind links of their
    own); every part below it must be a real folder. With ``make``, missing parts are made with ``mode`` (and
    ``root`` with its parents); without, a missing part raises FileNotFoundError. A link or a file where a folder
    belongs raises :class:`LinkedPath` naming it. The caller closes the descriptor."""
    root, path = os.path.abspath(root), os.path.abspath(path)
    rel = os.path.relpath(path, root)
    if rel == os.curdir:
        parts = []
    elif rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise ValueError("%s is not inside %s" % (path, root))
    else:
        parts = rel.split(os.sep)
    if make:
        os.makedirs(root, exist_ok=True)
    fd, where, made = os.open(root, os.O_RDONLY | _DIRECTORY), root, []
    try:
        for part in parts:
            where = os.path.join(where, part)
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not make:
                    raise
                os.mkdir(part, mode, dir_fd=fd)  # never through a link: an existing one makes it fail
                made.append(where)
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
                    os.fchmod(child, mode)  # the umask does not decide
                    os.close(child)
            if not stat.S_ISDIR(st.st_mode):
                raise _refusal(where, st)
            try:
                child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link since the look
                    raise _refusal(where, os.stat(part, dir_fd=fd, follow_symlinks=False)) from err
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, made


def make_folders(root, path, mode=0o755, check_mode=False):
    """Make folder ``path`` below ``root`` as :func:`open_folder` walks (no link followed); returns the folders
    made (in check mode, the ones that would be). Raises :class:`LinkedPath`."""
    try:
        fd, made = open_folder(root, path, make=not check_mode, mode=mode)
    except FileNotFoundError:  # check mode: the first missing part and everything below it would be made
        missing, probe = [], os.path.abspath(path)
        while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
            missing.insert(0, probe)
            probe = os.path.dirname(probe)
        if probe.startswith(os.path.abspath(root) + os.sep):  # what is there below the root is walked as well
            os.close(open_folder(root, probe)[0])
        return missing
    os.close(fd)
    return made


def refuse_links(root, path):
    """Raise :class:`LinkedPath` when a part of ``path`` below ``root`` that exists (``path`` itself included) is
    a link, or no folder where one is needed; a check with nothing made, for check mode and before a read."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, _ = open_folder(root, folder)
    except FileNotFoundError:
        return
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise _refusal(os.path.abspath(path), st)
    finally:
        os.close(fd)


def _read_nofollow(name, folder_fd):
    """(stat, text or None) of ``name`` in the folder, never following a link (the stat says when it is one)."""
    try:
        st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        return st, None
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=folder_fd)
    except OSError:
        return st, None
    with os.fdopen(fd, encoding="utf-8", errors="surrogateescape") as handle:
        return st, handle.read()


def _chmod_nofollow(name, folder_fd, mode):
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=folder_fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_text(path, text, mode=0o644, backup=False, check_mode=False, root=None):
    """Put ``text`` in ``path`` (atomically, making its folder) when it differs; with ``backup``, a copy that was
    there is kept as ``<path>.bak-<time>`` first. Returns (changed, backup path or None); nothing is written in
    check mode.

    No link is followed: ``path`` itself being one is refused (:class:`LinkedPath`), and with ``root`` (a folder
    above ``path`` the caller trusts: the workspace) so is every folder between the two. The file is written to a
    new name (O_CREAT|O_EXCL|O_NOFOLLOW) and renamed over ``path``; modes are set on descriptors."""
    path = os.path.abspath(path)
    folder, name = os.path.split(path)
    try:
        folder_fd, _ = open_folder(folder if root is None else root, folder, make=not check_mode)
    except FileNotFoundError:
        if check_mode:
            return True, None
        raise
    try:
        st, before = _read_nofollow(name, folder_fd)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise _refusal(path, st)
        if st is not None and before == text:
            if not check_mode and stat.S_IMODE(st.st_mode) != mode:
                _chmod_nofollow(name, folder_fd, mode)
            return False, None
        kept = backup_path(path) if backup and before is not None else None
        if check_mode:
            return True, kept
        tmp = ".%s.%s" % (name, os.urandom(4).hex())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=folder_fd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(text)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
            if kept:
                os.replace(name, os.path.basename(kept), src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
                # the copy kept gets no more permission than the new file: a script holding secrets made 0700 does
                # not leave its 0755 former self readable beside it
                _chmod_nofollow(os.path.basename(kept), folder_fd, stat.S_IMODE(st.st_mode) & mode)
            os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder_fd)
            except OSError:
                pass
            raise
        return True, kept
    finally:
        os.close(folder_fd)


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
    Neither the state folder nor the record may be a link (:class:`LinkedPath`): the folder is reached from its
    parent, the workspace, without following one."""
    _check_stage(stage)
    path = record_path(state_dir, stage)
    root = os.path.dirname(os.path.abspath(state_dir))
    if check_mode:
        refuse_links(root, path)
        return read_json(path) != data
    return write_json(path, data, root=root)


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
