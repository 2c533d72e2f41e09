"""The offline bundle's export engine and module, in-process: pip's download commands for another platform
(transcribed from pip's documented options: --platform needs --only-binary=:all:, tags as PEP 600 spells them),
the source-package fallback, verl proven, folders copied, the hub called, the sample proven."""

import hashlib
import io
import os
import sys
import types

import pytest
import yaml

from ascend_grpo.bundle import offline_export
from ascend_grpo.common.errors import FieldError
from grpo_testkit import ROOT, VERL_TARBALL, need_verl_tarball, run_module

COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"
NPU = {"arch": "aarch64", "python_version": "3.11", "glibc": "2.34"}  # the CANN image (openEuler 22.03, Python 3.11)
FILES = os.path.join(ROOT, "roles", "deps_pinning", "files", "requirements")


def profile(name):
    with open(os.path.join(ROOT, "roles", "deps_pinning", "files", "profiles", name + ".yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def npu_steps(tmp_path, site=None):
    need_verl_tarball()
    read, paths = offline_export.verl_requirements_reader(VERL_TARBALL, FILES)
    return offline_export.profile_downloads(profile("vllm0.13.0"), paths, read, NPU, site or {}, "/py",
                                            str(tmp_path / "wheels"), "/c.txt", cross=True)


@pytest.mark.parametrize("bad, word", [({"arch": "arm64"}, "arch"), ({"python_version": "311"}, "python_version"),
                                       ({"glibc": "2.34; rm"}, "glibc")])
def test_a_bad_target_is_refused_naming_the_key(bad, word):
    with pytest.raises(FieldError) as err:
        offline_export.check_target(dict(NPU, **bad))
    assert err.value.field == "target" and word in err.value.msg and "{target}" in err.value.msg


def test_the_910b_profile_downloads_wheels_for_aarch64_with_pips_platform_options(tmp_path):
    steps = npu_steps(tmp_path)
    wheels = steps[0]
    assert wheels["kind"] == "wheels" and wheels["cross"]
    argv = wheels["argv"]
    assert argv[:4] == ["/py", "-m", "pip", "download"]
    assert "--only-binary=:all:" in argv
    assert argv[argv.index("--python-version") + 1] == "3.11"
    assert argv[argv.index("--implementation") + 1] == "cp"
    tags = [argv[i + 1] for i, a in enumerate(argv) if a == "--platform"]
    # PEP 600 tags from the target's glibc down, and the PEP 599 alias manylinux2014 (glibc 2.17)
    assert tags[0] == "manylinux_2_34_aarch64" and "manylinux_2_17_aarch64" in tags and \
        "manylinux2014_aarch64" in tags and all(t.endswith("aarch64") for t in tags)
    assert argv[argv.index("-c") + 1] == "/c.txt"
    # verl's requirements-npu.txt was read from the tarball: its lines are in the resolved set
    assert any(r.startswith("transformers") for r in wheels["requirements"])


def test_vllm_is_fetched_as_its_source_package_with_its_build_tools_as_wheels(tmp_path):
    steps = {s["kind"]: s for s in npu_steps(tmp_path)}
    sdist = steps["sdist"]
    assert sdist["requirements"] == ["vllm==0.13.0"]
    assert sdist["argv"][-4:] == ["--no-deps", "--no-binary", ":all:", ] or \
        sdist["argv"][-3:] == ["--no-deps", "--no-binary", ":all:"]
    assert "--platform" not in sdist["argv"] and not sdist["cross"]
    # the profile's build phase (vllm is built with --no-build-isolation) is in the resolved set, for aarch64
    assert any(r.startswith("setuptools-scm") for r in steps["wheels"]["requirements"])
    assert steps["build"]["requirements"] == ["setuptools", "wheel"] and "--platform" in steps["build"]["argv"]


def test_a_mirror_replaces_the_profiles_own_index_in_the_downloads(tmp_path):
    with_mirror = npu_steps(tmp_path, {"index_url": "https://mirror.example/simple"})[0]["argv"]
    own = npu_steps(tmp_path)[0]["argv"]
    assert "https://download.pytorch.org/whl/cpu" in own
    assert with_mirror[with_mirror.index("--index-url") + 1] == "https://mirror.example/simple"
    assert "https://download.pytorch.org/whl/cpu" not in with_mirror


def pip_says_no(requirement):
    # pip 24+'s words when no file fits the platform
    return (1, "", "ERROR: Could not find a version that satisfies the requirement %s (from versions: none)\n"
                   "ERROR: No matching distribution found for %s\n" % (requirement, requirement))


def test_a_package_without_a_wheel_for_the_target_is_fetched_as_its_source_package():
    calls = []

    def run(argv, env=None):
        calls.append(argv)
        if "--only-binary=:all:" in argv and "antlr4-python3-runtime==4.9.3" in argv:
            return pip_says_no("antlr4-python3-runtime==4.9.3")
        return 0, "", ""
    step = {"argv": ["py", "-m", "pip", "download", "--only-binary=:all:", "--platform", "manylinux_2_34_aarch64"],
            "source": ["py", "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"],
            "requirements": ["hydra-core==1.3.2", "antlr4-python3-runtime==4.9.3"], "kind": "wheels", "cross": True}
    done = offline_export.download([step], {"pins": {"torch": "2.8.0"}}, {}, run)
    assert done["sdist_fallback"] == ["antlr4-python3-runtime==4.9.3"] and done["unfetched"] == []
    assert calls[1] == step["source"] + ["antlr4-python3-runtime==4.9.3"]
    assert calls[2] == step["argv"] + ["hydra-core==1.3.2"]


def test_a_pin_without_a_file_for_the_target_is_named_as_unfetched():
    def run(argv, env=None):
        return pip_says_no("torch==2.8.0")
    step = {"argv": ["py", "-m", "pip", "download", "--only-binary=:all:"], "source": ["py"],
            "requirements": ["torch==2.8.0", "numpy<2"], "kind": "wheels", "cross": True}
    done = offline_export.download([step], {"pins": {"torch": "2.8.0"}}, {}, run)
    assert done["sdist_fallback"] == [] and len(done["unfetched"]) == 1
    assert "torch==2.8.0" in done["unfetched"][0]["requirement"]


def test_verl_is_kept_as_its_proven_tarball_and_a_rerun_keeps_it(tmp_path):
    need_verl_tarball()
    first = offline_export.export_verl(str(tmp_path / "verl"), COMMIT, tarball=VERL_TARBALL)
    assert first["changed"] and first["path"].endswith("verl-%s.tar.gz" % COMMIT) and "commit" in first["proof"]
    again = offline_export.export_verl(str(tmp_path / "verl"), COMMIT, tarball=VERL_TARBALL)
    assert not again["changed"]


def test_a_tarball_of_another_commit_is_refused_and_nothing_is_kept(tmp_path):
    need_verl_tarball()
    with pytest.raises(FieldError) as err:
        offline_export.export_verl(str(tmp_path / "verl"), "a" * 40, tarball=VERL_TARBALL)
    assert err.value.field == "verl" and COMMIT in err.value.msg
    assert not os.listdir(tmp_path / "verl")


def test_a_folder_is_copied_once_and_links_and_strays_are_refused(tmp_path):
    src = tmp_path / "model"
    (src / "sub").mkdir(parents=True)
    (src / "config.json").write_text("{}")
    (src / "sub" / "model.safetensors").write_bytes(b"w" * 100)
    dest = tmp_path / "bundle" / "model"
    first = offline_export.copy_folder(str(src), str(dest), "model")
    assert first == {"files": 2, "copied": 2, "bytes": 102}
    assert offline_export.copy_folder(str(src), str(dest), "model")["copied"] == 0
    (dest / "stale.bin").write_text("old")
    with pytest.raises(FieldError) as err:
        offline_export.copy_folder(str(src), str(dest), "model")
    assert "stale.bin" in err.value.msg and "{model}" in err.value.msg
    os.unlink(dest / "stale.bin")
    os.symlink("/etc/passwd", src / "passwd")
    with pytest.raises(FieldError) as err:
        offline_export.copy_folder(str(src), str(dest), "model")
    assert "symbolic link" in err.value.msg


def test_the_hub_is_asked_for_the_dataset_and_its_bookkeeping_is_taken_out(tmp_path, monkeypatch):
    asked = {}

    def snapshot_download(repo, **kw):
        asked.update(kw, repo=repo)
        os.makedirs(os.path.join(kw["local_dir"], ".cache", "huggingface"))
        os.makedirs(os.path.join(kw["local_dir"], "data"))
        with open(os.path.join(kw["local_dir"], "data", "train-00000.parquet"), "wb") as f:
            f.write(b"PAR1")
    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    params = base_params(tmp_path, parts=["data"],
                         data={"source": "hf", "repo": "DigitalLearningGmbH/MATH-lighteval", "revision": "main",
                               "allow_patterns": ["*.parquet"]})
    out = offline_export.run_export(params, run=no_run)
    assert asked["repo"] == "DigitalLearningGmbH/MATH-lighteval" and asked["repo_type"] == "dataset"
    assert asked["allow_patterns"] == ["*.parquet"] and out["changed"]
    assert not os.path.exists(tmp_path / "b" / "data" / ".cache")
    assert offline_export.run_export(params, run=no_run)["changed"] is False


def test_the_sample_from_its_url_is_kept_only_when_its_sha256_is_right(tmp_path):
    body = b'{"chat_template": "x"}'
    good = hashlib.sha256(body).hexdigest()
    opener = lambda url, timeout: io.BytesIO(body)  # noqa: E731
    url = "https://raw.example/tokenizer_config.json"
    done = offline_export.export_sample(str(tmp_path / "s"), url=url, sha256=good, opener=opener)
    assert done["changed"] and open(done["path"], "rb").read() == body
    with pytest.raises(FieldError):
        offline_export.export_sample(str(tmp_path / "t"), url=url, sha256="0" * 64, opener=opener)
    assert not os.path.exists(tmp_path / "t" / "tokenizer_config.json")


def no_run(argv, environ_update=None):
    raise AssertionError("nothing should run: %s" % argv)


def base_params(tmp_path, **extra):
    params = {"dest": str(tmp_path / "b"), "parts": ["verl"], "target": dict(NPU), "profiles": [], "python": "",
              "site": {}, "index_url": "", "extra_index_urls": [], "pip_cache": "", "wheel_cache": "", "verl": {"commit": COMMIT},
              "model": {}, "data": {}, "token": "", "sample": {}, "setting_names": {}}
    params.update(extra)
    return params


def test_an_index_password_reaches_pip_through_its_environment_not_its_command_line(tmp_path):
    need_verl_tarball()
    seen = []

    def run(argv, environ_update=None):
        seen.append((argv, environ_update or {}))
        return 0, "", ""
    cpu = yaml.safe_load(open(os.path.join(ROOT, "roles", "deps_pinning", "files", "profiles",
                                           "vllm0.13.0-cpu.yml"), encoding="utf-8"))
    params = base_params(tmp_path, parts=["wheels"], index_url="https://u:s3cret@mirror.example/simple",
                         profiles=[{"data": cpu, "files": FILES}], verl={"commit": COMMIT, "tarball": VERL_TARBALL})
    out = offline_export.run_export(params, run=run)
    assert seen and all("s3cret" not in " ".join(argv) for argv, _env in seen)
    assert all(env.get("PIP_INDEX_URL") == "https://u:s3cret@mirror.example/simple" for _a, env in seen)
    assert out["parts"]["wheels"]["profiles"]["vllm0.13.0-cpu"]["unfetched"] == []


def test_the_module_copies_the_parts_and_check_mode_writes_nothing(tmp_path):
    need_verl_tarball()
    src = tmp_path / "tiny"
    src.mkdir()
    (src / "config.json").write_text("{}")
    sample = tmp_path / "tokenizer_config.json"
    sample.write_text("{}")
    params = base_params(tmp_path, parts=["verl", "model", "sample"],
                         verl={"commit": COMMIT, "tarball": VERL_TARBALL},
                         model={"source": "local", "local_dir": str(src)}, sample={"file": str(sample)})
    dry = run_module("offline_export", params, check=True)
    assert dry["changed"] and not os.path.exists(tmp_path / "b")
    done = run_module("offline_export", params)
    assert done["changed"] and sorted(os.listdir(tmp_path / "b")) == ["model", "sample", "verl"]
    assert run_module("offline_export", params)["changed"] is False


def test_the_module_names_the_setting_of_a_bad_target(tmp_path):
    params = base_params(tmp_path, target=dict(NPU, arch="arm64"),
                         setting_names={"target": "offline_bundle_target"})
    out = run_module("offline_export", params)
    assert out["failed"] and "offline_bundle_target" in out["msg"] and out["field"] == "target"


def test_a_download_cache_is_tried_alone_first_and_the_index_only_for_what_it_lacks(tmp_path):
    need_verl_tarball()
    read, paths = offline_export.verl_requirements_reader(VERL_TARBALL, FILES)
    steps = offline_export.profile_downloads(profile("vllm0.13.0-cpu"), paths, read, NPU, {"find_links": ["/w"]},
                                             "/py", str(tmp_path), None, cross=False, cache="/cache/wheels")
    cached = steps[0]["cached"]
    assert cached[cached.index("--no-index") + 1:cached.index("--no-index") + 5] == \
        ["--find-links", "/cache/wheels", "--find-links", "/w"]
    assert "--index-url" not in cached and "--extra-index-url" not in cached
    calls = []

    def run(argv, env=None):
        calls.append(argv)
        # the cache has everything but the build tools
        return (1, "", "") if "--no-index" in argv and "setuptools" in argv else (0, "", "")
    done = offline_export.download(steps, {"pins": {}}, {}, run)
    kinds = [("cache" if "--no-index" in argv else "index", argv[-1]) for argv in calls]
    assert kinds[:-2] == [("cache", s["requirements"][-1]) for s in steps[:-1]]
    assert kinds[-2:] == [("cache", "wheel"), ("index", "wheel")]
    assert done["unfetched"] == []
