#!/usr/bin/env python3
"""Where a molecule step's time went: the JUnit files Ansible's junit callback writes for the default scenario
(molecule/default/molecule.yml: one file per ansible-playbook run, in .test-logs/junit), summed by the file each task
comes from (a verify file, a drill, a role's task file), the slowest first, beside the run's own wall time.

Usage: python3 benchmarks/task_times.py [--top N] [FILE.xml ...]
       (no FILE: the newest verify-*.xml in .test-logs/junit)
"""

import collections
import glob
import os
import sys
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def by_file(path):
    """(seconds per source file, the run's total seconds, number of tasks) of one JUnit file."""
    tree = ElementTree.parse(path)
    sums = collections.Counter()
    count = 0
    for case in tree.iter("testcase"):
        source = (case.get("classname") or "?").rsplit(":", 1)[0]
        sums[os.path.relpath(source, ROOT) if source.startswith("/") else source] += float(case.get("time") or 0)
        count += 1
    total = float(tree.getroot().get("time") or 0)
    return sums, total, count


def main(argv):
    top = 25
    if argv[:1] == ["--top"]:
        top, argv = int(argv[1]), argv[2:]
    files = argv or sorted(glob.glob(os.path.join(ROOT, ".test-logs", "junit", "verify-*.xml")),
                           key=os.path.getmtime)[-1:]
    if not files:
        print("no JUnit file: run molecule's default scenario first (make test)", file=sys.stderr)
        return 1
    for path in files:
        sums, total, count = by_file(path)
        print(f"{os.path.basename(path)}: {count} tasks, {total:.0f} s")
        for source, seconds in sums.most_common(top):
            print(f"  {seconds:8.1f} s  {100 * seconds / total if total else 0:5.1f} %  {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
