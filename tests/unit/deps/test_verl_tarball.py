"""The tarball source of verl is proven to be the commit asked for before anything is unpacked: the engine against
the real upstream tarball and small git-archive tarballs, then the verl_tarball module through Ansible."""

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tarfile

import pytest

from ascend_grpo.deps import tarball_proof
import grpo_testkit
from grpo_testkit.setting_names import role_setting_names
from grpo_testkit.upstream import plain_verl_tarball as plain_tarball


# verl's tree at the guide's commit: GRPO_VERL_TARBALL, else ../shared/upstream beside the checkout (grpo_testkit).
UPSTREAM = grpo_testkit.VERL_TARBALL
# Transcribed from shared/upstream/README.md, not computed.
UPSTREAM_COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"
NOTHING_DONE = "Nothing was moved or replaced."


def git(*args, cwd):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True).stdout


def sha256_of(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.fixture()
def repo(tmp_path):
    """A throwaway verl stand-in with two commits: ``first`` and ``second``, and ``archive(commit, name)``."""
    root = tmp_path / "verl-src"
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")
    git("init", "-q", "-b", "main", ".", cwd=root)
    git("add", ".", cwd=root)
    git("commit", "-qm", "first", cwd=root)
    first = git("rev-parse", "HEAD", cwd=root).decode().strip()
    (root / "setup.py").write_text("# second\n")
    git("add", ".", cwd=root)
    git("commit", "-qm", "second", cwd=root)
    second = git("rev-parse", "HEAD", cwd=root).decode().strip()

    def archive(treeish, name, prefix="verl-x/"):
        out = tmp_path / name
        git("archive", "--format=tar.gz", "--prefix=" + prefix, "-o", str(out), treeish, cwd=root)
        return str(out)

    return {"first": first, "second": second, "archive": archive, "tmp": tmp_path}


# --- the real upstream tarball ---------------------------------------------------------------------------------

def test_upstream_tarball_is_the_guides_commit():
    grpo_testkit.need_verl_tarball()
    found = tarball_proof.prove_tarball(UPSTREAM, UPSTREAM_COMMIT)
    assert found["commit"] == UPSTREAM_COMMIT and found["proof"] == "commit"
    assert found["strip_components"] == 1 and found["entries"] > 1000
    assert found["sha256"] == sha256_of(UPSTREAM)
    sums = os.path.join(os.path.dirname(UPSTREAM), "SHA256SUMS")
    if os.path.exists(sums):
        with open(sums, encoding="utf-8") as handle:
            assert found["sha256"] + "  " + os.path.basename(UPSTREAM) in handle.read()
    if shutil.which("git"):
        with gzip.open(UPSTREAM, "rb") as tar:
            printed = subprocess.run(["git", "get-tar-commit-id"], input=tar.read(), capture_output=True,
                                     check=True).stdout.decode().strip()
        assert printed == UPSTREAM_COMMIT


def test_upstream_tarball_against_another_commit_is_refused():
    grpo_testkit.need_verl_tarball()
    other = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(UPSTREAM, other)
    msg = str(err.value)
    assert "{path}: " + UPSTREAM in msg and UPSTREAM_COMMIT in msg and other in msg
    assert NOTHING_DONE in msg


# --- git archive tarballs ----------------------------------------------------------------------------------------

def test_git_archive_of_the_commit_is_proven(repo):
    path = repo["archive"](repo["first"], "first.tar.gz")
    found = tarball_proof.prove_tarball(path, repo["first"])
    assert found["commit"] == repo["first"] and found["proof"] == "commit" and found["strip_components"] == 1
    assert found["sha256"] == sha256_of(path)
    both = tarball_proof.prove_tarball(path, repo["first"].upper(), sha256="sha256:" + sha256_of(path).upper())
    assert both["proof"] == "commit and sha256"


def test_another_commit_is_refused_naming_both(repo):
    path = repo["archive"](repo["first"], "first.tar.gz")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, repo["second"])
    msg = str(err.value)
    assert msg.startswith("{path}: " + path + " is verl commit " + repo["first"])
    assert "not commit %s that {commit} asks for" % repo["second"] in msg
    assert msg.endswith(NOTHING_DONE)


def test_a_matching_sha256_does_not_excuse_another_commit(repo):
    path = repo["archive"](repo["first"], "first.tar.gz")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, repo["second"], sha256=sha256_of(path))
    assert repo["first"] in str(err.value) and repo["second"] in str(err.value)


