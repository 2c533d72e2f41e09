"""What ``--tags teardown`` may remove on an NPU host, and the workspace's removal: the ``workspace_teardown``
module's work as plain Python.

The workspace (its host side, ``npu_container_workspace_host``) goes only when the user asks for it, and only when
it is one the package made: an absolute path with no link in it (a link would hand the removal another folder),
not ``/``, a system folder or a folder holding (or being) a user's home, and with the state folder ``.grpo`` the
stages write (a real folder holding a stage's record; the container stage's names this very path). Its size is
counted as ``du`` counts it (blocks, each file once, no link followed), before it goes, so the teardown can say what
it freed. The removal never follows a link inside it (``shutil.rmtree`` removes the link, not what it points at).

Messages name the inputs as ``{workspace}`` and ``{remove}`` (the role maps them to its settings). Only the standard
library; no Ansible import.
"""

import os
import pwd
import shutil
import stat

from ..common import rerun
from ..common import workspace as ws
from ..common.errors import FieldError

# Folders of the system (and their parents): never a workspace to remove, whatever is in them.
SYSTEM = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
          "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/data",
          "/usr/local", "/usr/local/Ascend", "/var/lib", "/var/lib/docker", "/var/tmp")
STATE = ".grpo"


class TeardownRefused(FieldError):
    """A removal the teardown refuses, before anything changes: ``field`` is the input at fault."""


def home_folders(entries=None, environ=None):
    """Every user's home folder (the password database's), and this process's own ``$HOME``."""
    entries = pwd.getpwall() if entries is None else entries
    environ = os.environ if environ is None else environ
    homes = {os.path.normpath(e.pw_dir) for e in entries if e.pw_dir and e.pw_dir.startswith("/")}
    if str(environ.get("HOME") or "").startswith("/"):
        homes.add(os.path.normpath(environ["HOME"]))
    return sorted(homes)


def _inside(path, folder):
    """Whether ``path`` is ``folder`` or below it (both normalised absolute paths)."""
    return path == folder or folder == "/" or path.startswith(folder.rstrip("/") + "/")


def removal_problem(path, homes, realpath=os.path.realpath):
    """Why the workspace at ``path`` must not be removed, "" when it may (its state folder aside: see
    :func:`state_problem`). ``homes``: :func:`home_folders`."""
    text = str(path or "")
    keep = "set {remove} to false (the default), which keeps the workspace"
    if not text.startswith("/") or "\x00" in text or any(part == ".." for part in text.split("/")):
        return "{workspace} (%r) is no absolute path: the teardown removes no workspace it cannot name; %s" % (
            text, keep)
    norm = os.path.normpath(text)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm in SYSTEM:
        return ("{workspace} is %s, a folder of the system, and {remove} would remove it with all it holds: "
                "point {workspace} at the workspace the package made (its own folder, e.g. /data/grpo), or %s"
                % (norm, keep))
    for home in homes:
        if _inside(home, norm):
            return ("{workspace} (%s) %s the home folder %s, and {remove} would remove it: the teardown removes "
                    "only a workspace of its own; %s" % (norm, "is" if home == norm else "holds", home, keep))
    real = realpath(norm)
    if real != norm:
        return ("{workspace} (%s) goes through a link (it is %s): the teardown removes no folder through a link, "
                "which could be another one than the workspace; point {workspace} at %s itself, or %s"
                % (norm, real, real, keep))
    return ""


def state_problem(path, lstat=os.lstat, read_json=ws.read_json):
    """Why the workspace at ``path`` is not one the package made, "" when it is: its ``.grpo`` is a real folder
    (no link) holding a stage's record, and the container stage's record, when there, names this path."""
    state = os.path.join(path, STATE)
    refuse = ("{workspace} (%s) %s, so it is not a workspace the package made and the teardown does not remove "
              "it; remove it yourself once you know what it holds, or set {remove} to false")
    try:
        mode = lstat(state).st_mode
    except OSError:
        return refuse % (path, "holds no state folder %s" % STATE)
    if not stat.S_ISDIR(mode):
        return refuse % (path, "has a %s that is %s" % (STATE, "a link" if stat.S_ISLNK(mode) else "no folder"))
    records = []
    for stage in ws.STAGES:
        record = ws.record_path(state, stage)
        try:
            if stat.S_ISREG(lstat(record).st_mode):
                records.append(stage)
        except OSError:
            continue
    if not records:
        return refuse % (path, "has a %s with no stage's record in it" % STATE)
    if "container" in records:
        named = (read_json(ws.record_path(state, "container")) or {}).get("workspace_host")
        if named is not None and os.path.normpath(str(named)) != path:
            return refuse % (path, "holds the container stage's record of another workspace (%s): a copy, or "
                                   "a folder the package does not keep here" % named)
    return ""


