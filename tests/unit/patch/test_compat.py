"""The static import check against the real transformers 4.57.6 and verl 0.5.0 wheels (cached)."""

import os

import pytest

from ascend_grpo.patch import ast_patch, import_check
from grpo_testkit import ROOT
from grpo_testkit.upstream import FLASH, FLASH_FILES_050, flash_ops, registry_sdist, verl_tree, wheel_tree


@pytest.fixture(scope="module")
def transformers_4576():
    return wheel_tree("transformers", "4.57.6")


def test_removed_npu_helpers_are_found_then_fixed(transformers_4576, tmp_path):
    root = verl_tree("0.5.0", tmp_path)
    problems = [p for p in import_check.check(root, [transformers_4576], watched=("transformers",))
                if p["module"] == FLASH]
    assert sorted((p["file"], p["line"], p["when"], p["default_path"]) for p in problems) == [
        ("verl/trainer/fsdp_sft_trainer.py", 79, "on import", False),
        ("verl/workers/actor/dp_actor.py", 42, "on import", True),
        ("verl/workers/critic/dp_critic.py", 40, "on import", True),
        ("verl/workers/engine/fsdp/engine_impl.py", 70, "on import", False),
        ("verl/workers/fsdp_workers.py", 1434, "on call", False),
    ]
    assert all(p["missing"] == ["index_first_axis", "pad_input", "rearrange", "unpad_input"] for p in problems)
    ast_patch.apply_profile(root, flash_ops(FLASH_FILES_050))
    after = import_check.check(root, [transformers_4576], watched=("transformers",))
    assert [p for p in after if p["module"] == FLASH] == []


def test_names_transformers_binds_lazily_resolve(transformers_4576):
    assert import_check.resolve("transformers", ["AutoConfig", "AutoModelForCausalLM", "PreTrainedModel"],
                                [transformers_4576]) == ([], [])
    assert import_check.resolve("transformers", ["NoSuchThing"], [transformers_4576]) == (["NoSuchThing"], [])
    assert import_check.resolve("transformers.no_such_module", ["x"], [transformers_4576]) == (["*module*"], [])


def test_vllm091_stack_needs_no_patch(upstream_634):
    """On the vllm-ascend 0.9.1 image's stack (vLLM 0.9.1, transformers 4.52.4) verl@634bd935's default path
    resolves as it is: the vllm0.9.1 patch profile rightly changes nothing."""
    import yaml
    paths = [registry_sdist("vllm", "0.9.1"), wheel_tree("transformers", "4.52.4")]
    with open(os.path.join(ROOT, "roles", "verl_compat_patch", "files", "profiles", "vllm0.9.1.yml"),
              encoding="utf-8") as handle:
        profile = yaml.safe_load(handle)
    assert profile["operations"] == []
    found = import_check.check(upstream_634, paths, profile["compat"]["entries"], ("vllm", "transformers"),
                               profile["compat"]["optional"])
    assert import_check.blocking(found) == []
