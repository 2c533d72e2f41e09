"""The AST patch engine on real upstream code: verl 0.5.0 and 0.6.0 wheels from the registry (cached)."""

import json
import os
import subprocess
import sys

import pytest
from grpo_testkit import ROOT
from grpo_testkit.upstream import FLASH, FLASH_FILES_050, NPU_HELPERS, flash_ops, verl_tree

from ascend_grpo.patch import ast_patch

ROLE_FILES = os.path.join(ROOT, "roles", "verl_compat_patch", "files")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def v050(tmp_path):
    return verl_tree("0.5.0", tmp_path)


def test_import_rewrite_keeps_every_other_byte(v050):
    before = {f: read(v050, f) for f in FLASH_FILES_050}
    results = ast_patch.apply_profile(v050, flash_ops(FLASH_FILES_050))
    assert [r["states"] for r in results] == [["original"]] * 5
    for rel in FLASH_FILES_050:
        after = read(v050, rel)
        assert after == before[rel].replace("from %s import" % FLASH, "from %s import" % NPU_HELPERS)
        assert FLASH not in after
    multi = read(v050, "verl/workers/fsdp_workers.py")
    assert ("            from %s import (\n                index_first_axis,\n                pad_input,\n"
            % NPU_HELPERS) in multi


def test_second_run_and_check_mode_change_nothing(v050):
    ops = flash_ops(FLASH_FILES_050)
    checked = ast_patch.apply_profile(v050, ops, check=True)
    assert all(r["changed"] and r["diff"].startswith("--- a/") for r in checked)
    assert FLASH in read(v050, FLASH_FILES_050[0])  # check mode wrote nothing
    ast_patch.apply_profile(v050, ops)
    again = ast_patch.apply_profile(v050, ops)
    assert [(r["changed"], r["states"], r["diff"]) for r in again] == [(False, ["applied"], "")] * 5


def test_unknown_shape_fails_and_touches_nothing(v050):
    rel = "verl/workers/critic/dp_critic.py"
    path = os.path.join(v050, rel)
    text = read(v050, rel).replace("from %s import" % FLASH, "from somewhere.different import")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    ops = flash_ops(["verl/workers/actor/dp_actor.py", rel])
    with pytest.raises(ast_patch.PatchError, match=r"verl/workers/critic/dp_critic.py: expected an import from "):
        ast_patch.apply_profile(v050, ops)
    assert FLASH in read(v050, "verl/workers/actor/dp_actor.py")  # the good file was not written either
    assert read(v050, rel) == text


def test_cpu_changes_on_verl_050(v050):
    ops = [
        {"op": "replace_statement", "file": "verl/utils/device.py", "function": "get_nccl_backend",
         "old": 'raise RuntimeError(f"No available nccl backend found on device type {get_device_name()}.")',
         "new": 'return "gloo"'},
        {"op": "keyword_value", "file": "verl/trainer/ppo/ray_trainer.py", "call": "RayResourcePool",
         "keyword": "use_gpu", "old": "True", "new": "torch.cuda.is_available()"},
    ]
    before = read(v050, "verl/utils/device.py")
    ast_patch.apply_profile(v050, ops)
    after = read(v050, "verl/utils/device.py")
    assert after == before.replace(
        '        raise RuntimeError(f"No available nccl backend found on device type {get_device_name()}.")',
        '        return "gloo"')
    trainer = read(v050, "verl/trainer/ppo/ray_trainer.py")
    assert "process_on_nodes=process_on_nodes, use_gpu=torch.cuda.is_available(), max_colocate_count=1" in trainer
    assert [r["states"] for r in ast_patch.apply_profile(v050, ops)] == [["applied"], ["applied"]]


