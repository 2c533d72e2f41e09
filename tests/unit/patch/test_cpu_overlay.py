"""The cpu-overlay patch profile on the real verl@634bd935 tree (the tarball in ../shared/upstream), on top of
vllm0.13.0; the patch stage's ordered list of profiles (its preflight filter, one verl_patch call per run).

What the overlay must change is transcribed from DOMAIN.md ("The guide's own stack on CPU") and from the upstream
files' own lines, never from what the profile writes.
"""

import ast
import hashlib
import importlib.util
import os
import subprocess
import sys
import tarfile

import pytest
import yaml
from grpo_testkit import ROOT, VERL_TARBALL as TARBALL, need_verl_tarball, run_role

from ascend_grpo.patch import ast_patch

ROLE = os.path.join(ROOT, "roles", "verl_compat_patch")
ROLE_FILES = os.path.join(ROLE, "files")

DEVICE = "verl/utils/device.py"
WORKERS = "verl/workers/fsdp_workers.py"
PERFORMANCE = "verl/utils/profiler/performance.py"


import patch_filters as filters  # noqa: E402


def profile(name):
    with open(os.path.join(ROLE_FILES, "profiles", name + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def ops(name):
    return ast_patch.resolve_content(profile(name)["operations"], ROLE_FILES)


def fresh_tree(where):
    """verl@634bd935 unpacked into ``where``; returns the folder holding verl/."""
    with tarfile.open(TARBALL) as archive:
        archive.extractall(where, filter="data")
    return os.path.join(str(where), "verl-634bd935")


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as handle:
        return handle.read()


def digest(root):
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def calls(text, name):
    return [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)]


def keyword(call, arg):
    return next(k.value for k in call.keywords if k.arg == arg)


def evaluate(node, device):
    """A patched expression's value with get_device_name() answering ``device``."""
    backend = {"cpu": "gloo", "cuda": "nccl", "npu": "hccl"}[device]
    return eval(compile(ast.Expression(node), "<patched>", "eval"),  # noqa: S307  (our own test input)
                {"get_device_name": lambda: device, "get_nccl_backend": lambda: backend})


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    need_verl_tarball()
    return fresh_tree(tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    """A tree with vllm0.13.0 then cpu-overlay applied, and the overlay's first results."""
    need_verl_tarball()
    root = fresh_tree(tmp_path_factory.mktemp("patched"))
    base = ast_patch.apply_profile(root, ops("vllm0.13.0"))
    overlay = ast_patch.apply_profile(root, ops("cpu-overlay"))
    return root, base, overlay


def test_upstream_has_what_domain_describes(upstream):
    """The six places DOMAIN.md names, at upstream's own lines (so the expectations below are upstream's)."""
    workers = read(upstream, WORKERS).splitlines()
    assert [i + 1 for i, line in enumerate(workers) if 'backend=f"cpu:gloo,{get_device_name()}' in line] == [151]
    assert [i + 1 for i, line in enumerate(workers) if 'attn_implementation="flash_attention_2"' in line] == [
        315, 1219, 1619]
    assert [i + 1 for i, line in enumerate(workers) if "CPUOffloadPolicy(pin_memory=True)" in line] == [
        486, 490, 1342, 1651]
    assert len(calls(read(upstream, WORKERS), "CPUOffloadPolicy")) == 4
    device = read(upstream, DEVICE).splitlines()
    assert device[85].strip().startswith('raise RuntimeError(f"No available nccl backend')  # line 86
    assert device[61].strip() == "return getattr(torch, device_name)"  # line 62, in get_torch_device
    assert read(upstream, PERFORMANCE).splitlines()[231].strip() == (
        "timing_tensor = torch.tensor(timing, dtype=torch.float32, device=get_device_id())")


def test_overlay_applies_on_the_base_and_a_second_run_changes_nothing(patched):
    root, base, overlay = patched
    # every file of the base changes, bar the async server, whose operation is optional (not enabled here)
    assert all(r["changed"] and set(r["states"]) == {"original"} for r in base
               if r["states"] != [ast_patch.SKIPPED])
    assert [r["file"] for r in base if r["states"] == [ast_patch.SKIPPED]] == [
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py"]
    assert sorted(r["file"] for r in overlay) == sorted([DEVICE, WORKERS, PERFORMANCE])
    assert all(r["changed"] and set(r["states"]) == {"original"} for r in overlay)
    for rel in {r["file"] for r in base + overlay}:
        if rel.endswith(".py"):
            ast.parse(read(root, rel), filename=rel)
    before = digest(root)
    for name in ("vllm0.13.0", "cpu-overlay"):
        again = ast_patch.apply_profile(root, ops(name))
        assert not any(r["changed"] for r in again), name
        assert {s for r in again for s in r["states"]} - {ast_patch.SKIPPED} == {"applied"}, name
        assert sum(len(r["states"]) for r in again) == len(ops(name)), name  # one state per operation
    assert digest(root) == before


def test_fsdp_workers_keeps_each_accelerator_choice_and_takes_the_cpu_one_on_cpu(patched, upstream):
    root = patched[0]
    text = read(root, WORKERS)
    tree = ast.parse(text)
    # no unconditional flash_attention_2 left: each sits in `... if get_device_name() == "cpu" else ...`
    conditional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and "get_device_name()" in ast.unparse(node.test):
            conditional.update(id(n) for n in ast.walk(node))
    flash = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == "flash_attention_2"]
    assert len(flash) == 3 and all(id(n) in conditional for n in flash)
    attn = [keyword(c, "attn_implementation") for c in calls(text, "from_pretrained")
            if any(k.arg == "attn_implementation" for k in c.keywords)]
    assert [evaluate(v, "cpu") for v in attn] == ["sdpa"] * 3
    assert [evaluate(v, "npu") for v in attn] == [evaluate(v, "cuda") for v in attn] == ["flash_attention_2"] * 3
    # as many CPUOffloadPolicy calls as upstream has, every one pinning only with an accelerator
    offload = calls(text, "CPUOffloadPolicy")
    assert len(offload) == len(calls(read(upstream, WORKERS), "CPUOffloadPolicy")) == 4
    assert [evaluate(keyword(c, "pin_memory"), "cpu") for c in offload] == [False] * 4
    assert [evaluate(keyword(c, "pin_memory"), "npu") for c in offload] == [True] * 4
    # the actor's process group: plain gloo on CPU, upstream's mixed string on an accelerator
    backend = [keyword(c, "backend") for c in calls(text, "init_process_group")
               if any(k.arg == "backend" and isinstance(k.value, ast.IfExp) for k in c.keywords)]
    assert len(backend) == 1
    assert evaluate(backend[0], "cpu") == "gloo"
    assert evaluate(backend[0], "npu") == "cpu:gloo,npu:hccl"
    assert evaluate(backend[0], "cuda") == "cpu:gloo,cuda:nccl"
    # the base's change to this file is still there
    assert "from verl.workers.engine.fsdp.npu_padding_utils import" in text
    assert "transformers.integrations.npu_flash_attention" not in text


def test_overlay_alone_applies_but_the_stage_refuses_that_order(tmp_path):
    """Its operations do not touch what vllm0.13.0 changes, so on an unpatched tree they apply; the tree is then
    still broken for vLLM 0.13.0, which is why the stage's preflight refuses any order without the base first."""
    need_verl_tarball()
    root = fresh_tree(tmp_path)
    alone = ast_patch.apply_profile(root, ops("cpu-overlay"))
    assert sorted(r["file"] for r in alone if r["changed"]) == sorted([DEVICE, WORKERS, PERFORMANCE])
    assert "from vllm.config import CompilationConfig, CompilationLevel" in read(
        root, "verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py")
    want = ("verl_compat_patch_profiles: cpu-overlay goes on top of vllm0.13.0: set verl_compat_patch_profiles: "
            "[vllm0.13.0, cpu-overlay]")
    known = ["cpu-overlay", "vllm0.13.0", "vllm0.9.1"]
    assert filters.patch_profile_problems(["cpu-overlay"], [profile("cpu-overlay")], known) == [want]
    assert filters.patch_profile_problems(["cpu-overlay", "vllm0.13.0"], [profile("cpu-overlay"),
                                                                          profile("vllm0.13.0")], known) == [want]
    assert filters.patch_profile_problems(["vllm0.13.0", "cpu-overlay"], [profile("vllm0.13.0"),
                                                                          profile("cpu-overlay")], known) == []
    assert filters.patch_profile_problems(["vllm0.9.1", "cpu-overlay"], [profile("vllm0.9.1"),
                                                                         profile("cpu-overlay")], known) == [
        "verl_compat_patch_profiles: cpu-overlay goes on top of vllm0.13.0: set verl_compat_patch_profiles: "
        "[vllm0.9.1, vllm0.13.0, cpu-overlay]"]


def test_profile_list_problems_name_what_to_set():
    known = ["cpu-overlay", "vllm0.13.0", "vllm0.9.1"]
    mine = {"name": "mine", "base": "cpu-overlay", "operations": []}
    assert filters.patch_profile_problems(
        ["vllm0.13.0", "/etc/grpo/mine.yml", "cpu-overlay"],
        [profile("vllm0.13.0"), mine, profile("cpu-overlay")], known) == [
        "verl_compat_patch_profiles: mine goes on top of cpu-overlay: set verl_compat_patch_profiles: "
        "[vllm0.13.0, cpu-overlay, /etc/grpo/mine.yml]"]
    assert filters.patch_profile_problems(["vllm0.13.0", "vllm0.13.0"], [profile("vllm0.13.0")] * 2, known) == [
        "verl_compat_patch_profiles: vllm0.13.0 is listed twice: set verl_compat_patch_profiles: [vllm0.13.0]"]
    assert filters.patch_profile_problems(["/x/o.yml"], [{"base": "vllm0.12", "operations": []}], known) == [
        "verl_compat_patch_profiles: o goes on top of vllm0.12, which is no known profile (known: cpu-overlay, "
        "vllm0.13.0, vllm0.9.1)"]
    assert filters.patch_profile_problems(["/x/o.yml"], [["not", "a", "mapping"]], known) == [
        "verl_compat_patch_profiles: /x/o.yml is no patch profile (a mapping with a list of operations)"]


def test_one_call_for_both_profiles_is_truthful_in_check_mode(tmp_path):
    """The stage passes both profiles' operations, labelled, to one verl_patch call: in check mode the overlay
    sees the base's (unwritten) changes, nothing is written, and the states come back per profile."""
    need_verl_tarball()
    root = fresh_tree(tmp_path)
    entries = ["vllm0.13.0", "cpu-overlay"]
    labelled = ast_patch.resolve_content(
        filters.patch_profile_operations(entries, [profile(n) for n in entries]), ROLE_FILES)
    before = digest(root)
    checked = ast_patch.apply_profile(root, labelled, check=True)
    assert digest(root) == before
    diff = next(r["diff"] for r in checked if r["file"] == WORKERS)
    assert "+            from verl.workers.engine.fsdp.npu_padding_utils import (" in diff  # the base's
    assert '+            cpu_offload = CPUOffloadPolicy(pin_memory=get_device_name() != "cpu")' in diff  # the overlay's
    by_profile = {p["profile"]: p for p in ast_patch.states_by_profile(labelled, checked)}
    assert list(by_profile) == entries
    assert all(p["changed"] for p in by_profile.values())
    overlay_files = {f["file"]: f["states"] for f in by_profile["cpu-overlay"]["files"]}
    assert overlay_files == {DEVICE: ["original"] * 3, WORKERS: ["original"] * 3, PERFORMANCE: ["original"]}
    assert {f["file"]: f["states"] for f in by_profile["vllm0.13.0"]["files"]}[WORKERS] == ["original"]
    ast_patch.apply_profile(root, labelled)
    again = ast_patch.states_by_profile(labelled, ast_patch.apply_profile(root, labelled, check=True))
    assert [(p["profile"], p["changed"]) for p in again] == [("vllm0.13.0", False), ("cpu-overlay", False)]
    assert {s for p in again for f in p["files"] for s in f["states"]} == {"applied", ast_patch.SKIPPED}


HOST_CHECK = r'''
import ast, importlib.util, os, socket, sys
import torch
import torch.distributed as dist

root = sys.argv[1]
spec = importlib.util.spec_from_file_location("patched_device", os.path.join(root, "verl/utils/device.py"))
device = importlib.util.module_from_spec(spec)
spec.loader.exec_module(device)
assert device.get_device_name() == "cpu"
assert device.get_nccl_backend() == "gloo"
dev = device.get_torch_device()
dev.manual_seed(1)
a = torch.rand(3)
dev.manual_seed(1)
assert torch.equal(a, torch.rand(3))
dev.manual_seed_all(2)
state = dev.get_rng_state()
b = torch.rand(2)
dev.set_rng_state(state)
assert torch.equal(b, torch.rand(2))
free, total = dev.mem_get_info()
assert 0 < free <= total, (free, total)
assert dev.get_device_properties(0).total_memory == total
assert (dev.memory_allocated(), dev.memory_reserved(), dev.max_memory_allocated(), dev.max_memory_reserved()) == (
    0, 0, 0, 0)
assert (dev.empty_cache(), dev.ipc_collect(), dev.reset_peak_memory_stats(), dev.synchronize()) == (None,) * 4
assert dev.is_available() and dev.device_count() == 1
assert device.get_device_id() == "cpu" and torch.zeros(1).to(device.get_device_id()).device.type == "cpu"
# verl's own CPU branches (flops_counter, profiler.performance) compare with torch.cpu
assert dev == torch.cpu and torch.cpu == dev


def function(rel, name):
    text = open(os.path.join(root, rel)).read()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    space = {"torch": torch, "dist": dist, "get_device_id": device.get_device_id}
    exec(ast.get_source_segment(text, node), space)
    return space[name]


sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
sock.close()
dist.init_process_group(backend=device.get_nccl_backend(), init_method="tcp://127.0.0.1:%d" % port, rank=0,
                        world_size=1)
print(function("verl/utils/profiler/performance.py", "topk_reduce_ratio_min_max")(1.5))
if len(sys.argv) > 2:
    try:
        print(function(sys.argv[2], "topk_reduce_ratio_min_max")(1.5))
    except RuntimeError as err:
        print("upstream:", err)
'''


def test_patched_code_runs_on_the_host(patched, upstream, tmp_path):
    """The patched device helpers and the profiler's all_gather on a CPU-only torch, in a fresh interpreter."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in this Python")
    script = tmp_path / "host_check.py"
    script.write_text(HOST_CHECK)
    proc = subprocess.run([sys.executable, str(script), patched[0], os.path.join(upstream, PERFORMANCE)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "(0.0, 1.5, 1.5)"  # one rank: min = max = its timing, nobody above the 90th percentile
    # upstream's 0-d tensor, as DOMAIN.md reports it
    assert lines[1].startswith("upstream: ProcessGroupGloo::allgather: invalid tensor size"), lines


def stage(tmp_path, root, *args, **settings):
    """The verl_compat_patch role through ansible-playbook (the import check off: no vLLM in this Python)."""
    done = run_role(tmp_path, "verl_compat_patch",
                    dict({"verl_compat_patch_verl_dir": root, "verl_compat_patch_check": False}, **settings), *args)
    return done.returncode, done.stdout + done.stderr


def test_the_stage_applies_the_list_in_order_and_refuses_a_wrong_one(tmp_path):
    need_verl_tarball()
    root = fresh_tree(tmp_path / "tree")
    before = digest(root)
    rc, out = stage(tmp_path, root, verl_compat_patch_profiles=["cpu-overlay"])
    assert rc != 0 and ("verl_compat_patch_profiles: cpu-overlay goes on top of vllm0.13.0: set "
                        "verl_compat_patch_profiles: [vllm0.13.0, cpu-overlay]") in out, out[-3000:]
    rc, out = stage(tmp_path, root, verl_compat_patch_profiles=["vllm0.12"])
    assert rc != 0 and ("Unknown patch profile vllm0.12 in verl_compat_patch_profiles: use one of cpu-overlay, "
                        "vllm0.13.0, vllm0.9.1, or the path of a patch profile file of your own") in out, out[-3000:]
    rc, out = stage(tmp_path, root, verl_compat_patch_profile="cpu-sim")
    assert rc != 0 and "were replaced by verl_compat_patch_profiles" in out, out[-3000:]
    assert digest(root) == before
    both = ["vllm0.13.0", "cpu-overlay"]
    rc, out = stage(tmp_path, root, "--check", "--diff", verl_compat_patch_profiles=both)
    assert rc == 0, out[-3000:]
    assert digest(root) == before
    assert "vllm0.13.0 | verl/workers/fsdp_workers.py: original" in out
    assert "cpu-overlay | verl/workers/fsdp_workers.py: original, original, original" in out
    assert "cpu-overlay | verl/utils/device.py: original, original, original" in out
    assert '+                backend="gloo" if get_device_name() == "cpu" else' in out  # the diff
    rc, out = stage(tmp_path, root, verl_compat_patch_profiles=both)
    assert rc == 0 and "changed=1" in out, out[-3000:]
    patched_once = digest(root)
    assert patched_once != before
    rc, out = stage(tmp_path, root, verl_compat_patch_profiles=both)
    assert rc == 0 and "changed=0" in out, out[-3000:]
    assert "cpu-overlay | verl/utils/profiler/performance.py: applied" in out
    assert digest(root) == patched_once


def test_a_profile_that_does_not_fit_the_tree_names_the_tree_it_expects(tmp_path):
    """The vllm0.13.0 profile on a tree without the files it changes (as on verl 0.5.0, which has no
    workers/engine/fsdp/transformer_impl.py): refused, naming the profile, the file, and the tree it is written for."""
    need_verl_tarball()
    root = fresh_tree(tmp_path / "tree")
    os.remove(os.path.join(root, "verl", "workers", "engine", "fsdp", "transformer_impl.py"))
    entries = ["vllm0.13.0"]
    with open(os.path.join(ROLE, "files", "profiles", "vllm0.13.0.yml"), encoding="utf-8") as handle:
        loaded = [yaml.safe_load(handle)]
    operations = ast_patch.resolve_content(filters.patch_profile_operations(entries, loaded), os.path.join(ROLE, "files"))
    before = digest(root)
    with pytest.raises(ast_patch.PatchError) as caught:
        ast_patch.apply_profile(root, operations)
    assert caught.value.problems == [
        "vllm0.13.0: verl/workers/engine/fsdp/transformer_impl.py: file not found under %s" % root]
    assert caught.value.hints == [
        "vllm0.13.0 is written for verl@634bd935 (the guide's commit, deps_pinning_verl_version's default); the tree "
        "at %s does not have the code it changes: check the deps stage's verl source ({verl_source}, "
        "{verl_version}), or set {operations} to the profiles for this tree" % root]
    assert digest(root) == before
