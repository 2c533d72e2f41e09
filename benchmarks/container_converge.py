#!/usr/bin/env python3
"""Time the container stage on the simulated host: first converge (container created) against a no-op rerun.

Usage: python benchmarks/container_converge.py [--runs N]
"""

import argparse
import statistics
import sys

import simrun

NAME = "qwen-grpo-bench"
WORKSPACE = "/var/tmp/grpo-sim/bench/data/grpo"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    simrun.build_sim()
    first, rerun = [], []
    for _ in range(args.runs):
        simrun.fresh(NAME, WORKSPACE)
        first.append(simrun.stage("container", NAME, WORKSPACE))
        rerun.append(simrun.stage("container", NAME, WORKSPACE))
        if rerun[-1][1]:
            print("rerun reported changed=%d: not idempotent" % rerun[-1][1], file=sys.stderr)
            return 1
    simrun.fresh(NAME, WORKSPACE)
    simrun.print_table("container stage on the sim host, median of %d runs" % args.runs, [
        ("first converge (baseline)", statistics.median(r[0] for r in first), first[-1][1]),
        ("no-op rerun", statistics.median(r[0] for r in rerun), rerun[-1][1]),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
