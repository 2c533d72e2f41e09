"""Detached jobs: a command that outlives the Ansible connection, with its state kept in a folder on the host.

A job is a folder (``<state_dir>/<name>``) holding:

- ``job.json``: the command, its folder, the log, the pid and the process's start time (so a recycled pid is never
  taken for the job), the pid namespace it ran in (a container's: once that container is removed or recreated the
  job is gone, whatever now runs under its pid or group there), when it started;
- ``exit``: the exit status, written by the job's own shell wrapper the moment the command ends;
- ``stopped``: written by :func:`stop` (a stopped job is not a crash);
- ``secret-env.json``: only when :func:`start` is asked to keep its secret environment (a run the train stage's
  resume hook may relaunch after the container restarted, :mod:`resume`): root's only (0600), removed by the job's
  wrapper when the command ends and by :func:`stop`; never in ``job.json``, a record, an argv or a log;
- the log (``log`` in ``job.json``; by default ``<name>.log`` in the folder).

The command runs in a session of its own (``setsid``), with stdin from /dev/null and stdout and stderr appended to
the log, so neither the end of the playbook nor a dropped SSH connection reaches it. Environment values passed to
:func:`start` (tokens, say) reach the process only; they are written nowhere unless the caller asks to keep them for
a relaunch (``keep_env``), and then only in ``secret-env.json``. A start holds the job folder's lock (``.lock``) from
its look at the job to its record: two starters (the train stage, the resume hook) never start two runs.

Only the standard library: this module also runs inside the training environment.
"""

import fcntl
import json
import os
import shlex
import signal
import time

from . import runner, secrets, workspace
from .errors import StageFailure

# The wrapper records the command's exit status atomically once it ends; `exec` is not used so that it can.
# Then what the command left behind in the job's process group goes with it: a driver killed from outside (the OOM
# killer's SIGKILL) leaves Ray's daemons and workers, which hold the card's memory and Ray's ports for about a minute
# before they notice on their own, so a rerun in that minute fails. SIGTERM (the wrapper ignores it), then SIGKILL
# (the wrapper included, its status already written) to whatever is still there GRACE_S seconds later. ``left``
# reads /proc with shell builtins only: a child of its own would count as something left.
GRACE_S = 10
# A command that ended needs no relaunch: its kept secret environment goes with it.
SECRET_ENV = "secret-env.json"
_WRAPPER = 'cd "$1" || exit 97; log="$2"; shift 2; "$@" >>"$log" 2>&1 < /dev/null; rc=$?; ' \
           'printf "%s\\n" "$rc" > "$GRPO_JOB_DIR/exit.tmp" && mv "$GRPO_JOB_DIR/exit.tmp" "$GRPO_JOB_DIR/exit"; ' \
           'rm -f "$GRPO_JOB_DIR/SECRET"; '.replace("SECRET", SECRET_ENV) + \
           'left() { for s in /proc/[0-9]*/stat; do [ "$s" = "/proc/$$/stat" ] && continue; ' \
           'read -r l < "$s" 2>/dev/null || continue; set -- ${l##*") "}; ' \
           '[ "$1" != Z ] && [ "$3" = "$$" ] && return 0; done; return 1; }; ' \
           'if left; then trap "" TERM; kill -TERM 0 2>/dev/null; n=0; ' \
           'while left && [ "$n" -lt TICKS ]; do sleep 0.2; n=$((n + 1)); done; ' \
           'left && kill -KILL 0; fi; exit "$rc"'.replace("TICKS", str(GRACE_S * 5))


class JobError(Exception):
    """A job that cannot be started or stopped as asked."""


_read_json = workspace.read_json


