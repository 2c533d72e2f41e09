#!/usr/bin/env python3
"""What evaluating a checkpoint costs on the simulated host, with the eval stage's kept results against the
straightforward way (the guide's: merge, then evaluate both models, every time).

Needs the demo converged through the eval stage (`make demo`). Each timed run is `site.yml --tags eval` for the
step the demo trained last:
  baseline   the merged folder and both kept results removed: merge, base and trained evaluated;
  new step   the merged folder and the trained model's kept result removed: merge and trained evaluated, the base
             model's result reused (what evaluating another checkpoint costs);
  rerun      nothing removed: the stage finds everything current.
Three runs each, the median shown.

Usage: python benchmarks/eval_new_step.py
"""

import glob
import os
import shutil
import statistics
import subprocess

import simrun

CONTAINER = "qwen-grpo-sim"
WORKSPACE = os.path.join(os.environ.get("GRPO_SIM_ROOT", "/var/tmp/grpo-sim"), "data", "grpo")
RUNS = 3


def latest_step():
    with open(os.path.join(WORKSPACE, "checkpoints/sim/tiny_qwen2_math/latest_checkpointed_iteration.txt"),
              encoding="utf-8") as handle:
        return int(handle.read().strip())


def forget(step, models):
    if not models:
        return
    shutil.rmtree(os.path.join(WORKSPACE, "models/merged/sim/tiny_qwen2_math/global_step_%d" % step),
                  ignore_errors=True)
    for name in models:
        for path in glob.glob(os.path.join(WORKSPACE, "eval/results/%s-*.json" % name)):
            os.unlink(path)


def timed(step, models):
    forget(step, models)
    seconds, changed, _out = simrun.run("site.yml", "--tags", "eval", "-e", "grpo_eval_step=%d" % step)
    return seconds, changed


def main():
    subprocess.run(["docker", "inspect", CONTAINER], capture_output=True, check=True)
    step = latest_step()
    rows = []
    for label, models in (("baseline: merge, base and trained", ["base", "trained"]),
                          ("new step: merge and trained (base kept)", ["trained"]),
                          ("rerun: everything current", [])):
        runs = [timed(step, models) for _ in range(RUNS)]
        rows.append((label, statistics.median(r[0] for r in runs), min(r[0] for r in runs),
                     max(r[0] for r in runs), max(r[1] for r in runs)))
    print("ansible-playbook site.yml --tags eval, simulated host (OpenCompass 0.5.2 on CPU, tiny model, 8 problems, "
          "16 tokens), step %d, %d runs each" % (step, RUNS))
    print("%-42s %8s %8s %8s %8s %9s" % ("", "median", "min", "max", "changed", "vs base"))
    for label, median, low, high, changed in rows:
        print("%-42s %8.2f %8.2f %8.2f %8d %8.2fx" % (label, median, low, high, changed, rows[0][1] / median))


if __name__ == "__main__":
    main()
