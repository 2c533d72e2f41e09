"""The static import check against the real transformers 4.57.6 and verl 0.5.0 wheels (cached)."""

import os
import subprocess
import sys
import zipfile

import pytest
from test_ast_patch import CACHE, FLASH, FLASH_FILES_050, cache_filled_once, flash_ops, verl_tree

from ascend_grpo.patch import ast_patch, import_check
from grpo_testkit import ROOT


def wheel_tree(name, version):
    """name==version's wheel from the registry, unpacked once into the test cache; returns the folder."""
    where = os.path.join(CACHE, "%s-%s" % (name, version))
    site = os.path.join(where, "site")
    with cache_filled_once():
        if not os.path.isdir(os.path.join(site, name)):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d",
                            where, "%s==%s" % (name, version)], check=True)
            wheel = [f for f in os.listdir(where) if f.endswith(".whl")][0]
            with zipfile.ZipFile(os.path.join(where, wheel)) as archive:
                archive.extractall(site)
    return site


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


def registry_sdist(name, version):
    """An sdist from the registry's simple index (pip cannot fetch vLLM's without building it), sha256-checked,
    unpacked once into the test cache; returns the folder holding the package."""
    import hashlib
    import re
    import tarfile
    import urllib.request

    where = os.path.join(CACHE, "%s-%s-sdist" % (name, version))
    top = os.path.join(where, "%s-%s" % (name, version))
    with cache_filled_once():
        if not os.path.isdir(top):
            index = os.environ.get("GRPO_TEST_INDEX", "https://pypi.org/simple")
            page = urllib.request.urlopen("%s/%s/" % (index, name), timeout=60).read().decode()
            url, digest = re.search(r'href="([^"#]*/%s-%s\.tar\.gz)#sha256=([0-9a-f]+)"' % (name, version),
                                    page).groups()
            data = urllib.request.urlopen(url, timeout=300).read()
            assert hashlib.sha256(data).hexdigest() == digest
            os.makedirs(where, exist_ok=True)
            archive = os.path.join(where, "sdist.tar.gz")
            with open(archive, "wb") as handle:
                handle.write(data)
            with tarfile.open(archive) as tar:
                tar.extractall(where, filter="data")
    return top


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
