#!/usr/bin/env python3
"""Time a converged rerun on the simulated host (the chain already ran, nothing to change), and say where the time
goes.

- ``make demo`` again: each of its steps (read from the Makefile's ``demo`` recipe, so the two cannot drift), run
  and timed as the Makefile runs it (the median of ``--runs``); then one more rerun through ansible-runner for the
  seconds spent inside tasks by role and the slowest tasks (its event collection makes that run a few seconds
  slower, so its seconds are not the headline). Target: 30 s in all (issue: a converged ``make demo`` reruns in
  30 s or less).
- ``--pipelining``: the whole site and ``--tags patch`` with the training environment reached over a pipelined
  docker connection (this package) against the same run with pipelining off (a copy of each module into the
  container, then an exec). Targets: 20 s and 5 s.

A rerun that changes anything is refused: it is no converged rerun (run ``make demo`` first). ``--save FILE`` keeps
the breakdown as JSON; ``--compare FILE`` prints a kept one side by side with this one (before and after a change).
The simulated host must have run the chain once (``make demo``); GRPO_VERL_TARBALL as ``make demo`` sets it (the
same default when it is not set).

Usage: python benchmarks/converged_rerun.py [--runs N] [--top N] [--save FILE] [--compare FILE] [--pipelining]
"""

import argparse
import collections
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

import simrun

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_TARGET = 30.0
VERL_COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"  # the guide's, as the Makefile names it
PIPELINING_TARGETS = {"whole site": 20.0, "--tags patch": 5.0}
# the events that close a task on a host (each carries the task's duration on that host, loop items included)
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")


