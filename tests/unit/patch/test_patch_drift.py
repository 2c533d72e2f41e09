"""The patch engine and the static import check on verl@634bd935's real tree (the tarball in ../shared/upstream),
copied and drifted the way upstream and the guide's own commands drift it, checked against the real vLLM 0.13.0,
transformers 4.57.6 and torch_npu 2.8.0 code from the registry.

Every expected line is read off the upstream files (their line numbers are quoted), transcribed from DOMAIN.md
or from the guide, or recorded from Python itself importing the tree (tests/fixtures/verl_634bd935_loaded_modules.txt),
never taken from what the engine writes.
"""

import ast
import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml
from grpo_testkit import FIXTURES, ROOT, run_module
from grpo_testkit.setting_names import role_setting_names
from grpo_testkit.upstream import registry_sdist, wheel_tree

from ascend_grpo.patch import ast_patch, import_check

ROLE_FILES = os.path.join(ROOT, "roles", "verl_compat_patch", "files")
SPMD = "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
LORA = "verl/utils/vllm/utils.py"
ACTOR = "verl/workers/actor/dp_actor.py"
CRITIC = "verl/workers/critic/dp_critic.py"
SFT = "verl/trainer/fsdp_sft_trainer.py"
ENGINE = "verl/workers/engine/fsdp/transformer_impl.py"
NPU_PATCH = "verl/models/transformers/npu_patch.py"
SERVER = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
HELPER = "verl/workers/engine/fsdp/npu_padding_utils.py"
HELPER_MODULE = "verl.workers.engine.fsdp.npu_padding_utils"
FLASH = "transformers.integrations.npu_flash_attention"
FLASH_NAMES = ("index_first_axis", "pad_input", "rearrange", "unpad_input")


