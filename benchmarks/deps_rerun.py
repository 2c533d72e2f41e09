#!/usr/bin/env python3
"""Time the deps stage on the simulated host: first install (empty container, empty pip cache) against a no-op
rerun (goal: under 5 s), and a reinstall into a recreated container with the workspace's pip cache.

Usage: python benchmarks/deps_rerun.py
"""

import subprocess
import sys

import simrun

NAME = "qwen-grpo-bench-deps"
WORKSPACE = "/var/tmp/grpo-sim/bench-deps/data/grpo"


def main():
    simrun.build_sim()
    simrun.fresh(NAME, WORKSPACE)
    simrun.stage("container", NAME, WORKSPACE)
    first = simrun.stage("deps", NAME, WORKSPACE)
    reruns = [simrun.stage("deps", NAME, WORKSPACE) for _ in range(3)]
    if any(r[1] for r in reruns) or "pip not run" not in reruns[-1][2]:
        print("a rerun changed something or ran pip", file=sys.stderr)
        return 1
    subprocess.run(["docker", "rm", "-f", NAME], capture_output=True, check=True)
    simrun.stage("container", NAME, WORKSPACE)
    cached = simrun.stage("deps", NAME, WORKSPACE)
    simrun.fresh(NAME, WORKSPACE)
    best = min(reruns, key=lambda r: r[0])
    simrun.print_table("deps stage (profile cpu-sim) on the sim host", [
        ("first install (baseline)", first[0], first[1]),
        ("reinstall, new container, cached wheels", cached[0], cached[1]),
        ("no-op rerun (best of 3; goal < 5 s)", best[0], best[1]),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