def test_rename_with_member_mapping(tmp_path):
    v060 = verl_tree("0.6.0", tmp_path)
    rel = "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
    before = read(v060, rel)
    assert "CompilationLevel" in before
    bad = {"op": "rename", "file": rel, "symbol": "CompilationLevel", "to": "CompilationMode", "members": {}}
    with pytest.raises(ast_patch.PatchError, match=r"expected a mapping for CompilationLevel\.PIECEWISE"):
        ast_patch.apply_profile(v060, [bad])
    good = dict(bad, members={"PIECEWISE": "VLLM_COMPILE"})
    ast_patch.apply_profile(v060, [good])
    after = read(v060, rel)
    assert "CompilationLevel" not in after
    assert "from vllm.config import CompilationConfig, CompilationMode" in after
    assert "CompilationMode.VLLM_COMPILE" in after and "PIECEWISE" not in after
    assert after == before.replace("CompilationLevel.PIECEWISE", "CompilationMode.VLLM_COMPILE").replace(
        "CompilationLevel", "CompilationMode")


def test_annotation_only_import_made_harmless(tmp_path, upstream_634):
    """On 634bd935's own import line, in the shape vllm_rollout_spmd.py uses the name, with a trailing comment that
    must survive."""
    spmd = read(upstream_634, "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py").splitlines(keepends=True)
    assert spmd[54] == "from vllm.model_executor.sampling_metadata import SamplingMetadata\n"  # line 55
    assert spmd[461] == "        sampling_metadata: SamplingMetadata,\n"  # line 462, a parameter's annotation
    text = ("import torch\n" + spmd[54].replace("SamplingMetadata\n", "SamplingMetadata  # noqa: keep this comment\n")
            + "\n\nclass Sampler:\n    def compute_logits(\n        self,\n        hidden_states: torch.Tensor,\n"
            + spmd[461] + "    ) -> torch.Tensor:\n        return hidden_states\n")
    (tmp_path / "m.py").write_text(text)
    op = {"op": "annotation_import", "file": "m.py", "module": "vllm.model_executor.sampling_metadata",
          "name": "SamplingMetadata"}
    ast_patch.apply_profile(str(tmp_path), [op])
    patched = (tmp_path / "m.py").read_text()
    assert patched == text.replace(
        "from vllm.model_executor.sampling_metadata import SamplingMetadata  # noqa: keep this comment\n",
        "try:\n    from vllm.model_executor.sampling_metadata import SamplingMetadata\n"
        "except ImportError:  # gone from newer releases; only annotations use it\n"
        "    SamplingMetadata = 'SamplingMetadata'  # noqa: keep this comment\n")
    exec(compile(patched, "m.py", "exec"), {})  # runs without vllm installed
    assert ast_patch.apply_profile(str(tmp_path), [op])[0]["states"] == ["applied"]
    used = tmp_path / "u.py"
    used.write_text("from vllm.model_executor.sampling_metadata import SamplingMetadata\nx = SamplingMetadata()\n")
    with pytest.raises(ast_patch.PatchError, match=r"u.py:2: expected SamplingMetadata used only in annotations"):
        ast_patch.apply_profile(str(tmp_path), [dict(op, file="u.py")])


def test_a_result_that_does_not_compile_is_not_written(tmp_path):
    (tmp_path / "c.py").write_text("def f():\n    return g(flag=True)\n")
    # parses, but cannot compile: nonlocal with nothing to bind
    op = {"op": "replace_statement", "file": "c.py", "function": "f", "old": "return g(flag=True)",
          "new": "nonlocal x"}
    with pytest.raises(ast_patch.PatchError, match="c.py: the patched file does not compile"):
        ast_patch.apply_profile(str(tmp_path), [op])
    assert (tmp_path / "c.py").read_text() == "def f():\n    return g(flag=True)\n"
    bad = {"op": "keyword_value", "file": "c.py", "call": "g", "keyword": "flag", "old": "True", "new": "1 +"}
    with pytest.raises(ast_patch.PatchError, match=r"operation keyword_value on c.py: 'new' does not parse"):
        ast_patch.apply_profile(str(tmp_path), [bad])


def test_create_file_three_states(tmp_path):
    op = {"op": "create_file", "file": "pkg/helpers.py", "content": "X = 1\n"}
    first = ast_patch.apply_profile(str(tmp_path), [op])
    assert first[0]["changed"] and (tmp_path / "pkg" / "helpers.py").read_text() == "X = 1\n"
    assert ast_patch.apply_profile(str(tmp_path), [op])[0] == {"file": "pkg/helpers.py", "changed": False,
                                                               "states": ["applied"], "diff": ""}
    (tmp_path / "pkg" / "helpers.py").write_text("X = 2  # edited by someone\n")
    with pytest.raises(ast_patch.PatchError, match="exists with other content"):
        ast_patch.apply_profile(str(tmp_path), [op])
    assert (tmp_path / "pkg" / "helpers.py").read_text() == "X = 2  # edited by someone\n"


