#!/usr/bin/env python3
"""Time the container stage on the simulated host: first converge (container created) against a no-op rerun.

Usage: python benchmarks/container_converge.py [--runs N]
Builds the sim host if needed, then for each run removes the benchmark's container and workspace, converges
(`site.yml --tags container`), converges again, and prints both times, the ratio and the reported changes.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
NAME = "qwen-grpo-bench"
WORKSPACE = "/var/tmp/grpo-sim/bench/data/grpo"
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
           PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


def converge():
    extra = json.dumps({"npu_container_name": NAME, "npu_container_workspace_host": WORKSPACE})
    start = time.perf_counter()
    out = subprocess.run([PLAYBOOK, "site.yml", "-i", "inventories/sim", "--tags", "container", "-e", extra],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, check=True).stdout
    elapsed = time.perf_counter() - start
    changed = sum(int(n) for n in re.findall(r"changed=(\d+)", out))
    return elapsed, changed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    subprocess.run([PLAYBOOK, "playbooks/sim_host.yml", "-i", "inventories/sim"], cwd=ROOT, env=ENV,
                   capture_output=True, check=True)
    first, rerun = [], []
    for _ in range(args.runs):
        subprocess.run(["docker", "rm", "-f", NAME], capture_output=True, check=False)
        shutil.rmtree(WORKSPACE, ignore_errors=True)
        seconds, changed_first = converge()
        first.append(seconds)
        seconds, changed_rerun = converge()
        rerun.append(seconds)
        if changed_rerun:
            print("rerun reported changed=%d: not idempotent" % changed_rerun, file=sys.stderr)
            return 1
    subprocess.run(["docker", "rm", "-f", NAME], capture_output=True, check=False)
    shutil.rmtree(os.path.dirname(os.path.dirname(WORKSPACE)), ignore_errors=True)
    f, r = statistics.median(first), statistics.median(rerun)
    print("container stage on the sim host, median of %d runs" % args.runs)
    print("%-34s %8s %8s" % ("", "seconds", "changed"))
    print("%-34s %8.2f %8d" % ("first converge (baseline)", f, changed_first))
    print("%-34s %8.2f %8d" % ("no-op rerun", r, changed_rerun))
    print("%-34s %8.2f" % ("first / rerun", f / r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
