"""The offline bundle's manifest: written from what the bundle holds, readable by coreutils' ``sha256sum -c``, and
checked member by member (a changed byte, a truncated or missing file, a planted wheel, a link), with a memo that
spares a rerun the hashing and still catches a file rewritten since."""

import hashlib
import json
import os
import shutil
import subprocess
import time

import pytest
from grpo_testkit import run_module

from ascend_grpo.bundle import offline_manifest as om
from ascend_grpo.common.errors import FieldError, StageFailure

FILES = {
    "wheels/torch-2.5.1-cp311-cp311-linux_aarch64.whl": b"wheel bytes " * 1000,
    "wheels/vllm-0.13.0.tar.gz": b"an sdist",
    "verl/verl-634bd935.tar.gz": b"verl archive",
    "model/config.json": b'{"architectures": ["Qwen2ForCausalLM"]}',
    "model/model.safetensors": os.urandom(3 * (1 << 20) + 17),  # more than one 1 MiB chunk
    "data/train.parquet": b"PAR1 train",
    "data/test.parquet": b"PAR1 test",
    "sample/tokenizer_config.json": b'{"chat_template": "x"}',
    "image/cann.tar": b"docker save",
}


def make_bundle(tmp_path, files=FILES):
    root = tmp_path / "bundle"
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def problems_of(root, **kw):
    with pytest.raises(FieldError) as caught:
        om.verify(str(root), **kw)
    assert caught.value.field == "bundle"
    assert caught.value.msg.startswith("{bundle} (%s)" % root)
    return caught.value


def test_write_lists_every_file_with_its_size_and_sha256_and_verify_accepts_it(tmp_path):
    root = make_bundle(tmp_path)
    manifest = om.write(str(root), {"stack": "vllm0.13.0"})
    # the reference: hashlib over the planted bytes, not our code's output
    assert manifest["members"] == {rel: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                                   for rel, data in FILES.items()}
    assert list(manifest["members"]) == sorted(FILES)
    assert manifest["format"] == 1 and manifest["meta"] == {"stack": "vllm0.13.0"}
    assert manifest["parts"]["wheels"] == {"files": 2, "bytes": len(FILES["wheels/vllm-0.13.0.tar.gz"]) +
                                           len(FILES["wheels/torch-2.5.1-cp311-cp311-linux_aarch64.whl"])}
    assert sorted(manifest["parts"]) == ["data", "image", "model", "sample", "verl", "wheels"]
    assert manifest["bytes"] == sum(len(d) for d in FILES.values())
    assert json.loads((root / om.MANIFEST).read_text()) == manifest
    done = om.verify(str(root))
    assert done["members"] == len(FILES) and done["hashed"] == len(FILES)
    assert done["bytes"] == done["bytes_hashed"] == manifest["bytes"]
    assert done["meta"] == {"stack": "vllm0.13.0"}
    assert done["parts"] == ["data", "image", "model", "sample", "verl", "wheels"]


def test_writing_again_gives_the_same_bytes(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {"a": 1})
    first = (root / om.MANIFEST).read_bytes(), (root / om.SUMS).read_bytes()
    assert om.write_manifest(str(root), {"a": 1})[1] is False
    assert ((root / om.MANIFEST).read_bytes(), (root / om.SUMS).read_bytes()) == first


