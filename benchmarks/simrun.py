"""Shared by the benchmarks: run a playbook of this package against the simulated host and time it."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
           PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


def run(*args):
    """ansible-playbook ARGS -i inventories/sim; returns (seconds, changed count, stdout)."""
    start = time.perf_counter()
    proc = subprocess.run([PLAYBOOK, *args, "-i", "inventories/sim"], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("benchmark run failed:\n" + proc.stdout[-3000:] + proc.stderr[-1000:])
    return elapsed, sum(int(n) for n in re.findall(r"changed=(\d+)", proc.stdout)), proc.stdout


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
