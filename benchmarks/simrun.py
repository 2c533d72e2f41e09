"""Shared by the benchmarks: run a playbook of this package against the simulated host (through ansible-runner)
and time it."""

import json
import shutil
import subprocess
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from grpo_testkit import playrun  # noqa: E402  the harness lives with the tests, not in the package


def run(*args, env=None):
    """ansible-playbook ARGS -i inventories/sim; returns (seconds, changed count, stdout). A changed count comes
    from the run's events (per host and task), not from its text."""
    done = playrun.run(args[0], *args[1:], "-i", "inventories/sim", env=env)
    if done.returncode != 0:
        sys.exit("benchmark run failed:\n" + done.stdout[-3000:] + "\n" + "\n".join(map(str, done.failed)))
    return done.seconds, sum(h["changed"] for h in done.stats.values()), done.stdout


def run_events(*args):
    """As run(), but the whole result: events, the tasks that changed, by name."""
    done = playrun.run(args[0], *args[1:], "-i", "inventories/sim")
    if done.returncode != 0:
        sys.exit("benchmark run failed:\n" + done.stdout[-3000:] + "\n" + "\n".join(map(str, done.failed)))
    return done


def run_argv(argv):
    """``ansible-playbook ARGV`` as written (its own ``-i``), the whole result; exits when the run fails."""
    done = playrun.run(argv[0], *argv[1:])
    if done.returncode != 0:
        sys.exit("benchmark run failed: ansible-playbook %s\n" % " ".join(argv) + done.stdout[-3000:] + "\n"
                 + "\n".join(map(str, done.failed)))
    return done


def stage(tags, name, workspace, *args):
    extra = json.dumps({"npu_container_name": name, "npu_container_workspace_host": workspace})
    return run("site.yml", "--tags", tags, "-e", extra, *args)


def fresh(name, workspace):
    """No container, no workspace: the state before a first run."""
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
    shutil.rmtree(workspace, ignore_errors=True)


def build_sim():
    run("playbooks/sim_host.yml")


def print_table(title, rows):
    """rows: (label, seconds, changed); the first row is the baseline, then the ratio baseline / last."""
    print(title)
    print("%-40s %8s %8s" % ("", "seconds", "changed"))
    for label, seconds, changed in rows:
        print("%-40s %8.2f %8d" % (label, seconds, changed))
    print("%-40s %8.1f" % ("%s / %s" % ("first", "rerun"), rows[0][1] / rows[-1][1]))
