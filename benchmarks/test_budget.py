#!/usr/bin/env python3
"""Time `make test` and `make check` phase by phase against their budgets, on a warm or a cold host.

Budgets (on this project's 2-core, 24 GiB machine): `make test` at most 30 minutes when the sim image, the download
cache and the stack's seed are on the host (warm), at most 45 minutes on a fresh machine (cold: nothing cached, the
test venv made first); `make check` at most 5 minutes. CI stops at 90 minutes.

It runs what `make test` runs, phase by phase and in the same order: the test venv (`make test-venv`), the sim
image, then `make beside` in the background (lint, the unit tests on one process, then the integration tests; it holds
the engine lock the restart drill waits for) beside molecule's scenarios step by step (molecule's own test sequence:
destroy, syntax, create, converge, idempotence, verify, destroy): default, and once its converge is done, multinode
then offline (no idempotence step) in the background beside default's idempotence and verify (niced, holding the
engine lock too), as `make molecule` runs them. It prints each phase's time and how many of the machine's cores were busy during it, the background parts' own
times, the total (wall time) against the budget, and the cores' busy time over the whole run: the work, which no
arrangement of the phases can fit in less than busy / cores. A failing phase stops the run (its output's tail is
printed) and the exit status is 1; over budget, 2.

Before the phases it times this machine itself on a fixed task (one core compiling Python source, as pip and
imports do; 256 MiB written to /var/tmp and synced), so that runs on different days, or on machines of the same
kind that differ, can be told from a change in the tests: on 2026-12-06 molecule's verify steps took 30 to 40 %
longer than on 2026-12-05, with nothing in them changed.

Usage: python3 benchmarks/test_budget.py [--cold] [--check] [--json FILE] [PHASE ...]
       python3 benchmarks/test_budget.py --probe   (the machine's own figures only)
  --cold   first remove everything the tests cache on this host (the sim containers and image, the download cache
           and the stack's seed under /var/tmp/grpo-cache, the sim folders under /var/tmp/grpo-sim, pip's cache,
           the test venv and the checkout's .cache), then time a fresh machine's `make test` against 45 minutes
  --check  time `make check` (lint, unit tests) against 5 minutes instead
  --json   also write the figures to FILE (the machine's own figures included)
  --probe  print the machine's own figures only
  PHASE    run only the phases whose names start with it (e.g. "molecule multinode"), to time them again
"""

import datetime
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")
MINUTES = {"warm": 30, "cold": 45, "check": 5}
SCENARIO_STEPS = ("destroy", "syntax", "create", "converge", "idempotence", "verify", "destroy")


def sim_image():
    """The sim image's name as inventories/sim sets it (sim_host_image), read without a YAML library."""
    overlay = os.path.join(ROOT, "inventories", "sim", "group_vars", "all", "10-sim-overlay.yml")
    with open(overlay, encoding="utf-8") as handle:
        return re.search(r"^sim_host_image: *(\S+)", handle.read(), re.M).group(1).strip("'\"")


def phases(check):
    """(name, argv) in `make test`'s order. A name ending "(beside ...)" runs in the background beside the next
    phases (make beside: lint and the unit tests, then the integration tests, beside molecule); "join NAME" waits
    for it."""
    make = ["make", "--no-print-directory"]
    if check:  # make check: lint, then the unit tests
        return [("venv", make + ["test-venv"]), ("lint", make + ["lint"]), ("unit", make + ["unit"])]
    molecule = os.path.join(VENV_BIN, "molecule")
    rows = [("venv", make + ["test-venv"]), ("sim-image", make + ["sim-image"]),
            ("beside (beside molecule)", make + ["beside"])]
    rows += [("molecule default %s" % step, [molecule, step, "-s", "default"]) for step in SCENARIO_STEPS[:4]]
    # as `make molecule`: multinode once default's converge kept the seed, then offline (its test sequence has no
    # idempotence), niced, beside default's idempotence and verify, step by step here (one line per step, as make
    # beside prints its parts), each scenario's destroy run in any case
    script = ('for step in %s; do began=$(date +%%s); nice -n 10 "$0" $step -s %s; rc=$?; '
              'echo "== molecule %s: $step exit status $rc, $(( $(date +%%s) - began )) s"; '
              '[ $rc -eq 0 ] || break; done; began=$(date +%%s); "$0" destroy -s %s; '
              'echo "== molecule %s: destroy exit status $?, $(( $(date +%%s) - began )) s"; [ $rc -eq 0 ]')
    multinode = script % (" ".join(SCENARIO_STEPS[:-1]), "multinode", "multinode", "multinode", "multinode")
    offline = script % (" ".join(s for s in SCENARIO_STEPS[:-1] if s != "idempotence"), "offline", "offline",
                        "offline", "offline")
    rows.append(("molecule multinode and offline (beside default's verify)", [
        "sh", "-c", '(%s); m=$?; (%s); o=$?; exit $((m | o))' % (multinode, offline), molecule]))
    rows += [("molecule default %s" % step, [molecule, step, "-s", "default"]) for step in SCENARIO_STEPS[4:]]
    return rows + [("join molecule multinode and offline", None), ("join beside", None)]


