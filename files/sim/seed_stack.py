#!/usr/bin/env python3
"""SIM ONLY (playbooks/sim_seed.yml): keep the stack's venv as the seed of other simulated hosts, in one call.

The seed is the venv as the chain left it, hard-linked (``cp -al``: no second copy on disk), beside the download
cache; it is replaced whenever the distributions installed in the venv differ from the seed's, and the deps stage's
install note goes with it. One process instead of a find, a stat and a copy task each: a converged ``make demo``
reruns this. Prints one JSON line: ``changed``, ``replaced`` (the seed was made again) and ``note`` (the note was
copied). ``--check`` says what it would do and changes nothing.

A seed is removed only when it looks like a venv this made (``pyvenv.cfg`` in it): a wrong path never loses a folder.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys


def distributions(venv):
    """The names of the ``*.dist-info`` folders under ``<venv>/lib`` at most three levels down (lib/pythonX.Y/
    site-packages/<name>.dist-info), sorted; empty when there is no such folder."""
    found, top = [], os.path.join(venv, "lib")
    for here, dirs, _ in os.walk(top):
        depth = here[len(top):].count(os.sep)
        for name in dirs:
            if name.endswith(".dist-info"):
                found.append(name)
        if depth >= 2:
            dirs[:] = []
    return sorted(found)


def _same_file(one, other):
    try:
        with open(one, "rb") as a, open(other, "rb") as b:
            return a.read() == b.read()
    except FileNotFoundError:
        return False


def plan(venv, seed, note):
    """What a run would do: (replace the seed, copy the note)."""
    have = distributions(venv)
    replace = bool(have) and have != distributions(seed)
    copy_note = bool(have) and os.path.isfile(note) and (replace or not _same_file(note, seed + ".deps-installed.json"))
    return replace, copy_note


def refuse_unless_a_seed(seed):
    """A seed to remove must be an absolute path at least three folders deep holding a venv's pyvenv.cfg (or be
    missing): anything else is not this script's to delete."""
    if not os.path.isabs(seed) or len([part for part in seed.split(os.sep) if part]) < 3:
        sys.exit("seed_stack: %r is not an absolute path three folders deep; nothing was removed" % seed)
    if os.path.lexists(seed) and (os.path.islink(seed) or not os.path.isfile(os.path.join(seed, "pyvenv.cfg"))):
        sys.exit("seed_stack: %s is not a venv this made (no pyvenv.cfg in it); nothing was removed" % seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--venv", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--note", required=True, help="the deps stage's install note of the venv")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    replace, copy_note = plan(args.venv, args.seed, args.note)
    if not args.check:
        if replace:
            refuse_unless_a_seed(args.seed)
            if os.path.lexists(args.seed):
                shutil.rmtree(args.seed)
            os.makedirs(os.path.dirname(args.seed), mode=0o755, exist_ok=True)
            subprocess.run(["cp", "-al", args.venv, args.seed], check=True)
        if copy_note:
            shutil.copyfile(args.note, args.seed + ".deps-installed.json")
            os.chmod(args.seed + ".deps-installed.json", 0o644)
    print(json.dumps({"changed": replace or copy_note, "replaced": replace, "note": copy_note}))


if __name__ == "__main__":
    main()