def test_right_commit_with_a_wrong_sha256_is_refused(repo):
    path = repo["archive"](repo["first"], "first.tar.gz")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, repo["first"], sha256="0" * 64)
    assert "{sha256}" in str(err.value) and sha256_of(path) in str(err.value)


def test_an_archive_without_a_top_folder_is_unpacked_without_stripping(repo):
    path = repo["archive"](repo["first"], "flat.tar.gz", prefix="")
    assert tarball_proof.prove_tarball(path, repo["first"])["strip_components"] == 0


def test_a_tarball_that_is_not_verl_is_refused(repo):
    (repo["tmp"] / "other").mkdir()
    (repo["tmp"] / "other" / "README").write_text("not verl\n")
    git("init", "-q", "-b", "main", ".", cwd=repo["tmp"] / "other")
    git("add", ".", cwd=repo["tmp"] / "other")
    git("commit", "-qm", "x", cwd=repo["tmp"] / "other")
    commit = git("rev-parse", "HEAD", cwd=repo["tmp"] / "other").decode().strip()
    path = str(repo["tmp"] / "other.tar.gz")
    git("archive", "--format=tar.gz", "--prefix=other/", "-o", path, "HEAD", cwd=repo["tmp"] / "other")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, commit)
    assert "holds no verl/__init__.py" in str(err.value) and NOTHING_DONE in str(err.value)


# --- tarballs without a commit id ------------------------------------------------------------------------------

@pytest.mark.parametrize("made_by", ["tarfile", "git archive of a tree"])
def test_no_commit_id_needs_the_sha256_setting(repo, made_by):
    if made_by == "tarfile":
        path = plain_tarball(repo["tmp"] / "plain.tar.gz")
    else:  # git stores no commit id when it archives a tree rather than a commit
        path = repo["archive"](repo["first"] + "^{tree}", "tree.tar.gz")
    assert tarball_proof.read_tarball(path)["commit"] is None
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, repo["first"])
    msg = str(err.value)
    assert "{path}: " + path + " carries no commit id" in msg
    assert "set {sha256}" in msg and repo["first"] in msg and msg.endswith(NOTHING_DONE)

    found = tarball_proof.prove_tarball(path, repo["first"], sha256=sha256_of(path))
    assert found["proof"] == "sha256" and found["commit"] is None and found["strip_components"] == 1

    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, repo["first"], sha256="f" * 64)
    msg = str(err.value)
    assert "has sha256 %s, not %s that {sha256} gives" % (sha256_of(path), "f" * 64) in msg
    assert msg.endswith(NOTHING_DONE)


# --- files that are not a tarball ------------------------------------------------------------------------------

def test_a_missing_file_is_refused(tmp_path):
    path = str(tmp_path / "nowhere.tar.gz")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(path, UPSTREAM_COMMIT)
    assert str(err.value).startswith("{path}: %s does not exist" % path)
    assert NOTHING_DONE in str(err.value)


def test_a_file_that_is_not_gzip_is_refused(tmp_path):
    path = tmp_path / "verl.tar.gz"
    path.write_text("<html>404 Not Found</html>\n")
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(str(path), UPSTREAM_COMMIT)
    assert str(err.value).startswith("{path}: %s is not a gzip file" % path)
    assert NOTHING_DONE in str(err.value)


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.prove_tarball(str(tmp_path), UPSTREAM_COMMIT)
    assert "{path}: %s cannot be read" % tmp_path in str(err.value)


def test_a_truncated_or_non_tar_gzip_is_refused(repo):
    path = repo["archive"](repo["first"], "first.tar.gz")
    with open(path, "rb") as handle:
        data = handle.read()
    cut = repo["tmp"] / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    notar = repo["tmp"] / "notar.tar.gz"
    notar.write_bytes(gzip.compress(b"just text, not a tar\n" * 10))
    for bad in (cut, notar):
        with pytest.raises(tarball_proof.TarballError) as err:
            tarball_proof.prove_tarball(str(bad), repo["first"])
        assert "{path}: %s is not a complete .tar.gz" % bad in str(err.value)


def test_bad_settings_are_named():
    with pytest.raises(tarball_proof.TarballError, match=r"^\{commit\} must be a full commit"):
        tarball_proof.prove_tarball(UPSTREAM, "634bd935")
    with pytest.raises(tarball_proof.TarballError, match=r"^\{sha256\} must be a sha256"):
        tarball_proof.prove_tarball(UPSTREAM, UPSTREAM_COMMIT, sha256="abc")


