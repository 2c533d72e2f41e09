#!/usr/bin/env python3
"""Time the patch stage's engines on a whole verl tree (verl@634bd935's shape: the 0.5.0 release plus the
fixtures' lines): the vllm0.13.0 profile applied, then the static import check against the real vLLM 0.13.0 and
transformers 4.57.6 trees. Target: under 1 s. Baseline: the same check parsing every file (no text prefilter).

Usage: python benchmarks/patch_and_check.py   (downloads and caches the packages like the tests do)
"""

import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "python_plugins", "module_utils")]

from ascend_grpo import ast_patch, compat  # noqa: E402
from test_ast_patch import profile_ops, tree_634bd935  # noqa: E402
from test_compat import registry_sdist, wheel_tree  # noqa: E402

import yaml  # noqa: E402


def run(prefilter, paths, settings):
    import pathlib

    compat.PREFILTER = prefilter
    for cache in (compat._TEXT_CACHE, compat._SCAN_CACHE, compat._OWN_CACHE, compat._STARS_CACHE):  # cold, as a fresh process
        cache.clear()
    root = tree_634bd935(pathlib.Path(tempfile.mkdtemp()))
    ops = profile_ops("vllm0.13.0")
    start = time.perf_counter()
    ast_patch.apply_profile(root, ops)
    patched = time.perf_counter()
    found = compat.check(root, paths, settings["entries"], ("vllm", "vllm_ascend", "transformers", "torch_npu"),
                         settings["optional"])
    done = time.perf_counter()
    assert not [p for p in found if p["default_path"] and not p["optional"]]
    return patched - start, done - patched, done - start


def main():
    paths = [registry_sdist("vllm", "0.13.0"), wheel_tree("transformers", "4.57.6")]
    with open(os.path.join(ROOT, "roles", "verl_compat_patch", "files", "profiles", "vllm0.13.0.yml"),
              encoding="utf-8") as handle:
        settings = yaml.safe_load(handle)["compat"]
    rows = [("every file parsed (baseline)", run(False, paths, settings)),
            ("text prefilter (this package)", run(True, paths, settings))]
    print("vllm0.13.0 profile + import check, whole verl tree, cold caches")
    print("%-32s %9s %9s %9s" % ("", "patch s", "check s", "total s"))
    for label, (patch, check, total) in rows:
        print("%-32s %9.3f %9.3f %9.3f" % (label, patch, check, total))
    print("%-32s %29.1f" % ("baseline / this (goal: total < 1 s)", rows[0][1][2] / rows[1][1][2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