def disk_usage(path):
    """Bytes ``path`` takes on disk as ``du`` counts them: each file's blocks once (hard links too), no link
    followed, a file that goes meanwhile skipped."""
    seen, total = set(), 0
    try:
        top = os.lstat(path)
    except OSError:
        return 0
    if not stat.S_ISDIR(top.st_mode):
        return top.st_blocks * 512
    seen.add((top.st_dev, top.st_ino))
    total += top.st_blocks * 512
    for folder, dirs, files in os.walk(path, followlinks=False):
        for name in dirs + files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key not in seen:
                seen.add(key)
                total += info.st_blocks * 512
    return total


def size_text(size):
    """A size for a person: ``12.3 GiB``, ``512.0 MiB``, ``4.0 KiB``, ``0 B``."""
    size = float(size or 0)
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return "%.1f %s" % (size / scale, unit)
    return "%d B" % size


def converge(p, check_mode, homes=None, remove_tree=shutil.rmtree):
    """One call of the ``workspace_teardown`` module (``p``: its arguments): the result for ``exit_json``, or
    TeardownRefused. ``state=check`` refuses a removal that must not happen and measures the workspace, changing
    nothing; ``state=absent`` removes it when ``remove`` asks for it (checked again first), else keeps it."""
    path = str(p["workspace"] or "")
    norm = os.path.normpath(path) if path.startswith("/") else path
    exists = os.path.lexists(norm) if norm.startswith("/") else False
    result = dict(changed=False, workspace=norm, exists=exists, removed=False, size_bytes=0, size="0 B")
    if not p["remove"]:
        if exists and p["state"] == "check":
            result.update(size_bytes=disk_usage(norm))
            result["size"] = size_text(result["size_bytes"])
        return result
    if not exists:
        return result  # nothing there: nothing to refuse, nothing to remove
    problem = removal_problem(norm, home_folders() if homes is None else homes) or state_problem(norm)
    if problem:
        raise TeardownRefused("workspace", problem + ". Nothing was changed.", result)
    result["size_bytes"] = disk_usage(norm)
    result["size"] = size_text(result["size_bytes"])
    if p["state"] == "check":
        return result
    if not check_mode:
        remove_tree(norm)
    result.update(changed=True, removed=True,
                  diff=dict(before="%s (%s)\n" % (norm, result["size"]), after="", before_header=norm))
    return result


def image_problem(image, users, container):
    """Why the image cannot go, "" when it may: ``users`` are the names of the containers made from it (docker's
    ``ancestor`` filter), ``container`` the one the teardown removes. Docker refuses to remove an image a container
    still uses; said here, before anything changes."""
    others = sorted(str(name).lstrip("/") for name in users or () if str(name).lstrip("/") != container)
    if not others:
        return ""
    return ("{remove_image}: the image %s is used by %s besides %s, so it cannot be removed: set {remove_image} to "
            "false, or remove %s first. Nothing was changed." % (image, ", ".join(others), container,
                                                                  "it" if len(others) == 1 else "them"))


def report(host, seen, inventory=""):
    """What the teardown did on ``host``, one line each, for a person, and the command that brings it back.

    ``seen``: ``container`` (its name, "" without one), ``container_removed``, ``tables`` (the firewall tables
    removed, each a description), ``workspace`` (the ``workspace_teardown`` module's result), ``image`` (its name,
    "" when not asked), ``image_size`` (bytes; None when there was none), ``image_removed``. The inputs the user sets
    are named as ``{remove_workspace}`` and ``{remove_image}``."""
    lines, freed = [], 0
    name = seen.get("container") or ""
    if name:
        lines.append("removed the container %s" % name if seen.get("container_removed")
                     else "no container %s (nothing to remove)" % name)
    lines += ["removed the firewall table %s" % table for table in seen.get("tables") or ()]
    space = seen.get("workspace") or {}
    if space.get("removed"):
        freed += space.get("size_bytes") or 0
        lines.append("removed the workspace %s: freed %s" % (space["workspace"], space["size"]))
    elif space.get("exists"):
        lines.append("kept the workspace %s (%s; {remove_workspace}: true removes it)"
                     % (space["workspace"], space.get("size") or "?"))
    else:
        lines.append("no workspace at %s" % space.get("workspace", "?"))
    if seen.get("image"):
        if seen.get("image_removed"):
            freed += seen.get("image_size") or 0
            lines.append("removed the image %s: freed %s" % (seen["image"], size_text(seen.get("image_size"))))
        elif seen.get("image_size") is None:
            lines.append("no image %s (nothing to remove)" % seen["image"])
    changed = seen.get("container_removed") or seen.get("tables") or space.get("removed") or seen.get("image_removed")
    head = ("%s: freed %s in all" % (host, size_text(freed)) if freed else
            "%s: torn down" % host if changed else "%s: nothing to tear down" % host)
    back = ("the whole chain again, from nothing" if space.get("removed") else
            "the chain again on the kept workspace, where a run resumes from its newest checkpoint")
    return [head] + ["  " + line for line in lines] + [
        "  to bring it back, %s: %s" % (back, rerun.command(None, inventory))]