def forget_everything():
    """What a fresh machine lacks: the sim's containers, image, folders and caches, pip's cache, the test venv, and
    what a fresh clone lacks: .cache (the unit tests' downloads, the reward reference's kept answers)."""
    names = subprocess.run(["docker", "ps", "-aq", "--filter", "name=qwen-grpo"], capture_output=True, text=True,
                           check=False).stdout.split()
    if names:
        subprocess.run(["docker", "rm", "-f"] + names, capture_output=True, check=False)
    subprocess.run(["docker", "image", "rm", "-f", sim_image()], capture_output=True, check=False)
    for network in ("grpo-sim-net", "grpo-sim-mol-net"):
        subprocess.run(["docker", "network", "rm", network], capture_output=True, check=False)
    for path in ("/var/tmp/grpo-sim", "/var/tmp/grpo-cache", os.path.expanduser("~/.cache/pip"),
                 os.path.join(ROOT, ".venv"), os.path.join(ROOT, ".cache")):
        shutil.rmtree(path, ignore_errors=True)


def machine_probe():
    """This machine on a fixed task: seconds for one core to compile a fixed 0.4 MB of Python source twice, and
    MB/s to write 256 MiB to /var/tmp and sync it."""
    source = "\n".join("def f%d(a, b=%d):\n    x = [a * i + b for i in range(%d)]\n    return {k: v for k, v in "
                       "enumerate(x) if k %% 3}\n" % (i, i, i % 50) for i in range(4000))
    start = time.perf_counter()
    for _ in range(2):
        compile(source, "<probe>", "exec")
    cpu = time.perf_counter() - start
    path, block = "/var/tmp/grpo-probe.bin", os.urandom(1 << 20)
    start = time.perf_counter()
    with open(path, "wb") as handle:
        for _ in range(256):
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())
    disk = 256 * 1.048576 / (time.perf_counter() - start)
    os.unlink(path)
    return {"compile_s": round(cpu, 2), "disk_write_mb_s": round(disk)}


