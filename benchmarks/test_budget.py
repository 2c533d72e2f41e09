#!/usr/bin/env python3
"""Time the test command (`make test`) step by step against its budget: 25 minutes on a machine that ran it before,
45 on a fresh one (CI stops at 90).

Runs what `make test` runs, one step at a time: ansible-lint (production profile), pytest, then molecule's default
sequence (destroy, syntax, create, converge, idempotence, verify, destroy) as separate molecule commands, and
prints each step's time, the total and the budget. A failing step stops the run (its output's tail is printed).

Usage: python benchmarks/test_budget.py [--fresh] [STEP ...]
  --fresh: the machine has not run the tests before (the 45-minute budget); STEP: run only the steps whose names
  start with it (e.g. molecule), to time them again.
"""

import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
           PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
STEPS = [("lint", [os.path.join(BIN, "ansible-lint"), "--profile", "production"]),
         ("pytest", [sys.executable, "-m", "pytest", "-q"])] + [
    ("molecule " + step, [os.path.join(BIN, "molecule"), step])
    for step in ("destroy", "syntax", "create", "converge", "idempotence", "verify", "destroy")]


def main():
    fresh = "--fresh" in sys.argv[1:]
    only = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    budget = 45 * 60 if fresh else 25 * 60
    rows, total = [], 0.0
    for name, argv in [s for s in STEPS if not only or any(s[0].startswith(o) for o in only)]:
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        total += elapsed
        rows.append((name, elapsed))
        print("%-22s %7.0f s" % (name, elapsed), flush=True)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-4000:], file=sys.stderr)
            return 1
    print()
    print("%-22s %7s  %s" % ("make test, by step", "seconds", "share"))
    for name, elapsed in rows:
        print("%-22s %7.0f  %4.0f%%" % (name, elapsed, 100 * elapsed / total))
    print("%-22s %7.0f  (%.1f min; budget %d min on a %s machine)" % (
        "total", total, total / 60, budget // 60, "fresh" if fresh else "warm"))
    return 0 if total <= budget else 2


if __name__ == "__main__":
    sys.exit(main())
