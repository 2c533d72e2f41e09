"""The static import check against the real transformers 4.57.6 and verl 0.5.0 wheels (cached)."""

import os
import subprocess
import sys
import zipfile

import pytest
from test_ast_patch import CACHE, FLASH, FLASH_FILES_050, flash_ops, verl_tree

from ascend_grpo import ast_patch, compat
from conftest import ROOT


def wheel_tree(name, version):
    """name==version's wheel from the registry, unpacked once into the test cache; returns the folder."""
    where = os.path.join(CACHE, "%s-%s" % (name, version))
    site = os.path.join(where, "site")
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


def registry_sdist(name, version):
    """An sdist from the registry's simple index (pip cannot fetch vLLM's without building it), sha256-checked,
    unpacked once into the test cache; returns the folder holding the package."""
    import hashlib
    import re
    import tarfile
    import urllib.request

    where = os.path.join(CACHE, "%s-%s-sdist" % (name, version))
    top = os.path.join(where, "%s-%s" % (name, version))
    if not os.path.isdir(top):
        index = os.environ.get("GRPO_TEST_INDEX", "https://pypi.org/simple")
        page = urllib.request.urlopen("%s/%s/" % (index, name), timeout=60).read().decode()
        url, digest = re.search(r'href="([^"#]*/%s-%s\.tar\.gz)#sha256=([0-9a-f]+)"' % (name, version), page).groups()
        data = urllib.request.urlopen(url, timeout=300).read()
        assert hashlib.sha256(data).hexdigest() == digest
        os.makedirs(where, exist_ok=True)
        archive = os.path.join(where, "sdist.tar.gz")
        with open(archive, "wb") as handle:
            handle.write(data)
        with tarfile.open(archive) as tar:
            tar.extractall(where, filter="data")
    return top


def test_vllm0130_tree_before_and_after_the_profile(transformers_4576, tmp_path):
    """Against the real vLLM 0.13.0 and transformers 4.57.6 trees: verl@634bd935's default path breaks on the
    imports the guide patches and the one it misses; after the vllm0.13.0 profile nothing on it is unresolved."""
    import yaml
    from test_ast_patch import profile_ops, tree_634bd935

    vllm_tree = registry_sdist("vllm", "0.13.0")
    root = tree_634bd935(tmp_path)
    with open(os.path.join(ROOT, "roles", "verl_compat_patch", "files", "profiles", "vllm0.13.0.yml"),
              encoding="utf-8") as handle:
        settings = yaml.safe_load(handle)["compat"]
    paths = [vllm_tree, transformers_4576]

    def default_path():
        found = compat.check(root, paths, settings["entries"], ("vllm", "transformers"), settings["optional"])
        return sorted((p["file"], p["module"], tuple(p["missing"])) for p in found
                      if p["default_path"] and not p["optional"])

    spmd = "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
    before = default_path()
    assert (spmd, "vllm.config", ("CompilationLevel",)) in before
    assert (spmd, "vllm.model_executor.sampling_metadata", ("*module*",)) in before
    assert (spmd, "vllm.worker.worker_base", ("*module*",)) in before
    assert ("verl/workers/actor/dp_actor.py", "transformers.integrations.npu_flash_attention",
            ("index_first_axis", "pad_input", "rearrange", "unpad_input")) in before
    ast_patch.apply_profile(root, profile_ops("vllm0.13.0"))
    assert default_path() == []
    # the async server is an optional path: reported, fatal only when enabled
    found = compat.check(root, paths, settings["entries"], ("vllm", "transformers"), settings["optional"])
    server = [p for p in found if p["optional"]]
    assert ("verl/workers/rollout/vllm_rollout/vllm_async_server.py", "vllm.worker.worker_base", ["*module*"]) in [
        (p["file"], p["module"], p["missing"]) for p in server]
    assert compat.blocking(found) == []
    assert compat.blocking(found, enable_optional=True) == [p for p in server if p["when"] != "guarded"] != []


def test_vllm091_stack_needs_no_patch(tmp_path):
    """On the vllm-ascend 0.9.1 image's stack (vLLM 0.9.1, transformers 4.52.4) verl@634bd935's default path
    resolves as it is: the vllm0.9.1 patch profile rightly changes nothing."""
    import yaml
    from test_ast_patch import tree_634bd935

    paths = [registry_sdist("vllm", "0.9.1"), wheel_tree("transformers", "4.52.4")]
    with open(os.path.join(ROOT, "roles", "verl_compat_patch", "files", "profiles", "vllm0.9.1.yml"),
              encoding="utf-8") as handle:
        profile = yaml.safe_load(handle)
    assert profile["operations"] == []
    root = tree_634bd935(tmp_path)
    found = compat.check(root, paths, profile["compat"]["entries"], ("vllm", "transformers"),
                         profile["compat"]["optional"])
    assert compat.blocking(found) == []
