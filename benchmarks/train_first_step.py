#!/usr/bin/env python3
"""Time from `ansible-playbook site.yml --tags train` to the first logged training step on the simulated host,
split into the playbook's own overhead, the validation (verl's configuration composed with Hydra in the
container, plus the checks), and verl's start-up to its first step (Ray, workers, model, first rollout and update).

Needs the demo converged through the assets stage (`make demo`). Each run starts from no checkpoint (its own
experiment name), so verl really trains its first step; three runs, the median shown with the spread.

Usage: python benchmarks/train_first_step.py
"""

import json
import re
import statistics
import subprocess
import sys

import simrun

CONTAINER = "qwen-grpo-sim"
EXPERIMENT = "bench_first_step"
RUNS = 3
LINE = re.compile(r"^(?P<task>.+?) -+ (?P<seconds>\d+\.\d+)s$")


def once():
    subprocess.run(["docker", "exec", CONTAINER, "rm", "-rf", "/data/grpo/checkpoints/sim/" + EXPERIMENT,
                    "/data/grpo/runs/sim/" + EXPERIMENT], check=True)
    extra = json.dumps({"grpo_train_experiment": EXPERIMENT, "grpo_train_wait_for": "first_step",
                        "grpo_train_relaunch": True})
    total, _changed, out = simrun.run("site.yml", "--tags", "train", "-e", extra,
                                      env={"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"})
    tasks = {}
    for line in out.splitlines():
        match = LINE.match(line.strip())
        if match:
            tasks[match["task"].strip()] = float(match["seconds"])

    def task(words):
        found = [s for name, s in tasks.items() if words in name]
        if not found:
            sys.exit("no task %r in the profile:\n%s" % (words, "\n".join(tasks)))
        return found[0]

    validation = task("Validate the overrides")
    launch = task("Launch the run detached")
    verl = task("Wait for the first step")
    return {"total": total, "validation": validation, "verl": verl + launch,
            "playbook": total - validation - verl - launch}


def main():
    runs = [once() for _ in range(RUNS)]
    subprocess.run(["docker", "exec", CONTAINER, "rm", "-rf", "/data/grpo/checkpoints/sim/" + EXPERIMENT,
                    "/data/grpo/runs/sim/" + EXPERIMENT], check=True)
    print("ansible-playbook site.yml --tags train -> first logged step, simulated host (verl@634bd935, vLLM rollout on CPU, "
          "tiny model), %d runs" % RUNS)
    print("%-46s %8s %8s %8s %7s" % ("", "median", "min", "max", "share"))
    median_total = statistics.median(r["total"] for r in runs)
    for key, label in (("playbook", "playbook overhead (connection, facts, tasks)"),
                       ("validation", "validation (Hydra compose + checks)"),
                       ("verl", "verl start-up to its first step"), ("total", "total")):
        values = [r[key] for r in runs]
        print("%-46s %8.2f %8.2f %8.2f %6.0f%%" % (label, statistics.median(values), min(values), max(values),
                                                   100 * statistics.median(values) / median_total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