def test_coreutils_sha256sum_accepts_the_sums_and_catches_a_change(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    done = subprocess.run(["sha256sum", "-c", om.SUMS], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(line.rsplit(": ", 1)[0] for line in done.stdout.splitlines()) == sorted(FILES)
    (root / "data" / "test.parquet").write_bytes(b"PAR1 tesT")
    done = subprocess.run(["sha256sum", "-c", om.SUMS], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "data/test.parquet: FAILED" in done.stdout


def test_a_changed_byte_of_the_same_size_is_named(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    data = bytearray(FILES["model/model.safetensors"])
    data[(1 << 20) + 5] ^= 1  # in the second chunk
    (root / "model" / "model.safetensors").write_bytes(bytes(data))
    err = problems_of(root)
    assert err.result["problems"] == [err.result["problems"][0]]
    assert "model/model.safetensors differs from the manifest" in err.msg
    assert "copy it again from the exporting host, or export again" in err.msg


def test_a_truncated_file_is_named_without_hashing_it(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    (root / "image" / "cann.tar").write_bytes(b"docker")
    err = problems_of(root)
    assert "image/cann.tar has 6 bytes where the manifest says %d" % len(FILES["image/cann.tar"]) in err.msg
    assert err.result["hashed"] == len(FILES) - 1


def test_a_missing_file_is_named(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    (root / "data" / "train.parquet").unlink()
    err = problems_of(root)
    assert "data/train.parquet is missing: copy it again from the exporting host, or export again" in err.msg


def test_a_wheel_planted_beside_the_others_is_named(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    (root / "wheels" / "evil-1.0-py3-none-any.whl").write_bytes(b"planted")
    err = problems_of(root, parts=["wheels"])
    assert "wheels/evil-1.0-py3-none-any.whl is not in the manifest" in err.msg and "remove it, or export again" in \
        err.msg


def test_a_link_is_refused_when_writing_and_when_verifying(tmp_path):
    root = make_bundle(tmp_path)
    outside = tmp_path / "outside.whl"
    outside.write_bytes(b"x")
    (root / "wheels" / "linked.whl").symlink_to(outside)
    with pytest.raises(StageFailure) as caught:
        om.write(str(root), {})
    assert "wheels/linked.whl (a symbolic link)" in caught.value.msg and "a bundle holds plain files" in \
        caught.value.msg
    assert not (root / om.MANIFEST).exists()
    (root / "wheels" / "linked.whl").unlink()
    om.write(str(root), {})
    # a member swapped for a link to a file of the same bytes, and a linked folder
    target = tmp_path / "same.parquet"
    target.write_bytes(FILES["data/test.parquet"])
    (root / "data" / "test.parquet").unlink()
    (root / "data" / "test.parquet").symlink_to(target)
    shutil.move(str(root / "sample"), str(tmp_path / "sample"))
    (root / "sample").symlink_to(tmp_path / "sample")
    err = problems_of(root)
    assert "data/test.parquet is a symbolic link" in err.msg and "sample is a symbolic link" in err.msg
    assert "is missing" not in err.msg  # the link is the one problem of each, not a missing file besides
    assert len(err.result["problems"]) == 2


def test_a_directory_link_is_refused_when_writing(tmp_path):
    root = make_bundle(tmp_path)
    (tmp_path / "more").mkdir()
    (root / "model" / "more").symlink_to(tmp_path / "more")
    with pytest.raises(StageFailure, match="model/more"):
        om.write(str(root), {})


def test_only_the_parts_asked_for_are_checked(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    (root / "model" / "config.json").write_text("{}")
    (root / "model" / "planted.bin").write_bytes(b"x")
    done = om.verify(str(root), parts=["wheels"])
    assert done["parts"] == ["wheels"] and done["members"] == 2 and done["hashed"] == 2
    err = problems_of(root, parts=["wheels", "model"])
    assert "model/config.json" in err.msg and "model/planted.bin" in err.msg


def test_a_part_the_bundle_does_not_hold_is_named_with_the_export(tmp_path):
    root = make_bundle(tmp_path, {k: v for k, v in FILES.items() if not k.startswith("image/")})
    om.write(str(root), {})
    err = problems_of(root, parts=["wheels", "image"])
    assert "the bundle holds no image/: export it with --tags export" in err.msg
    assert len(err.result["problems"]) == 1


def test_many_problems_name_ten_and_say_how_many_more(tmp_path):
    files = {"wheels/w%02d.whl" % i: b"w%d" % i for i in range(14)}
    root = make_bundle(tmp_path, files)
    om.write(str(root), {})
    shutil.rmtree(root / "wheels")
    err = problems_of(root)
    assert "(14 problems)" in err.msg and "... and 4 more" in err.msg
    assert err.msg.count("\n- ") == 10 and len(err.result["problems"]) == 14


@pytest.mark.parametrize("manifest, why", [
    (None, "MANIFEST.json is missing"),
    ("not json", "MANIFEST.json is not JSON"),
    (json.dumps({"format": 2, "members": {}}), "is not a manifest of format 1"),
    (json.dumps({"format": 1, "members": {"../etc/passwd": {"size": 1, "sha256": "0" * 64}}}), "'../etc/passwd'"),
    (json.dumps({"format": 1, "members": {"a/b": {"size": "1", "sha256": "0" * 64}}}), "'a/b'"),
])
def test_a_folder_without_a_manifest_of_ours_is_not_a_bundle(tmp_path, manifest, why):
    root = make_bundle(tmp_path)
    if manifest is not None:
        (root / om.MANIFEST).write_text(manifest)
    err = problems_of(root)
    assert why in err.msg and err.msg.endswith("not a bundle made by --tags export: export it again")


def test_the_memo_spares_the_rerun_the_hashing(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    memo = tmp_path / "state" / "memo.json"
    first = om.verify(str(root), memo=str(memo))
    assert first["hashed"] == len(FILES)
    assert oct(os.stat(memo).st_mode & 0o777) == "0o600"
    again = om.verify(str(root), memo=str(memo))
    assert again["hashed"] == 0 and again["bytes_hashed"] == 0 and again["members"] == len(FILES)
    assert om.verify(str(root), parts=["wheels"], memo=str(memo))["hashed"] == 0


def test_a_file_rewritten_with_the_same_size_and_a_new_mtime_is_hashed_again_and_caught(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    memo = str(tmp_path / "memo.json")
    om.verify(str(root), memo=memo)
    path = root / "wheels" / "vllm-0.13.0.tar.gz"
    path.write_bytes(FILES["wheels/vllm-0.13.0.tar.gz"])  # the same bytes again: proven again, then spared
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert om.verify(str(root), memo=memo)["hashed"] == 1
    assert om.verify(str(root), memo=memo)["hashed"] == 0
    path.write_bytes(b"an sdisT")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    err = problems_of(root, memo=memo)
    assert "wheels/vllm-0.13.0.tar.gz differs from the manifest" in err.msg and err.result["hashed"] == 1


def test_a_file_altered_with_its_mtime_set_back_is_caught_without_the_memo_and_with_a_new_one(tmp_path):
    """The documented limit: the memo trusts the stat. Setting the mtime back moves the ctime, which the memo also
    compares; without a memo, or with a new one, every member is hashed."""
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    memo = str(tmp_path / "memo.json")
    om.verify(str(root), memo=memo)
    path = root / "data" / "train.parquet"
    st = os.stat(path)
    time.sleep(0.05)  # past the file system's clock tick, so the ctime can move
    path.write_bytes(b"PAR1 trXin")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = os.stat(path)
    assert (now.st_size, now.st_mtime_ns, now.st_ino, now.st_dev) == (st.st_size, st.st_mtime_ns, st.st_ino,
                                                                       st.st_dev)
    assert "data/train.parquet differs" in problems_of(root).msg
    assert "data/train.parquet differs" in problems_of(root, memo=str(tmp_path / "new-memo.json")).msg
    assert now.st_ctime_ns != st.st_ctime_ns
    assert "data/train.parquet differs" in problems_of(root, memo=memo).msg  # the ctime gave it away


def test_a_memo_of_another_manifest_is_not_trusted(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {"export": 1})
    memo = str(tmp_path / "memo.json")
    om.verify(str(root), memo=memo)
    om.write(str(root), {"export": 2})
    assert om.verify(str(root), memo=memo)["hashed"] == len(FILES)
    assert om.verify(str(root), memo=memo)["hashed"] == 0


def test_a_memo_that_is_no_json_only_costs_the_hashing(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    memo = tmp_path / "memo.json"
    memo.write_text("{broken")
    assert om.verify(str(root), memo=str(memo))["hashed"] == len(FILES)
    assert json.loads(memo.read_text())["format"] == 1


def test_check_mode_writes_no_memo_and_no_manifest(tmp_path):
    root = make_bundle(tmp_path)
    om.write(str(root), {}, check_mode=True)
    assert not (root / om.MANIFEST).exists() and not (root / om.SUMS).exists()
    om.write(str(root), {})
    memo = tmp_path / "memo.json"
    assert om.verify(str(root), memo=str(memo), check_mode=True)["hashed"] == len(FILES)
    assert not memo.exists()


@pytest.mark.parametrize("where", ["memo", "folder", "inside"])
def test_a_memo_through_a_link_or_inside_the_bundle_is_refused(tmp_path, where):
    root = make_bundle(tmp_path)
    om.write(str(root), {})
    (tmp_path / "real").mkdir()
    if where == "memo":
        (tmp_path / "real" / "target.json").write_text("{}")
        memo = tmp_path / "memo.json"
        memo.symlink_to(tmp_path / "real" / "target.json")
    elif where == "folder":
        (tmp_path / "state").symlink_to(tmp_path / "real")
        memo = tmp_path / "state" / "memo.json"
    else:
        memo = root / "memo.json"
    with pytest.raises(FieldError) as caught:
        om.verify(str(root), memo=str(memo))
    assert caught.value.field == "memo" and caught.value.msg.startswith("{memo} (%s)" % memo)
    # nothing written through the link (and nothing inside the bundle)
    assert sorted(os.listdir(tmp_path / "real")) == (["target.json"] if where == "memo" else [])
    assert where != "memo" or (tmp_path / "real" / "target.json").read_text() == "{}"
    assert not (root / "memo.json").exists()


def test_the_module_writes_then_verifies_and_names_a_tampered_member(tmp_path):
    root = make_bundle(tmp_path)
    params = {"path": str(root), "state": "present", "meta": {"stack": "vllm0.13.0"}}
    planned = run_module("offline_bundle", params, check=True)
    assert planned["changed"] is True and planned["members"] == len(FILES)
    assert not (root / om.MANIFEST).exists()
    done = run_module("offline_bundle", params)
    assert done["changed"] is True and (root / om.MANIFEST).is_file()
    assert run_module("offline_bundle", params)["changed"] is False
    memo = str(tmp_path / "memo.json")
    checked = run_module("offline_bundle", {"path": str(root), "parts": ["wheels", "model"], "memo": memo})
    assert checked["changed"] is False and "failed" not in checked
    assert checked["members"] == 4 and checked["hashed"] == 4 and checked["meta"] == {"stack": "vllm0.13.0"}
    assert run_module("offline_bundle", {"path": str(root), "memo": memo}, check=True)["hashed"] == len(FILES) - 4
    (root / "model" / "config.json").write_bytes(b'{"architectures": ["Qwen2ForCausalLX"]}')
    failed = run_module("offline_bundle", {"path": str(root), "state": "verified", "memo": memo,
                                           "setting_names": {"path": "grpo_offline_bundle"}})
    assert failed["failed"] is True and failed["field"] == "path"
    assert failed["msg"].startswith("grpo_offline_bundle (%s)" % root)
    assert "model/config.json differs from the manifest" in failed["msg"]
    assert failed["problems"] == [failed["msg"].split("\n- ", 1)[1]]


def test_the_module_refuses_a_part_that_is_no_top_level_folder(tmp_path):
    root = make_bundle(tmp_path)
    failed = run_module("offline_bundle", {"path": str(root), "parts": ["../etc"]})
    assert failed["failed"] is True and failed["field"] == "parts" and "'../etc'" in failed["msg"]