def test_cli_check_diff_and_exit_codes(v050, tmp_path):
    profile = tmp_path / "ops.json"
    profile.write_text(json.dumps({"operations": flash_ops(FLASH_FILES_050[:1])}))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python_plugins", "module_utils"))
    cmd = [sys.executable, "-m", "ascend_grpo.patch.ast_patch", "--root", v050, "--profile", str(profile)]
    check = subprocess.run(cmd + ["--check", "--diff"], capture_output=True, text=True, env=env, check=False)
    assert check.returncode == 1
    assert check.stdout.startswith("would change  verl/workers/actor/dp_actor.py (original)\n--- a/verl/workers/")
    assert "+    from %s import index_first_axis" % NPU_HELPERS in check.stdout
    assert FLASH in read(v050, FLASH_FILES_050[0])
    assert subprocess.run(cmd, capture_output=True, env=env, check=False).returncode == 1
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert (again.returncode, again.stdout) == (0, "unchanged     verl/workers/actor/dp_actor.py (applied)\n")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([{"op": "import_module", "file": FLASH_FILES_050[1], "from": "nothing.here",
                                   "to": "x.y"}]))
    bad = subprocess.run(cmd[:-1] + [str(broken)], capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 2 and "expected an import from nothing.here" in bad.stderr


def profile_ops(name):
    import yaml

    with open(os.path.join(ROLE_FILES, "profiles", name + ".yml"), encoding="utf-8") as handle:
        return ast_patch.resolve_content(yaml.safe_load(handle)["operations"], ROLE_FILES)


def test_vllm0130_profile_fixes_everything_the_guide_does_and_what_it_misses(verl634):
    root = verl634
    spmd = "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py"
    server = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    before = read(root, spmd)
    server_before = read(root, server)
    results = ast_patch.apply_profile(root, profile_ops("vllm0.13.0"))
    assert len([r for r in results if r["changed"]]) == 8 and len(results) == 9
    # the async server's operation is optional: left as it is unless the optional paths are enabled
    assert [r["states"] for r in results if r["file"] == server] == [[ast_patch.SKIPPED]]
    assert read(root, server) == server_before
    after = read(root, spmd)
    assert after == before.replace(
        "from vllm.config import CompilationConfig, CompilationLevel",
        "from vllm.config import CompilationConfig, CompilationMode").replace(
        "level=CompilationLevel.PIECEWISE", "level=CompilationMode.VLLM_COMPILE").replace(
        "from vllm.model_executor.sampling_metadata import SamplingMetadata\n",
        "try:\n    from vllm.model_executor.sampling_metadata import SamplingMetadata\n"
        "except ImportError:  # gone from newer releases; only annotations use it\n"
        "    SamplingMetadata = 'SamplingMetadata'\n").replace(
        "from vllm.worker.worker_base import", "from vllm.v1.worker.worker_base import")
    assert "from vllm.lora.lora_model import LoRAModel" in read(root, "verl/utils/vllm/utils.py")
    single = ["verl/workers/engine/fsdp/transformer_impl.py", "verl/workers/actor/dp_actor.py",
              "verl/trainer/fsdp_sft_trainer.py", "verl/workers/critic/dp_critic.py"]
    for rel in single:
        assert "from %s import index_first_axis, pad_input, rearrange, unpad_input" % NPU_HELPERS in read(root, rel)
    assert "from %s import (\n                index_first_axis," % NPU_HELPERS in read(root, "verl/workers/fsdp_workers.py")
    assert read(root, "verl/workers/engine/fsdp/npu_padding_utils.py") == read(ROLE_FILES, "npu_padding_utils.py")
    assert not any(r["changed"] for r in ast_patch.apply_profile(root, profile_ops("vllm0.13.0")))
