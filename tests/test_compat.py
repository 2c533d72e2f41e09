"""The static import check against the real transformers 4.57.6 and verl 0.5.0 wheels (cached)."""

import os
import subprocess
import sys
import zipfile

import pytest
from test_ast_patch import CACHE, FLASH, FLASH_FILES_050, flash_ops, verl_tree

from ascend_grpo import ast_patch, compat


@pytest.fixture(scope="module")
def transformers_4576():
    where = os.path.join(CACHE, "transformers-4.57.6")
    site = os.path.join(where, "site")
    if not os.path.isdir(os.path.join(site, "transformers")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d",
                        where, "transformers==4.57.6"], check=True)
        wheel = [f for f in os.listdir(where) if f.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(where, wheel)) as archive:
            archive.extractall(site)
    return site


def test_removed_npu_helpers_are_found_then_fixed(transformers_4576, tmp_path):
    root = verl_tree("0.5.0", tmp_path)
    problems = [p for p in compat.check(root, [transformers_4576], watched=("transformers",))
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
    after = compat.check(root, [transformers_4576], watched=("transformers",))
    assert [p for p in after if p["module"] == FLASH] == []


def test_names_transformers_binds_lazily_resolve(transformers_4576):
    assert compat.resolve("transformers", ["AutoConfig", "AutoModelForCausalLM", "PreTrainedModel"],
                          [transformers_4576]) == []
    assert compat.resolve("transformers", ["NoSuchThing"], [transformers_4576]) == ["NoSuchThing"]
    assert compat.resolve("transformers.no_such_module", ["x"], [transformers_4576]) == ["*module*"]
