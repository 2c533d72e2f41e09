#!/usr/bin/env python3
"""Time the patch stage's engines on verl@634bd935's real tree (GRPO_VERL_TARBALL, by default the tarball in
../shared/upstream): the vllm0.13.0 profile applied to a fresh copy, then the static import check against the real
vLLM 0.13.0, transformers 4.57.6 and torch_npu 2.8.0 sources. Each run is a fresh Python process (cold caches:
nothing parsed before); median of 5 runs per design.

Goal: this package's design at most 1 s. Baseline: the same engines with the fast paths off (every file parsed,
star imports searched in order), the straightforward reading.

Usage: python benchmarks/patch_and_check.py [RUNS]   (downloads and caches the packages like the tests do)
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "python_plugins", "module_utils")]

from grpo_testkit.upstream import registry_sdist, wheel_tree  # noqa: E402

TARBALL = os.environ.get("GRPO_VERL_TARBALL") or os.path.join(
    os.path.dirname(ROOT), "shared", "upstream", "verl-634bd9352bfd21df3abab2dcfb86deb91f04c1ba.tar.gz")

ONE_RUN = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import yaml
from ascend_grpo.patch import ast_patch, import_check
import_check.PREFILTER = sys.argv[2] == "fast"
root, paths = sys.argv[3], json.loads(sys.argv[4])
with open(sys.argv[5], encoding="utf-8") as handle:
    profile = yaml.safe_load(handle)
ops = ast_patch.resolve_content(profile["operations"], sys.argv[6])
settings = profile["compat"]
start = time.perf_counter()
results = ast_patch.apply_profile(root, ops)
patched = time.perf_counter()
found = import_check.check(root, paths, settings["entries"], tuple(settings["watched"]), tuple(settings["optional"]))
done = time.perf_counter()
print(json.dumps({"patch": patched - start, "check": done - patched, "files": sum(r["changed"] for r in results),
                  "blocking": len(import_check.blocking(found)), "findings": len(found)}))
"""


def one_run(design, pristine, paths):
    work = tempfile.mkdtemp()
    try:
        root = shutil.copytree(pristine, os.path.join(work, "verl"))
        files = os.path.join(ROOT, "roles", "verl_compat_patch", "files")
        out = subprocess.run([sys.executable, "-c", ONE_RUN, os.path.join(ROOT, "python_plugins", "module_utils"),
                              design, root, json.dumps(paths), os.path.join(files, "profiles", "vllm0.13.0.yml"),
                              files], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    finally:
        shutil.rmtree(work)


def main(argv):
    runs = int(argv[0]) if argv else 5
    if not os.path.isfile(TARBALL):
        print("no verl tarball at %s (set GRPO_VERL_TARBALL)" % TARBALL)
        return 2
    paths = [registry_sdist("vllm", "0.13.0"), wheel_tree("transformers", "4.57.6"), wheel_tree("torch_npu", "2.8.0")]
    unpacked = tempfile.mkdtemp()
    try:
        with tarfile.open(TARBALL) as archive:
            archive.extractall(unpacked, filter="tar")
        pristine = os.path.join(unpacked, "verl-634bd935")
        rows = {design: [one_run(design, pristine, paths) for _ in range(runs)] for design in ("slow", "fast")}
    finally:
        shutil.rmtree(unpacked)
    print("vllm0.13.0 profile + import check on verl@634bd935's real tree, fresh process each, median of %d" % runs)
    print("%-40s %9s %9s %9s %9s %9s" % ("", "patch s", "check s", "total s", "blocking", "findings"))
    medians = {}
    for design, label in (("slow", "every file parsed (baseline)"), ("fast", "fast paths (this package)")):
        samples = rows[design]
        patch = statistics.median(s["patch"] for s in samples)
        check = statistics.median(s["check"] for s in samples)
        total = statistics.median(s["patch"] + s["check"] for s in samples)
        medians[design] = total
        print("%-40s %9.3f %9.3f %9.3f %9d %9d" % (label, patch, check, total, samples[0]["blocking"],
                                                    samples[0]["findings"]))
    print("%-40s %29.1fx" % ("baseline / this package", medians["slow"] / medians["fast"]))
    print("goal: this package's median total at most 1 s: %s" % ("met" if medians["fast"] <= 1.0 else "NOT MET"))
    return 0 if medians["fast"] <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
