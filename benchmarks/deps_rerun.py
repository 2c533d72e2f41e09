#!/usr/bin/env python3
"""Time the deps stage on the simulated host (profile vllm0.13.0-cpu, about 5 GB of downloads): a first install with
an empty download cache (the baseline) against a no-op rerun (goal: under 5 s), and a reinstall into a recreated
container from the download cache the first install filled (the goal: no download again).

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
    # a cache of its own in the benchmark's workspace, empty at first (the sim's shared one may be filled already)
    cache = ["-e", '{"deps_pinning_download_cache": "/data/grpo/.cache/bench-downloads"}']
    first = simrun.stage("deps", NAME, WORKSPACE, *cache)
    reruns = [simrun.stage("deps", NAME, WORKSPACE, *cache) for _ in range(3)]
    if any(r[1] for r in reruns) or "pip not run" not in reruns[-1][2]:
        print("a rerun changed something or ran pip", file=sys.stderr)
        return 1
    subprocess.run(["docker", "rm", "-f", NAME], capture_output=True, check=True)
    simrun.stage("container", NAME, WORKSPACE)
    cached = simrun.stage("deps", NAME, WORKSPACE, *cache)
    simrun.fresh(NAME, WORKSPACE)
    best = min(reruns, key=lambda r: r[0])
    simrun.print_table("deps stage (profile vllm0.13.0-cpu) on the sim host", [
        ("first install (baseline)", first[0], first[1]),
        ("reinstall, new container, from the download cache", cached[0], cached[1]),
        ("no-op rerun (best of 3; goal < 5 s)", best[0], best[1]),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