# --- the module, through Ansible ---------------------------------------------------------------------------------

def run_module(check=False, **params):
    """The module as the deps stage's task runs it: its messages name the stage's settings."""
    params.setdefault("setting_names", role_setting_names("deps_pinning", "verl_tarball"))
    return grpo_testkit.run_module("verl_tarball", params, check=check)


@pytest.mark.parametrize("check", [False, True])
def test_module_proves_and_refuses(repo, check):
    path = repo["archive"](repo["first"], "first.tar.gz")
    ok = run_module(check=check, path=path, commit=repo["first"])
    assert not ok.get("failed") and not ok["changed"], ok
    assert ok["commit"] == repo["first"] and ok["sha256"] == sha256_of(path) and ok["proof"] == "commit"
    assert ok["tarball"] == path and ok["strip_components"] == 1

    refused = run_module(check=check, path=path, commit=repo["second"], origin="https://example.com/v.tar.gz")
    assert refused.get("failed") and not refused["changed"], refused
    msg = refused["msg"]
    assert "deps_pinning_verl_tarball: %s (downloaded from https://example.com/v.tar.gz)" % path in msg
    assert repo["first"] in msg and repo["second"] in msg
    assert msg.endswith("Delete %s to download it again. %s" % (path, NOTHING_DONE))


def _tarball_with(tmp_path, *members):
    """A .tar.gz of verl/ (so it would otherwise pass) plus ``members``: (TarInfo, data or None)."""
    path = tmp_path / "crafted.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        init = tarfile.TarInfo("verl/verl/__init__.py")
        tar.addfile(init, io.BytesIO(b""))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, (b"" if kind == tarfile.REGTYPE else None)


@pytest.mark.parametrize("name, kind, link, why", [
    ("/etc/cron.d/x", tarfile.REGTYPE, "", "its name leaves the folder"),
    ("verl/../../x", tarfile.REGTYPE, "", "its name leaves the folder"),
    ("verl/out", tarfile.SYMTYPE, "/etc", "a link to an absolute path"),
    ("verl/verl/up", tarfile.SYMTYPE, "../../../root", "a link that leads out of the folder"),
    ("verl/hard", tarfile.LNKTYPE, "../x", "a link that leads out of the folder"),
    ("verl/dev/sda", tarfile.BLKTYPE, "", "a device or FIFO"),
    ("verl/fifo", tarfile.FIFOTYPE, "", "a device or FIFO"),
])
def test_a_member_that_would_land_outside_or_is_a_device_is_refused(tmp_path, name, kind, link, why):
    path = _tarball_with(tmp_path, _member(name, kind, link))
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.read_tarball(str(path))
    assert "%s (%s)" % (name, why) in str(err.value) and NOTHING_DONE in str(err.value)
    assert "{path}" in str(err.value)


def test_links_inside_the_tree_pass(tmp_path):
    path = _tarball_with(tmp_path, _member("verl/docs/README", tarfile.SYMTYPE, "../README.md"),
                         _member("verl/verl/same", tarfile.LNKTYPE, "verl/verl/__init__.py"))
    assert tarball_proof.read_tarball(str(path))["entries"] == 3


# tar unpacks with --strip-components, so a link is judged where it lands: after the strip. These climb out only
# then (before it, the top folder they live in absorbs one '..').
@pytest.mark.parametrize("name, kind, link", [
    ("verl/up", tarfile.SYMTYPE, "../etc"),
    ("verl/docs/up", tarfile.SYMTYPE, "../../root/.ssh"),
])
def test_a_link_that_leaves_the_folder_only_after_the_strip_is_refused(tmp_path, name, kind, link):
    path = _tarball_with(tmp_path, _member(name, kind, link))
    with pytest.raises(tarball_proof.TarballError) as err:
        tarball_proof.read_tarball(str(path))
    assert "%s (a link that leads out of the folder)" % name in str(err.value), str(err.value)
    assert NOTHING_DONE in str(err.value)


def test_a_flat_archive_is_judged_without_a_strip(tmp_path):
    """No top folder (strip 0): a link that stays in the destination still passes."""
    path = tmp_path / "flat.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(tarfile.TarInfo("verl/__init__.py"), io.BytesIO(b""))
        info, _ = _member("docs/up", tarfile.SYMTYPE, "../verl/__init__.py")
        tar.addfile(info)
    found = tarball_proof.read_tarball(str(path))
    assert found["strip_components"] == 0 and found["entries"] == 2