def profile(name):
    with open(os.path.join(ROLE_FILES, "profiles", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def ops(name, label=False):
    loaded = ast_patch.resolve_content(profile(name)["operations"], ROLE_FILES)
    return [dict(op, profile=name) for op in loaded] if label else loaded


COMPAT = profile("vllm0.13.0")["compat"]


@pytest.fixture(scope="module")
def stack():
    """The real vLLM 0.13.0, transformers 4.57.6 and torch_npu 2.8.0 (the guide's pin; Python above its .so files)
    sources from the registry, cached: what the vllm0.13.0 profile's check watches, bar vllm_ascend (verl@634bd935
    never imports it)."""
    return [registry_sdist("vllm", "0.13.0"), wheel_tree("transformers", "4.57.6"), wheel_tree("torch_npu", "2.8.0")]


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read()


def write(root, rel, text):
    with open(os.path.join(root, rel), "w", encoding="utf-8") as handle:
        handle.write(text)


def drift(root, rel, old, new):
    text = read(root, rel)
    assert text.count(old) == 1, "the upstream line moved: %r" % old
    write(root, rel, text.replace(old, new))


def digest(root):
    out = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                out.update(path.encode() + handle.read() + oct(os.stat(path).st_mode).encode())
    return out.hexdigest()


def verdict(root, paths, watched=tuple(COMPAT["watched"]), enable_optional=False):
    found = import_check.check(root, paths, COMPAT["entries"], watched, tuple(COMPAT["optional"]))
    return found, import_check.blocking(found, enable_optional)


def keys(found):
    return {(u["file"], u["line"], u["module"], tuple(u["missing"]), tuple(u["unverifiable"])) for u in found}


# --- the import check reaches what Python loads -------------------------------------------------------------------

def test_relative_imports_resolve_to_the_package_python_uses(upstream_634):
    # verl/utils/vllm/__init__.py: "from .utils import TensorLoRARequest, VLLMHijack, is_version_ge" is
    # verl.utils.vllm.utils (one dot: the package itself), not verl.utils.utils
    scanned = import_check.scan(os.path.join(upstream_634, "verl/utils/vllm/__init__.py"), "verl.utils.vllm", True)
    assert [(i["module"], i["names"]) for i in scanned] == [
        ("verl.utils.vllm.utils", ["TensorLoRARequest", "VLLMHijack", "is_version_ge"])]
    # verl/__init__.py:47 (under is_npu_available): "from .models.transformers import npu_patch as npu_patch"
    top = import_check.scan(os.path.join(upstream_634, "verl/__init__.py"), "verl", True)
    assert ("verl.models.transformers", ["npu_patch"]) in [(i["module"], i["names"]) for i in top]
    # two dots from a module of verl.utils.vllm: verl.utils; more dots than packages: an ImportError in Python
    assert import_check._absolute("x", 2, "verl.utils.vllm") == "verl.utils.x"
    assert import_check._absolute(None, 1, "verl.utils") == "verl.utils"
    assert import_check._absolute("x", 2, "verl") is None


def test_the_default_path_is_what_python_loads(verl634):
    """The modules the check treats as loaded at import time are exactly those Python loaded when it imported the
    seven entries on the simulated host (recorded in the fixture), plus the four that only an accelerator loads
    (each under its guard in upstream's code), so no module-level import escapes as 'optional'."""
    ast_patch.apply_profile(verl634, ops("vllm0.13.0") + ops("cpu-overlay"))
    with open(os.path.join(FIXTURES, "verl_634bd935_loaded_modules.txt"), encoding="utf-8") as handle:
        loaded = {line.strip() for line in handle if line.strip() and not line.startswith("#")}
    assert len(loaded) == 114
    reached = import_check.reachable(import_check.module_files(verl634), COMPAT["entries"])
    assert loaded <= reached
    assert reached - loaded == {
        "verl.models.transformers.npu_patch",  # verl/__init__.py:46 `if is_npu_available:`
        "verl.utils.profiler.mstx_profile",  # verl/utils/profiler/__init__.py:23 `elif is_npu_available:`
        "verl.utils.profiler.nvtx_profile",  # verl/utils/profiler/__init__.py:21 `if is_cuda_available:`
        HELPER_MODULE,  # the patched dp_actor.py:43 `elif is_npu_available:`
    }


def test_unpatched_tree_every_fatal_import_blocks(upstream_634, stack):
    """DOMAIN.md's list of what breaks verl@634bd935 on vLLM 0.13.0 and transformers 4.57.6, all of it on the default
    path: the LoRA import (loaded through verl.utils.vllm) and transformer_impl's helper import included."""
    _found, fatal = verdict(upstream_634, stack)
    assert keys(fatal) == {
        (LORA, 18, "vllm.lora.models", (import_check.MODULE_MISSING,), ()),
        (ACTOR, 44, FLASH, FLASH_NAMES, ()),
        (CRITIC, 40, FLASH, FLASH_NAMES, ()),
        (ENGINE, 74, FLASH, FLASH_NAMES, ()),
        (SPMD, 53, "vllm.config", ("CompilationLevel",), ()),
        (SPMD, 55, "vllm.model_executor.sampling_metadata", (import_check.MODULE_MISSING,), ()),
        (SPMD, 56, "vllm.worker.worker_base", (import_check.MODULE_MISSING,), ()),
    }


def test_patched_tree_verdict_against_the_real_stack(verl634, stack):
    """After the vllm0.13.0 profile: nothing fatal on the default path; the guarded import and the name torch_npu
    creates at run time are listed as such, never passed over."""
    ast_patch.apply_profile(verl634, ops("vllm0.13.0"))
    found, fatal = verdict(verl634, stack)
    assert fatal == []
    by_file = {(u["file"], u["module"]): u for u in found}
    guarded = by_file[(SPMD, "vllm.model_executor.sampling_metadata")]
    assert (guarded["when"], guarded["missing"]) == ("guarded", [import_check.MODULE_MISSING])
    # npu_patch.py:21 "from torch_npu import npu_rotary_mul as apply_rotary_emb": torch_npu/__init__.py makes its
    # ops with globals()[name] = getattr(torch.ops.npu, name)
    rotary = by_file[(NPU_PATCH, "torch_npu")]
    assert (rotary["line"], rotary["missing"], rotary["unverifiable"], rotary["default_path"]) == (
        21, [], ["npu_rotary_mul"], True)
    assert "unverifiable: created at run time: npu_rotary_mul" in import_check.describe(rotary)
    # what torch_npu does bind in its text resolves (npu_patch.py:20 "import torch_npu", mstx_profile.py:23)
    assert not [u for u in found if u["file"] == "verl/utils/profiler/mstx_profile.py"]
    # the async server is optional: reported, fatal only when enabled
    server = by_file[(SERVER, "vllm.utils")]
    assert (server["line"], server["missing"], server["optional"]) == (37, ["FlexibleArgumentParser"], True)
    assert import_check.blocking(found, enable_optional=True) == [server]


def test_a_broken_import_in_a_module_loaded_at_import_time_blocks(verl634, stack):
    ast_patch.apply_profile(verl634, ops("vllm0.13.0"))
    drift(verl634, LORA, "from vllm.lora.lora_model import LoRAModel\n",
          "from vllm.lora.lora_model import LoRAModel\nfrom vllm.lora.models import LoRAModelManager\n")
    _found, fatal = verdict(verl634, stack)
    assert keys(fatal) == {(LORA, 19, "vllm.lora.models", (import_check.MODULE_MISSING,), ())}


# --- the patch engine: no silent wrong result -----------------------------------------------------------------------

def test_a_moved_import_asking_for_more_than_the_helper_defines_is_refused(verl634, stack):
    """A newer upstream asks the removed transformers module for one more name: moving that import to the helper
    would fail at import time, so the patch refuses it (and writes nothing), and the check catches the same import
    moved by hand (the guide's sed)."""
    drift(verl634, ACTOR, "%s import index_first_axis, pad_input, rearrange, unpad_input\n" % FLASH,
          "%s import index_first_axis, pad_input, rearrange, unpad_input, npu_flash_attn_varlen_func\n" % FLASH)
    before = digest(verl634)
    with pytest.raises(ast_patch.PatchError) as caught:
        ast_patch.apply_profile(verl634, ops("vllm0.13.0", label=True))
    assert caught.value.problems == [
        "vllm0.13.0: %s:44: expected %s to define npu_flash_attn_varlen_func (asked for by this import; it defines "
        "index_first_axis, pad_input, rearrange, unpad_input)" % (ACTOR, HELPER_MODULE)]
    assert digest(verl634) == before
    # by hand, as the guide's sed does it: the check names the helper's missing name
    ast_patch.apply_profile(verl634, [op for op in ops("vllm0.13.0") if op["file"] != ACTOR])
    drift(verl634, ACTOR, "from %s import" % FLASH, "from %s import" % HELPER_MODULE)
    _found, fatal = verdict(verl634, stack)
    assert keys(fatal) == {(ACTOR, 44, HELPER_MODULE, ("npu_flash_attn_varlen_func",), ())}


def test_an_aliased_enum_gets_its_members_renamed(verl634, stack):
    drift(verl634, SPMD, "from vllm.config import CompilationConfig, CompilationLevel\n",
          "from vllm.config import CompilationConfig, CompilationLevel as CL\n")
    drift(verl634, SPMD, "level=CompilationLevel.PIECEWISE", "level=CL.PIECEWISE")
    drifted = read(verl634, SPMD)
    ast_patch.apply_profile(verl634, ops("vllm0.13.0"))
    after = read(verl634, SPMD)
    assert "from vllm.config import CompilationConfig, CompilationMode as CL\n" in after
    assert "level=CL.VLLM_COMPILE" in after and "PIECEWISE" not in after
    assert len(after.splitlines()) == len(drifted.splitlines()) + 3  # only the SamplingMetadata try: adds lines
    assert not [u for u in verdict(verl634, stack)[1] if u["file"] == SPMD]


def test_the_guides_blind_rename_is_repaired_not_reported_as_applied(verl634, upstream_634):
    """The guide runs sed -i 's/CompilationLevel/CompilationMode/g' on the rollout: CompilationMode.PIECEWISE,
    which vLLM 0.13.0 does not have. The rename repairs the member; the file ends as on a clean tree."""
    text = read(verl634, SPMD)
    write(verl634, SPMD, text.replace("CompilationLevel", "CompilationMode"))
    results = {r["file"]: r for r in ast_patch.apply_profile(verl634, ops("vllm0.13.0"))}
    assert results[SPMD]["states"][0] == "original"
    assert "-                    level=CompilationMode.PIECEWISE" in results[SPMD]["diff"]
    clean = os.path.join(os.path.dirname(verl634), "clean")
    import shutil

    shutil.copytree(upstream_634, clean)
    ast_patch.apply_profile(clean, ops("vllm0.13.0"))
    assert read(verl634, SPMD) == read(clean, SPMD)
    # a member the mapping does not know is refused, never left (upstream line 182, 185 once the try: is in)
    drift(verl634, SPMD, "level=CompilationMode.VLLM_COMPILE", "level=CompilationMode.DYNAMO_ONCE")
    with pytest.raises(ast_patch.PatchError, match=r"vllm_rollout_spmd.py:185: expected a mapping for "
                                                   r"CompilationLevel.DYNAMO_ONCE"):
        ast_patch.apply_profile(verl634, ops("vllm0.13.0"))


def test_files_python_cannot_load_are_reported_never_a_crash(verl634, stack, tmp_path):
    drift(verl634, ACTOR, "from verl import DataProto\n", "from verl import DataProto\ndef broken(:\n    pass\n")
    with open(os.path.join(verl634, CRITIC), "rb") as handle:
        data = handle.read()
    with open(os.path.join(verl634, CRITIC), "wb") as handle:
        handle.write(data.replace(b"# Copyright", b"# Copyright \xff", 1))
    before = digest(verl634)
    with pytest.raises(ast_patch.PatchError) as caught:
        ast_patch.apply_profile(verl634, ops("vllm0.13.0", label=True))
    problems = caught.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("vllm0.13.0: %s:" % ACTOR) and "does not parse as Python" in problems[0]
    assert problems[1] == ("vllm0.13.0: %s:1: byte 0xff is not UTF-8, so Python cannot load this file; not "
                           "patched" % CRITIC)
    assert digest(verl634) == before
    # the command line: exit status 2 (nothing changed, problems printed), no traceback
    profile_json = tmp_path / "ops.json"
    profile_json.write_text(json.dumps(ops("vllm0.13.0")))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_plugins", "module_utils"))
    cli = subprocess.run([sys.executable, "-m", "ascend_grpo.patch.ast_patch", "--root", verl634, "--profile",
                          str(profile_json)], capture_output=True, text=True, env=env, check=False)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert "byte 0xff is not UTF-8" in cli.stderr and "does not parse as Python" in cli.stderr
    # the module: a failure naming both, with the list, not a MODULE FAILURE
    result = run_module("verl_patch", {"root": verl634, "operations": ops("vllm0.13.0", label=True)})
    assert result.get("failed") and "MODULE FAILURE" not in result["msg"]
    assert result["problems"] == problems
    # the check: both files are on the default path and cannot load
    _found, fatal = verdict(verl634, stack)
    parse = {(u["file"], u["missing"][0]) for u in fatal if u["missing"] == [import_check.PARSE]}
    assert parse == {(ACTOR, import_check.PARSE), (CRITIC, import_check.PARSE)}


def test_every_failing_operation_is_reported_at_once(verl634):
    """Upstream moved on in three places: all three are named in one run, nothing is written."""
    drift(verl634, LORA, "from vllm.lora.models import LoRAModel", "from vllm.lora.model_manager import LoRAModel")
    drift(verl634, SPMD, "from vllm.worker.worker_base import", "from vllm.v2.worker import")
    drift(verl634, SFT, "from %s import" % FLASH, "from flash_attn.bert_padding import")
    before = digest(verl634)
    with pytest.raises(ast_patch.PatchError) as caught:
        ast_patch.apply_profile(verl634, ops("vllm0.13.0", label=True))
    assert sorted(caught.value.problems) == sorted([
        "vllm0.13.0: %s: expected an import from %s (or, patched, from %s)" % (SFT, FLASH, HELPER_MODULE),
        "vllm0.13.0: %s: expected an import from vllm.worker.worker_base (or, patched, from "
        "vllm.v1.worker.worker_base)" % SPMD,
        "vllm0.13.0: %s: expected an import from vllm.lora.models (or, patched, from vllm.lora.lora_model)" % LORA,
    ])
    assert digest(verl634) == before


def test_patched_files_keep_their_permission_bits(verl634):
    os.chmod(os.path.join(verl634, ACTOR), 0o664)
    os.chmod(os.path.join(verl634, LORA), 0o755)
    os.chmod(os.path.join(verl634, SPMD), 0o600)
    results = ast_patch.apply_profile(verl634, ops("vllm0.13.0"))
    assert {r["file"] for r in results if r["changed"]} >= {ACTOR, LORA, SPMD}
    modes = {rel: oct(os.stat(os.path.join(verl634, rel)).st_mode & 0o7777) for rel in (ACTOR, LORA, SPMD)}
    assert modes == {ACTOR: "0o664", LORA: "0o755", SPMD: "0o600"}


def test_a_multi_line_import_moved_into_try_is_indented_whole(verl634, stack):
    drift(verl634, SPMD, "from vllm.model_executor.sampling_metadata import SamplingMetadata\n",
          "from vllm.model_executor.sampling_metadata import (\n    SamplingMetadata,\n)\n")
    ast_patch.apply_profile(verl634, ops("vllm0.13.0"))
    assert ("try:\n"
            "    from vllm.model_executor.sampling_metadata import (\n"
            "        SamplingMetadata,\n"
            "    )\n"
            "except ImportError:  # gone from newer releases; only annotations use it\n"
            "    SamplingMetadata = 'SamplingMetadata'\n") in read(verl634, SPMD)
    ast.parse(read(verl634, SPMD))
    assert not any(r["changed"] for r in ast_patch.apply_profile(verl634, ops("vllm0.13.0")))
    assert not [u for u in verdict(verl634, stack)[1] if u["file"] == SPMD]


def test_the_async_servers_parser_import_is_an_optional_operation(verl634, stack):
    """vllm_async_server.py:37 "from vllm.utils import FlexibleArgumentParser": vLLM 0.13.0 has it in
    vllm.utils.argparse_utils. Left alone (and reported) unless the optional paths are enabled."""
    before = read(verl634, SERVER)
    results = {r["file"]: r for r in ast_patch.apply_profile(verl634, ops("vllm0.13.0"))}
    assert results[SERVER]["states"] == [ast_patch.SKIPPED] and read(verl634, SERVER) == before
    results = {r["file"]: r for r in ast_patch.apply_profile(verl634, ops("vllm0.13.0"), enable_optional=True)}
    assert results[SERVER]["states"] == ["original"]
    assert read(verl634, SERVER) == before.replace("from vllm.utils import FlexibleArgumentParser",
                                                   "from vllm.utils.argparse_utils import FlexibleArgumentParser")
    assert verdict(verl634, stack, enable_optional=True)[1] == []


@pytest.mark.parametrize("patched", [False, True], ids=["unpatched", "patched"])
def test_the_fast_paths_never_change_a_verdict(upstream_634, verl634, stack, monkeypatch, patched):
    """The check's fast paths (text prefilters, skipped files, star imports searched likeliest first) against the
    straightforward reading that parses every file: the same blocking list and findings; the slow reading may only
    add findings in files that are neither loaded for training nor import a watched package."""
    root = verl634 if patched else upstream_634
    if patched:
        ast_patch.apply_profile(root, ops("vllm0.13.0"))
    fast, fast_fatal = verdict(root, stack)
    for cache in (import_check._TEXT_CACHE, import_check._SCAN_CACHE, import_check._OWN_CACHE,
                  import_check._STARS_CACHE):
        cache.clear()  # nothing the fast reading learnt carries over
    monkeypatch.setattr(import_check, "PREFILTER", False)
    slow, slow_fatal = verdict(root, stack)
    assert slow_fatal == fast_fatal
    assert [u for u in slow if u in fast] == fast
    assert all(not u["default_path"] and not u["optional"] for u in slow if u not in fast)


def test_a_workspace_without_verl_is_refused_with_the_fix(tmp_path):
    result = run_module("verl_patch", {"root": str(tmp_path), "operations": ops("vllm0.13.0"),
                                       "setting_names": role_setting_names("verl_compat_patch", "verl_patch")})
    assert result.get("failed")
    assert result["msg"] == ("%s holds no verl source (no verl/__init__.py): run the deps stage first (ansible-playbook "
                             "site.yml -i <your inventory> --tags deps), or point verl_compat_patch_verl_dir at "
                             "the folder that holds verl/." % tmp_path)
    assert os.listdir(tmp_path) == []
