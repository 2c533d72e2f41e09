#!/usr/bin/env python3
"""Time a converged rerun on the simulated host (the chain already ran, nothing to change): the whole site and
`--tags patch`, each with the training environment reached over a pipelined docker connection (this package)
against the same run with pipelining off (the baseline: a copy of each module into the container, then an exec).

Targets (issue: a rerun takes seconds): the whole site at most 20 s, `--tags patch` at most 5 s.
The simulated host must have run the chain once (`make demo`); GRPO_VERL_TARBALL as `make demo` sets it.

Usage: python benchmarks/converged_rerun.py [--runs N]
"""

import argparse
import json
import statistics
import sys

import simrun

TARGETS = {"whole site": 20.0, "--tags patch": 5.0}


def timed(runs, *args):
    samples = []
    for _ in range(runs):
        done = simrun.run_events("site.yml", *args)
        if done.changed:  # from the run's events: each task that changed, by host and name
            sys.exit("a converged rerun changed %s: run `make demo` first" % "; ".join(
                "%s: %s" % pair for pair in done.changed))
        samples.append(done.seconds)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    off = ("-e", json.dumps({"ansible_pipelining": False}))
    rows = []
    for label, tags in (("whole site", ()), ("--tags patch", ("--tags", "patch"))):
        baseline = timed(args.runs, *tags, *off)
        this = timed(args.runs, *tags)
        rows.append((label, baseline, this))
    print("converged rerun on the sim host, median of %d runs, seconds" % args.runs)
    print("%-16s %12s %12s %8s %8s %5s" % ("", "baseline", "this", "ratio", "target", "met"))
    for label, baseline, this in rows:
        print("%-16s %12.1f %12.1f %7.2fx %7.0fs %5s" % (label, baseline, this, baseline / this, TARGETS[label],
                                                          "yes" if this <= TARGETS[label] else "NO"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