def cpu_busy():
    """Seconds the machine's cores have been busy (all of them added, idle and I/O wait left out) since boot."""
    with open("/proc/stat", encoding="ascii") as handle:
        ticks = [int(x) for x in handle.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _note_end(proc, ended):
    proc.wait()
    ended["at"] = time.perf_counter()


def _join(job, rows):
    """Wait for a background phase; its row, and 1 when it failed (its log's end printed)."""
    name, start, proc, waiter, ended, path = job
    code = proc.wait()
    waiter.join()
    rows.append({"phase": name, "seconds": round(ended["at"] - start, 1), "beside": True})
    print("%-34s %7.0f s (exit status %d)" % (name, rows[-1]["seconds"], code), flush=True)
    with open(path, encoding="utf-8") as handle:  # its own lines: each part's time
        for line in handle:
            # "== beside: lint exit status 0, unit tests exit status 0, 599 s": one row for the parts it names;
            # "== molecule multinode: converge exit status 0, 250 s": one row for the step
            part = re.match(r"== (beside|molecule multinode): (.+?), (\d+) s$", line.strip())
            if part:
                names = " and ".join(re.findall(r"([a-z][a-z ]*?) exit status", part.group(2)))
                prefix = "" if part.group(1) == "beside" else part.group(1) + " "
                rows.append({"phase": "  " + prefix + names, "seconds": float(part.group(3)), "beside": True})
                print("%-34s %7.0f s" % (rows[-1]["phase"], rows[-1]["seconds"]), flush=True)
    if code != 0:
        with open(path, encoding="utf-8") as handle:
            print(handle.read()[-6000:], file=sys.stderr)
        return 1
    return 0


def verl_tarball():
    """GRPO_VERL_TARBALL as the Makefile sets it for `make test` (molecule is called directly here): the caller's,
    else ../shared/upstream/verl-<commit>.tar.gz when it is there."""
    if "GRPO_VERL_TARBALL" in os.environ:
        return os.environ["GRPO_VERL_TARBALL"]
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        commit = re.search(r"^VERL_COMMIT *:?= *(\S+)", handle.read(), re.M)
    path = os.path.join(os.path.dirname(ROOT), "shared", "upstream", "verl-%s.tar.gz" % (commit.group(1) if commit
                                                                                       else ""))
    return path if commit and os.path.isfile(path) else ""


def main(argv):
    unknown = [a for a in argv if a.startswith("-") and a not in ("--cold", "--check", "--json", "--probe")]
    if unknown:
        print(__doc__.split("Usage: ")[1], file=sys.stderr)
        return 0 if unknown in (["-h"], ["--help"]) else 2
    cold, check = "--cold" in argv, "--check" in argv
    json_file = argv[argv.index("--json") + 1] if "--json" in argv else None
    only = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--json")]
    kind = "check" if check else "cold" if cold else "warm"
    budget = MINUTES[kind] * 60
    probe = machine_probe()
    print("this machine: compile %.2f s, disk write %d MB/s (the fixed task, before the phases)"
          % (probe["compile_s"], probe["disk_write_mb_s"]), flush=True)
    if "--probe" in argv:
        return 0
    if cold:
        forget_everything()
    os.makedirs(os.path.join(ROOT, ".test-logs"), exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""), GRPO_VERL_TARBALL=verl_tarball())
    rows, status, beside = [], 0, {}
    began, busy_began = time.perf_counter(), cpu_busy()
    for name, command in phases(check):
        if name.startswith("join "):
            key = name[len("join "):]
            if key in beside:
                status = _join(beside.pop(key), rows) or status
            if status:
                break
            continue
        if only and not any(name.startswith(o) for o in only):
            continue
        if "(beside" in name:
            key = name.split(" (")[0]
            lock = None
            if key in ("beside", "molecule multinode and offline"):
                # as `make test`: holding the engine lock shared (molecule's restart drill waits for it)
                lock = open(os.environ.get("GRPO_ENGINE_LOCK", "/var/tmp/grpo-engine.lock"), "w", encoding="utf-8")
                fcntl.flock(lock, fcntl.LOCK_SH)
            path = os.path.join(ROOT, ".test-logs", re.sub(r"\W+", "-", key) + ".log")
            with open(path, "w", encoding="utf-8") as log:
                proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        pass_fds=(lock.fileno(),) if lock else ())
            if lock:
                lock.close()
            # its own time is when it ends, not when the phase that joins it does: a thread waits for it
            ended = {}
            waiter = threading.Thread(target=_note_end, args=(proc, ended), daemon=True)
            waiter.start()
            beside[key] = (name, time.perf_counter(), proc, waiter, ended, path)
            continue
        start, busy = time.perf_counter(), cpu_busy()
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        # every phase's output is kept, to see where its time went (e.g. with ansible.posix.profile_tasks enabled)
        with open(os.path.join(ROOT, ".test-logs", re.sub(r"\W+", "-", name) + ".log"), "w",
                  encoding="utf-8") as log:
            log.write(proc.stdout + proc.stderr)
        # the cores' busy time during the phase (what runs beside it included): how much of the machine it left idle
        rows.append({"phase": name, "seconds": round(elapsed, 1),
                     "cores_busy": round((cpu_busy() - busy) / (elapsed or 1), 2)})
        print("%-34s %7.0f s  %4.2f cores busy" % (name, elapsed, rows[-1]["cores_busy"]), flush=True)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-6000:], file=sys.stderr)
            status = 1
            break
    for job in beside.values():  # a run stopped early: still wait for what runs beside
        status = _join(job, rows) or status
    total = time.perf_counter() - began
    busy = cpu_busy() - busy_began
    print()
    print("%s, %s (%s host)" % ("make check" if check else "make test", datetime.date.today().isoformat(),
                                kind if not check else "any"))
    print("%-34s %7s %6s %18s %12s" % ("phase", "seconds", "share", "budget's share", "cores busy"))
    for row in rows:
        print("%-34s %7.0f %5.0f%% %17.0f%% %12s%s" % (row["phase"], row["seconds"],
                                                      100 * row["seconds"] / (total or 1),
                                                      100 * row["seconds"] / budget,
                                                      "%.2f" % row["cores_busy"] if "cores_busy" in row else "",
                                                      "  (beside: not added)" if row.get("beside") else ""))
    print("%-34s %7.0f  = %.1f min, budget %d min%s" % ("total (wall time)", total, total / 60, MINUTES[kind],
                                                       "" if total <= budget else "  OVER BUDGET"))
    # the work itself: on this machine's cores the wall time cannot go below busy / cores, however it is arranged
    print("%-34s %7.0f core-seconds = %.2f of %d cores on average (at best %.1f min on them all)"
          % ("busy", busy, busy / (total or 1), os.cpu_count(), busy / os.cpu_count() / 60))
    if json_file:
        with open(json_file, "w", encoding="utf-8") as handle:
            json.dump({"date": datetime.date.today().isoformat(), "kind": kind, "budget_s": budget, "machine": probe,
                       "total_s": round(total, 1), "busy_core_s": round(busy), "phases": rows,
                       "passed": status == 0}, handle, indent=1)
    if status == 0 and total > budget and not only:
        status = 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