def demo_steps(makefile=os.path.join(ROOT, "Makefile")):
    """The ``ansible-playbook`` lines of the Makefile's ``demo`` recipe, as argument lists (playbook first, the
    ``-i`` words kept): what ``make demo`` runs, in its order."""
    with open(makefile, encoding="utf-8") as handle:
        text = handle.read()
    recipe = re.search(r"^demo:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    if not recipe:
        sys.exit("no demo recipe in %s" % makefile)
    steps = []
    for line in recipe.group(1).splitlines():
        words = shlex.split(line.strip())
        if words and words[0] == "ansible-playbook":
            steps.append(words[1:])
    return steps


def task_seconds(done):
    """``{(role, task): seconds}`` summed over hosts and loop items, from the run's result events."""
    spent = collections.defaultdict(float)
    for event in done.events:
        if event.get("event") not in RESULT_EVENTS:
            continue
        data = event.get("event_data", {})
        spent[(data.get("role") or "(play)", data.get("task") or "?")] += float(data.get("duration") or 0.0)
    return dict(spent)


def _demo_env():
    """The environment ``make demo`` gives its steps: the venv's commands first on PATH, ansible.cfg, and verl's
    tarball from ../shared/upstream when GRPO_VERL_TARBALL is not set (the Makefile's default: without it the
    container's mounts differ and the container stage would recreate it)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    if "GRPO_VERL_TARBALL" not in env:
        tarball = os.path.join(os.path.dirname(ROOT), "shared", "upstream", "verl-%s.tar.gz" % VERL_COMMIT)
        env["GRPO_VERL_TARBALL"] = tarball if os.path.isfile(tarball) else ""
    return env


def _label(argv):
    """A step's name: its playbook and tags, without the inventory and extra variables (a sim-only ``-e`` the
    Makefile adds is no other step, so a kept breakdown still lines up with this one)."""
    words, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word in ("-i", "-e"):
            skip = True
        else:
            words.append(word)
    return " ".join(words)


def timed_demo_rerun():
    """One converged ``make demo`` rerun, each step run as the Makefile runs it (``ansible-playbook`` with its own
    output, no event collection): ``[[label, seconds]]``. A step that fails or changes anything (its PLAY RECAP) is
    refused: it is no converged rerun."""
    steps, env = [], _demo_env()
    for argv in demo_steps():
        began = time.monotonic()
        done = subprocess.run(["ansible-playbook"] + argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              check=False)
        seconds = time.monotonic() - began
        if done.returncode != 0:
            sys.exit("benchmark run failed: ansible-playbook %s\n%s" % (" ".join(argv), done.stdout[-3000:]))
        changed = re.findall(r"^(\S+)\s+: ok=\d+\s+changed=([1-9]\d*)", done.stdout, re.M)
        if changed:
            sys.exit("a converged rerun of %s changed %s: run `make demo` first" % (
                " ".join(argv), ", ".join("%s: %s" % pair for pair in changed)))
        steps.append([_label(argv), seconds])
    return steps


def breakdown():
    """Where the time goes, from one more rerun through ansible-runner (its events carry each task's duration; the
    runner's own overhead makes this run slower than the timed ones): ``{"in_tasks": {label: s}, "tasks":
    {"role|task": s}}``."""
    in_tasks, tasks = {}, collections.defaultdict(float)
    for argv in demo_steps():
        done = simrun.run_argv(argv)
        if done.changed:
            sys.exit("a converged rerun of %s changed %s: run `make demo` first" % (
                " ".join(argv), "; ".join("%s: %s" % pair for pair in done.changed)))
        spent = task_seconds(done)
        in_tasks[_label(argv)] = sum(spent.values())
        for (role, task), seconds in spent.items():
            tasks["%s | %s" % (role, task)] += seconds
    return {"in_tasks": in_tasks, "tasks": dict(tasks)}


def median_of(samples, where):
    """The per-step medians of several timed reruns (the same steps in the same order each time), beside the
    breakdown ``where`` of one more."""
    steps = [[label, statistics.median(s[index][1] for s in samples), where["in_tasks"].get(label, 0.0)]
             for index, (label, _seconds) in enumerate(samples[0])]
    return {"steps": steps, "tasks": where["tasks"], "runs": len(samples)}


def by_role(tasks):
    roles = collections.defaultdict(float)
    for name, seconds in tasks.items():
        roles[name.split(" | ", 1)[0]] += seconds
    return roles


def print_breakdown(this, before=None, top=15):
    total = sum(s[1] for s in this["steps"])
    print("converged `make demo` rerun on the sim host, median of %d runs: %.1f s (target %.0f s: %s)" % (
        this["runs"], total, DEMO_TARGET, "met" if total <= DEMO_TARGET else "NOT met"))
    cols = ("before", "this") if before else ("this",)
    line = "%-44s" + " %9s" * len(cols)
    print()
    print("each step, seconds as `make demo` runs it (of which inside tasks, from one run through ansible-runner;")
    print("the rest is Ansible's start-up, inventory and templating)")
    print(line % (("step",) + cols))
    old = {label: (seconds, inside) for label, seconds, inside in (before or {}).get("steps", [])}
    for label, seconds, inside in this["steps"]:
        row = ["%5.1f (%4.1f)" % (seconds, inside)]
        if before:
            row.insert(0, "%5.1f (%4.1f)" % old[label] if label in old else "-")
        print(("%-44s" + " %13s" * len(row)) % ((label,) + tuple(row)))
    if before:
        print(("%-44s" + " %13s" * 2) % ("all", "%5.1f" % sum(s[1] for s in before["steps"]), "%5.1f" % total))
    print()
    print("inside tasks, by role (seconds, summed over hosts and loop items)")
    roles, old_roles = by_role(this["tasks"]), by_role(before["tasks"]) if before else {}
    for role in sorted(set(roles) | set(old_roles), key=lambda r: -max(roles.get(r, 0), old_roles.get(r, 0))):
        values = ([old_roles.get(role, 0.0)] if before else []) + [roles.get(role, 0.0)]
        print(line % ((role,) + tuple("%.1f" % v for v in values)))
    print()
    print("the %d slowest tasks" % top)
    for name in sorted(this["tasks"], key=lambda n: -this["tasks"][n])[:top]:
        values = ([before["tasks"].get(name, 0.0)] if before else []) + [this["tasks"][name]]
        print(line % ((name[:44],) + tuple("%.1f" % v for v in values)))


def pipelining(runs):
    def timed(*args):
        samples = []
        for _ in range(runs):
            done = simrun.run_events("site.yml", *args)
            if done.changed:
                sys.exit("a converged rerun changed %s: run `make demo` first" % "; ".join(
                    "%s: %s" % pair for pair in done.changed))
            samples.append(done.seconds)
        return statistics.median(samples)

    off = ("-e", json.dumps({"ansible_pipelining": False}))
    print("converged rerun on the sim host, pipelining off (baseline) and on, median of %d runs, seconds" % runs)
    print("%-16s %12s %12s %8s %8s %5s" % ("", "baseline", "this", "ratio", "target", "met"))
    for label, tags in (("whole site", ()), ("--tags patch", ("--tags", "patch"))):
        baseline, this = timed(*tags, *off), timed(*tags)
        print("%-16s %12.1f %12.1f %7.2fx %7.0fs %5s" % (label, baseline, this, baseline / this,
                                                          PIPELINING_TARGETS[label],
                                                          "yes" if this <= PIPELINING_TARGETS[label] else "NO"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest tasks to list")
    parser.add_argument("--save", help="keep this breakdown as JSON in FILE")
    parser.add_argument("--compare", help="a breakdown kept with --save, printed beside this one")
    parser.add_argument("--pipelining", action="store_true", help="the pipelining comparison instead")
    args = parser.parse_args()
    if args.pipelining:
        pipelining(args.runs)
        return 0
    before = None
    if args.compare:
        with open(args.compare, encoding="utf-8") as handle:
            before = json.load(handle)
    this = median_of([timed_demo_rerun() for _ in range(args.runs)], breakdown())
    if args.save:
        with open(args.save, "w", encoding="utf-8") as handle:
            json.dump(this, handle, indent=1, sort_keys=True)
    print_breakdown(this, before, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