def _proc_starttime(pid):
    """The kernel's start time of ``pid`` (clock ticks since boot), or None when no such process runs."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            stat = handle.read()
    except OSError:
        return None
    # Field 2 (comm) may hold spaces and parentheses: fields after the last ')' are fixed.
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":  # a zombie has ended; its parent has not collected it yet
        return None
    return int(fields[19])


def _namespace(kind):
    """This process's namespace of ``kind`` (``pid:[4026532...]``: one per container start), or None where /proc
    lacks it."""
    try:
        return os.readlink("/proc/self/ns/%s" % kind)
    except OSError:
        return None


def _pid_namespace():
    """This process's pid namespace and when that namespace's first process started (``pid:[4026532...]@<ticks>``):
    one per start of a container. The kernel hands a namespace's number out again once the namespace is gone, so
    a container restarted by its engine may get the number its former start had; its first process's start time
    (clock ticks since the host booted) tells the two apart."""
    ns = _namespace("pid")
    if ns is None:
        return None
    first = _proc_starttime(1)
    return "%s@%s" % (ns, first) if first is not None else ns


def same_pid_namespace(recorded, current):
    """Whether a recorded pid namespace (:func:`_pid_namespace`) is this one; one recorded by an earlier version
    (no ``@``) is compared by its number alone."""
    if not recorded or not current:
        return False
    if "@" not in recorded:
        return recorded == current.split("@", 1)[0]
    return recorded == current


def _net_namespace():
    """The network namespace (a container's: the firewall table of its ports lives there and goes with it)."""
    return _namespace("net")


def _stat_fields(pid):
    """The fields of ``/proc/<pid>/stat`` after the command's name (state first, then ppid, pgrp, ...), or None."""
    try:
        with open("/proc/%s/stat" % pid, encoding="utf-8") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def _group_members(pgid):
    """Live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        fields = _stat_fields(entry) if entry.isdigit() else None
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _marked(job_dir):
    """Live processes that carry this job's mark (``GRPO_JOB_DIR``, which :func:`start` puts in the command's
    environment and every descendant inherits), whatever their process group: also one that left the job's group and
    session. Ray's raylet starts each worker in a session of its own; a worker it forked in the second the job was
    stopped outlives the group's SIGKILL, its parent gone (seen on the simulated host: a ``default_worker.py`` still
    there 15 s after)."""
    mark = b"\0GRPO_JOB_DIR=" + job_dir.encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                environ = b"\0" + handle.read() + b"\0"
        except OSError:
            continue
        fields = _stat_fields(entry)
        if mark in environ and fields and fields[0] != "Z":
            found.append(int(entry))
    return found


def _sweep(job_dir, grace=5.0):
    """SIGTERM to each process :func:`_marked` finds, SIGKILL to those still there after ``grace`` seconds; the pids
    that got a signal."""
    swept = set()
    for sig, limit in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        left = _marked(job_dir)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, sig)
                swept.add(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + limit
        while _marked(job_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
    return sorted(swept)


def _member_keys(pgid):
    """The live members of process group ``pgid``, each as (pid, start time): a recycled pid is another process."""
    return {(pid, _proc_starttime(pid)) for pid in _group_members(pgid)}


def _alive(meta):
    """Whether the job runs: its wrapper (the same process, not a recycled pid) or anything in its group.

    The wrapper leads its own process group, and Linux does not hand out a pid that is still some group's id, so a
    member of group ``pid`` belongs to this job even after the wrapper itself was killed.
    """
    pid = meta.get("pid") if meta else None
    if not pid:
        return False
    if meta.get("pidns") and not same_pid_namespace(meta["pidns"], _pid_namespace()):
        return False  # it ran in a container that is gone (removed, or recreated): its pids mean nothing here
    starttime = _proc_starttime(pid)
    # None is no start time: a wrapper that had ended before start() read it (a command that ends at once, on a
    # busy machine) recorded None, which must not match the None of a process that is gone
    return (starttime is not None and starttime == meta.get("starttime")) or bool(_group_members(pid))


def tail(path, max_lines=40, max_bytes=65536):
    """The last lines of a file (progress bars' carriage returns resolved to their last frame)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    lines = [line.rsplit("\r", 1)[-1] if line.rstrip("\r") else "" for line in data.split("\n")]
    lines = [line.rstrip("\r") for line in lines]
    if size > max_bytes and lines:
        lines = lines[1:]  # the first line was cut
    while lines and not lines[-1].strip():
        lines.pop()
    return lines[-max_lines:]


def status(state_dir, name, tail_lines=40):
    """What the job is doing: ``state`` is absent, running, finished (exit 0), failed (other exit) or stopped."""
    job_dir = os.path.join(state_dir, name)
    meta = _read_json(os.path.join(job_dir, "job.json"))
    if meta is None:
        return {"name": name, "state": "absent", "running": False, "exit_status": None, "log": None, "tail": [],
                "progress": ""}
    running = _alive(meta)
    rc = ended = None
    try:
        with open(os.path.join(job_dir, "exit"), encoding="utf-8") as handle:
            rc = int(handle.read().strip())
        ended = os.path.getmtime(os.path.join(job_dir, "exit"))
    except (OSError, ValueError):
        pass
    stopped_at = None
    try:
        with open(os.path.join(job_dir, "stopped"), encoding="utf-8") as handle:
            stopped_at = handle.read().strip()
    except OSError:
        pass
    stopped = stopped_at is not None
    if running:
        state = "running"
    elif stopped:
        state = "stopped"
    elif rc == 0:
        state = "finished"
    else:
        state = "failed"  # a non-zero exit, or killed so hard that no status was written
    # a job's output is shown to a person: no escape sequence or control character reaches a terminal
    lines = [secrets.printable(line, newlines=False) for line in tail(meta["log"], tail_lines)]
    return {"name": name, "state": state, "running": running, "exit_status": rc, "pid": meta.get("pid"),
            "started_at": meta.get("started"), "stopped_at": stopped_at, "command": meta.get("command"), "log": meta["log"], "tail": lines,
            "progress": lines[-1].strip() if lines else "",
            # how long the command ran, once it ended by itself (a job started by an older version: None)
            "elapsed_s": round(ended - meta["started_epoch"], 1) if ended and meta.get("started_epoch") else None}


def locked(job_dir, lock_name=".lock", wait=True):
    """A lock file of the job's folder (``.lock``: :func:`start`'s; never through a link), held: a descriptor to
    ``os.close`` to let go, or None when another holder has it and ``wait`` is false."""
    fd = os.open(os.path.join(job_dir, lock_name), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def kept_env(state_dir, name):
    """The secret environment :func:`start` kept for a relaunch (``keep_env``), or {} (none kept, or unreadable)."""
    data = _read_json(os.path.join(state_dir, name, SECRET_ENV))
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def forget_env(state_dir, name):
    """Remove the secret environment kept for a relaunch; whether there was one."""
    try:
        os.unlink(os.path.join(state_dir, name, SECRET_ENV))
        return True
    except FileNotFoundError:
        return False


def start(state_dir, name, argv, chdir=None, env=None, log=None, secret_env=None, keep_env=False):
    """Start ``argv`` detached unless this job already runs. Returns (changed, status).

    ``env`` and ``secret_env`` reach the process only. With ``keep_env`` the secret environment is also kept in the
    job's folder (``secret-env.json``, 0600) for a relaunch without the controller (:mod:`resume`); without it one
    kept by an earlier start is removed."""
    job_dir = os.path.join(state_dir, name)
    # the job's folder and record are never reached through a link (workspace.open_folder): checked before the job
    # starts, so a refused one leaves nothing running
    workspace.make_folders(state_dir, job_dir)
    workspace.refuse_links(job_dir, os.path.join(job_dir, "job.json"))
    lock = locked(job_dir)
    try:
        current = status(state_dir, name)
        if current["running"]:
            return False, current
        chdir = chdir or job_dir
        log = log or os.path.join(job_dir, name + ".log")
        if not os.path.isdir(chdir):
            raise JobError("the job's folder %s does not exist" % chdir)
        os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
        if os.path.islink(log):
            workspace.refuse_links(os.path.dirname(os.path.abspath(log)), log)
        for stale in ("exit", "exit.tmp", "stopped"):
            try:
                os.unlink(os.path.join(job_dir, stale))
            except FileNotFoundError:
                pass
        secret_env = {k: str(v) for k, v in (secret_env or {}).items()}
        if keep_env and secret_env:
            workspace.write_text(os.path.join(job_dir, SECRET_ENV), json.dumps(secret_env), mode=0o600, root=job_dir)
        else:
            forget_env(state_dir, name)
        child_env = dict(os.environ)
        child_env.update({k: str(v) for k, v in (env or {}).items()})
        child_env.update(secret_env)
        child_env["GRPO_JOB_DIR"] = job_dir
        with open(log, "ab") as handle:
            handle.write(("=== %s start: %s\n" % (workspace.now_iso(),
                                                 " ".join(shlex.quote(a) for a in argv))).encode())
        pid = runner.spawn_detached(["/bin/sh", "-c", _WRAPPER, "grpo-job", chdir, log] + list(argv), child_env)
        meta = {"name": name, "command": list(argv), "chdir": chdir, "log": log, "pid": pid,
                "starttime": _proc_starttime(pid), "pidns": _pid_namespace(), "netns": _net_namespace(),
                "started": workspace.now_iso(), "started_epoch": time.time()}
        workspace.write_text(os.path.join(job_dir, "job.json"), json.dumps(meta, indent=2), root=job_dir)
        return True, status(state_dir, name)
    finally:
        os.close(lock)


def wait(state_dir, name, timeout, interval=0.5):
    """Block until the job is no longer running or ``timeout`` seconds passed; returns its status."""
    deadline = time.monotonic() + timeout
    while True:
        current = status(state_dir, name)
        if not current["running"] or time.monotonic() >= deadline:
            return current
        time.sleep(interval)


def stop(state_dir, name, grace=30.0):
    """Stop a running job's whole process group: SIGTERM, then SIGKILL after ``grace`` seconds.

    Returns (changed, status); a job that does not run is left as it is.
    """
    job_dir = os.path.join(state_dir, name)
    meta = _read_json(os.path.join(job_dir, "job.json"))
    if not _alive(meta):
        return bool(meta and _sweep(job_dir)), status(state_dir, name)  # what an earlier end left, if anything
    workspace.write_text(os.path.join(job_dir, "stopped"), workspace.now_iso() + "\n", root=job_dir)
    forget_env(state_dir, name)  # a stopped run is not relaunched without the controller: nothing to keep
    pgid = meta["pid"]  # the wrapper leads its own session and process group
    # Each process of the group gets one SIGTERM, those that join it after the first too: a run stopped while Ray
    # starts has its daemons start their agents after the signal, and those would hold on until the SIGKILL. One
    # only: a second one would cut a driver's own clean shutdown (Ray's handler exits, then stops its workers).
    signalled = _member_keys(pgid)
    for sig, limit in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + limit
        while _alive(meta) and time.monotonic() < deadline:
            time.sleep(0.2)
            if sig == signal.SIGTERM:
                for pid, starttime in _member_keys(pgid) - signalled:
                    signalled.add((pid, starttime))
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        if not _alive(meta):
            break
    if _alive(meta):
        raise JobError("job %s (pid %d) survived SIGKILL" % (name, meta["pid"]))
    _sweep(job_dir)  # what left the group (a Ray worker in a session of its own) goes with the job
    left = _marked(job_dir)
    if left:
        raise JobError("job %s: processes %s outside its group survived SIGKILL" % (name, left))
    return True, status(state_dir, name)


# ``name`` of the grpo_job module that means every job of the folder (with state stopped or status)
EVERY = "*"


def names(state_dir):
    """The jobs of ``state_dir`` by name: each folder holding a ``job.json``, whatever started it (a stage of this
    package, or one of a later version). A link is no job of ours: never followed."""
    try:
        entries = sorted(os.listdir(state_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for entry in entries:
        folder = os.path.join(state_dir, entry)
        meta = os.path.join(folder, "job.json")
        if (not os.path.islink(folder) and os.path.isdir(folder) and not os.path.islink(meta)
                and os.path.isfile(meta)):
            found.append(entry)
    return found


def stop_every(state_dir, grace=30.0, exclude=(), check_mode=False, tail_lines=0):
    """Stop every running job of ``state_dir`` but those named in ``exclude``, one after another by name; a job
    whose process is gone is left as it is. Returns (changed, [each job's status with ``was_running`` and
    ``changed``]); in check mode nothing is stopped and ``changed`` says what would be."""
    changed, done = False, []
    for name in names(state_dir):
        if name in exclude:
            continue
        current = status(state_dir, name, tail_lines)
        was_running = current["running"]
        if was_running and not check_mode:
            _stopped, current = stop(state_dir, name, grace=grace)
        changed = changed or was_running
        done.append(dict(current, was_running=was_running, changed=was_running))
    return changed, done


class JobFailure(StageFailure):
    """A job that could not be started, stopped or read, for the ``grpo_job`` module: ``msg`` names the job."""


def converge(p, check_mode):
    """One call of the ``grpo_job`` module (``p``: its arguments): the result for ``exit_json``, or JobFailure.
    ``started`` and ``stopped`` change nothing when the job already is so, nor in check mode (which says whether
    they would); ``status`` first waits up to ``p["wait"]`` seconds for the job to end."""
    changed = False
    try:
        if p["name"] == EVERY:
            return _converge_every(p, check_mode)
        if p.get("exclude"):
            raise JobError("exclude only goes with name %s (every job of the folder)" % EVERY)
        if p["state"] == "started":
            current = status(p["state_dir"], p["name"], p["tail_lines"])
            if check_mode or current["running"]:
                changed = not current["running"]
            else:
                changed, current = start(p["state_dir"], p["name"], p["command"], chdir=p["chdir"],
                                         env=p["env"], secret_env=p["secret_env"], log=p["log"],
                                         keep_env=p.get("keep_secret_env", False))
        elif p["state"] == "stopped":
            current = status(p["state_dir"], p["name"], p["tail_lines"])
            if check_mode or not current["running"]:
                changed = current["running"]
            else:
                changed, current = stop(p["state_dir"], p["name"], grace=p["grace"])
        else:
            if p["wait"] > 0:
                wait(p["state_dir"], p["name"], p["wait"])
            current = status(p["state_dir"], p["name"], p["tail_lines"])
    except (JobError, OSError) as err:
        raise JobFailure("job %s: %s" % (p["name"], err))
    return dict(current, changed=changed)


def _converge_every(p, check_mode):
    """``name: "*"``: every job of the folder, stopped (``state: stopped``) or reported (``state: status``)."""
    if p["state"] == "started":
        raise JobError("name %s (every job of the folder) can be stopped or reported, not started" % EVERY)
    if p["state"] == "stopped":
        changed, found = stop_every(p["state_dir"], grace=p["grace"], exclude=p.get("exclude") or (),
                                    check_mode=check_mode, tail_lines=p["tail_lines"])
    else:
        changed, found = False, [dict(status(p["state_dir"], name, p["tail_lines"]), changed=False)
                                 for name in names(p["state_dir"]) if name not in (p.get("exclude") or ())]
    return dict(changed=changed, name=EVERY, jobs=found, said=said(found, p["state_dir"], check_mode))


def said(found, state_dir, check_mode=False):
    """One line per job of :func:`stop_every`'s answer for a person: stopped, or was not running (and how it had
    ended); a line saying there was none when the folder holds no job."""
    if not found:
        return ["no job in %s" % state_dir]
    lines = []
    for job in found:
        if job.get("changed"):
            lines.append("%s: %s (pid %s)" % (job["name"], "would be stopped" if check_mode else "stopped",
                                              job.get("pid")))
        elif job.get("was_running") is False:
            lines.append("%s: was not running (%s)" % (job["name"], job["state"]))
        else:
            lines.append("%s: %s" % (job["name"], job["state"]))
    return lines
