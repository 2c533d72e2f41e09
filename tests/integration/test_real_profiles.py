"""The shipped NPU profiles, resolved against the real index for other platforms, from wheel metadata only.

What these find is upstream fact as of the pins; a change upstream or in a profile makes them fail. The test
machines reach only the Python registry (not PyTorch's CPU index the profiles add), so the site setting
ignore_profile_indexes drops those, and the findings are what pip sees without them.
"""

import os
import sys

import pytest
import yaml
from grpo_testkit import FIXTURES, ROOT

from ascend_grpo.deps import pins, pip_runner

pytestmark = pytest.mark.network

ROLE = os.path.join(ROOT, "roles", "deps_pinning", "files")
PATHS = {"files": os.path.join(ROLE, "requirements"), "verl": os.path.join(FIXTURES, "verl_634bd935")}


def load(name):
    with open(os.path.join(ROLE, "profiles", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def plan_for(profile, arch, glibc, tmp_path):
    return pip_runner.plan(profile, PATHS, read, arch, {"ignore_profile_indexes": True}, sys.executable, str(tmp_path),
                           cross={"arch": arch, "python_version": "3.11", "glibc": glibc},
                           env={"PIP_CONFIG_FILE": os.devnull})


def test_shipped_profiles_are_well_formed():
    for name in ("vllm0.13.0", "vllm0.9.1", "vllm0.13.0-cpu"):
        assert pins.validate_profile(load(name)) == [], name


def test_pins_replace_verls_own():
    profile = load("vllm0.13.0")
    request = pins.plan_request(profile, PATHS, read, "aarch64", {})
    replaced = {(o["asked"], o["pinned"]) for o in request["overrides"]}
    assert {("transformers==4.52.4", "transformers==4.57.6"), ("ray==2.46.0", "ray==2.41.0"),
            ("torchvision==0.20.1", "torchvision==0.23.0")} <= replaced
    assert "vllm==0.13.0" in request["fixed"]  # installed without vLLM's CUDA requirements


def test_vllm0130_aarch64_needs_the_cpu_index(tmp_path):
    """Without PyTorch's CPU index, torch 2.8.0 for aarch64 is PyPI's CUDA build, whose triton has no wheel."""
    with pytest.raises(pip_runner.StackError,
                       match=r"no distribution of triton==3\.4\.0 \(from torch; the index has: "):
        plan_for(load("vllm0.13.0"), "aarch64", "2.35", tmp_path)


def test_vllm0130_x86_64_torch_npu_wants_the_cpu_build(tmp_path):
    """On x86_64, torch-npu 2.8.0.post2 asks for torch==2.8.0+cpu, which only the CPU index serves."""
    plan = plan_for(load("vllm0.13.0"), "x86_64", "2.28", tmp_path)
    rows = {r["package"]: r for r in plan["rows"]}
    assert rows["torch"]["status"] == "conflict"
    assert "torch-npu 2.8.0.post2 wants torch==2.8.0+cpu" in rows["torch"]["pulled_by"]
    assert plan["blocking"] == ["torch"]
