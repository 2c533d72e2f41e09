"""The verl_source module, through Ansible, on real git repositories, wheels and tarballs made in tmp_path.

What it must do is what the deps stage's source step did as tasks (the stamp, the git clone and checkout to the
pinned commit, a release downloaded and unpacked, a proven tarball unpacked, a new source proven before the old
tree moves) and the guide's step 3 (DOMAIN.md: ``git clone`` verl, ``git checkout`` the commit). The messages
below are the ones those tasks gave, word for word where the tests quote them."""

import io
import json
import os
import subprocess
import tarfile
import zipfile

import pytest

from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names

# the mapping the deps stage's task passes: the messages name its settings
NAMES = role_setting_names("deps_pinning", "verl_source")


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def commit_all(repo, message):
    git("-C", str(repo), "add", "-A")
    git("-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git("-C", str(repo), "rev-parse", "HEAD")


@pytest.fixture()
def upstream(tmp_path):
    """A stand-in for volcengine/verl: two commits, the pinned one first (the guide pins a commit behind main)."""
    repo = tmp_path / "upstream"
    (repo / "verl").mkdir(parents=True)
    git("init", "-q", "-b", "main", str(repo))
    (repo / "verl" / "__init__.py").write_text("__version__ = 'pinned'\n")
    pinned = commit_all(repo, "pinned")
    (repo / "verl" / "__init__.py").write_text("__version__ = 'later'\n")
    later = commit_all(repo, "later")
    return {"repo": str(repo), "pinned": pinned, "later": later}


@pytest.fixture()
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / ".grpo").mkdir(parents=True)
    return root


def source(ws, stamp, check=False, env=None, **extra):
    params = dict(source=stamp, dest=str(ws / "verl"), state_dir=str(ws / ".grpo"), setting_names=NAMES, **extra)
    return run_module("verl_source", params, check=check, env=env)


def stamp_of(ws):
    return json.loads((ws / ".grpo" / "verl-source.json").read_text())


def git_stamp(up, commit=None):
    return {"kind": "git", "repo": up["repo"], "commit": commit or up["pinned"]}


# -- git ---------------------------------------------------------------------------------------------------------

def test_a_fresh_workspace_gets_the_pinned_commit_and_a_rerun_changes_nothing(ws, upstream):
    first = source(ws, git_stamp(upstream))
    assert first["changed"] and not first.get("failed"), first
    assert git("-C", str(ws / "verl"), "rev-parse", "HEAD") == upstream["pinned"]
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "__version__ = 'pinned'\n"
    assert stamp_of(ws) == git_stamp(upstream)
    assert first["commit"] == upstream["pinned"] and first["tree"] is True
    assert not (ws / "verl.incoming").exists()
    again = source(ws, git_stamp(upstream))
    assert again["changed"] is False and not again.get("failed"), again
    assert again["actions"] == []


def test_check_mode_on_a_fresh_workspace_says_what_it_would_do_and_touches_nothing(ws, upstream):
    result = source(ws, git_stamp(upstream), check=True)
    assert result["changed"] and not result.get("failed"), result
    assert any(a.startswith("clone %s at %s" % (upstream["repo"], upstream["pinned"])) for a in result["actions"])
    assert "(no source stamped)" in result["diff"]["before"]
    assert "commit: %s" % upstream["pinned"] in result["diff"]["after"]
    assert sorted(os.listdir(ws)) == [".grpo"] and os.listdir(ws / ".grpo") == []


def test_edits_at_the_pinned_commit_are_not_an_error(ws, upstream):
    """The patch stage edits verl in place: at the right commit, local edits are kept and nothing changes."""
    source(ws, git_stamp(upstream))
    (ws / "verl" / "verl" / "__init__.py").write_text("# patched\n")
    again = source(ws, git_stamp(upstream))
    assert again["changed"] is False and not again.get("failed"), again
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "# patched\n"


def test_a_clean_tree_at_another_commit_is_moved_to_the_pinned_one(ws, upstream):
    source(ws, git_stamp(upstream, upstream["later"]))
    assert git("-C", str(ws / "verl"), "rev-parse", "HEAD") == upstream["later"]
    # the stamp lost (an older workspace): the tree is a git tree at another commit, without edits
    (ws / ".grpo" / "verl-source.json").unlink()
    moved = source(ws, git_stamp(upstream))
    assert moved["changed"] and not moved.get("failed"), moved
    assert git("-C", str(ws / "verl"), "rev-parse", "HEAD") == upstream["pinned"]
    assert moved["replaced"] is None and moved["commit"] == upstream["pinned"]


def test_edits_at_another_commit_are_refused_and_kept(ws, upstream):
    source(ws, git_stamp(upstream, upstream["later"]))
    (ws / ".grpo" / "verl-source.json").unlink()
    (ws / "verl" / "verl" / "__init__.py").write_text("# mine\n")
    refused = source(ws, git_stamp(upstream))
    assert refused.get("failed"), refused
    assert refused["msg"].startswith("Cannot check out verl commit %s from %s into %s: " % (
        upstream["pinned"], upstream["repo"], ws / "verl"))
    assert "local changes" in refused["msg"] and "deps_pinning_verl_version" in refused["msg"]
    assert "Nothing was installed." in refused["msg"]
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "# mine\n"


def test_an_unreachable_repository_on_a_fresh_workspace_names_the_settings(ws, tmp_path, upstream):
    stamp = dict(git_stamp(upstream), repo="file://%s/no-such-repo.git" % tmp_path)
    refused = source(ws, stamp)
    assert refused.get("failed"), refused
    assert ("Cannot check out verl commit %s from file://%s/no-such-repo.git" % (upstream["pinned"], tmp_path)
            in refused["msg"])
    assert "deps_pinning_verl_repo" in refused["msg"] and "Nothing was installed" in refused["msg"]
    assert "without GitHub use deps_pinning_verl_source: registry, tarball or path" in refused["msg"]
    assert not (ws / "verl").exists() and not (ws / "verl.incoming").exists()
    assert not (ws / ".grpo" / "verl-source.json").exists()


def test_a_commit_the_repository_lacks_is_refused(ws, upstream):
    ghost = "0123456789abcdef0123456789abcdef01234567"
    refused = source(ws, git_stamp(upstream, ghost))
    assert refused.get("failed"), refused
    assert "Cannot check out verl commit %s from %s" % (ghost, upstream["repo"]) in refused["msg"]
    assert not (ws / "verl").exists()


def test_another_source_is_proven_before_the_old_tree_moves_aside(ws, upstream):
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "my_edit.py").write_text("# mine\n")
    (ws / ".grpo" / "verl-source.json").write_text('{"kind": "registry", "release": "0.5.0"}')
    switched = source(ws, git_stamp(upstream))
    assert switched["changed"] and switched["switched"] and not switched.get("failed"), switched
    assert switched["held"] == {"kind": "registry", "release": "0.5.0"}
    aside = switched["replaced"]
    assert aside.startswith(str(ws / "verl") + ".replaced-")
    assert open(os.path.join(aside, "verl", "my_edit.py")).read() == "# mine\n"  # kept, never deleted
    assert git("-C", str(ws / "verl"), "rev-parse", "HEAD") == upstream["pinned"]
    assert stamp_of(ws) == git_stamp(upstream)


def test_a_new_source_that_cannot_be_had_leaves_the_workspace_as_it_was(ws, tmp_path, upstream):
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "__init__.py").write_text("# edited by the patch stage\n")
    held = {"kind": "tarball", "tarball": "/upstream/verl-%s.tar.gz" % upstream["pinned"], "commit": upstream["pinned"]}
    (ws / ".grpo" / "verl-source.json").write_text(json.dumps(held))
    stamp = dict(git_stamp(upstream), repo="file://%s/no-such-repo.git" % tmp_path)
    refused = source(ws, stamp)
    assert refused.get("failed"), refused
    assert refused["msg"].startswith(
        "The verl source changed (deps_pinning_verl_source is git at %s from file://%s/no-such-repo.git; the "
        "workspace holds tarball /upstream/verl-%s.tar.gz), but the new source cannot be had: "
        % (upstream["pinned"], tmp_path, upstream["pinned"]))
    assert "%s and the workspace are exactly as they were" % (ws / "verl") in refused["msg"]
    assert "set deps_pinning_verl_source (and its settings) back to what the workspace holds" in refused["msg"]
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "# edited by the patch stage\n"
    assert sorted(os.listdir(ws)) == [".grpo", "verl"]
    assert json.loads((ws / ".grpo" / "verl-source.json").read_text()) == held


def test_check_mode_of_a_switch_names_the_move_and_moves_nothing(ws, upstream):
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "__init__.py").write_text("")
    (ws / ".grpo" / "verl-source.json").write_text('{"kind": "registry", "release": "0.5.0"}')
    result = source(ws, git_stamp(upstream), check=True)
    assert result["changed"] and not result.get("failed"), result
    assert result["replaced"].startswith(str(ws / "verl") + ".replaced-")
    assert "release: 0.5.0" in result["diff"]["before"] and "kind: git" in result["diff"]["after"]
    assert sorted(os.listdir(ws)) == [".grpo", "verl"]
    assert stamp_of(ws) == {"kind": "registry", "release": "0.5.0"}


# -- registry ----------------------------------------------------------------------------------------------------

def fake_wheel(folder, version):
    """A wheel as the registry's verl wheels are: verl/ and verl-<v>.dist-info/METADATA (Version: <v>)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("verl-%s-py3-none-any.whl" % version)
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("verl/__init__.py", "")
        info = "verl-%s.dist-info/" % version
        wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: verl\nVersion: %s\n" % version)
        wheel.writestr(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(info + "RECORD", "")
    return path


def test_a_release_from_an_offline_wheelhouse_is_downloaded_and_unpacked_once(ws, tmp_path):
    fake_wheel(tmp_path / "wheelhouse", "0.5.0")
    stamp = {"kind": "registry", "release": "0.5.0"}
    first = source(ws, stamp, site={"wheelhouse": str(tmp_path / "wheelhouse")})
    assert first["changed"] and not first.get("failed"), first
    assert (ws / ".grpo" / "dl" / "verl-0.5.0" / "verl-0.5.0-py3-none-any.whl").is_file()
    assert (ws / "verl" / "verl" / "__init__.py").is_file()
    assert "Version: 0.5.0" in (ws / "verl" / "verl-0.5.0.dist-info" / "METADATA").read_text()
    assert stamp_of(ws) == stamp
    again = source(ws, stamp, site={"wheelhouse": str(tmp_path / "wheelhouse")})
    assert again["changed"] is False and not again.get("failed"), again


def test_a_release_the_index_does_not_serve_names_the_index_setting(ws):
    result = source(ws, {"kind": "registry", "release": "0.6.0"}, index_url="http://127.0.0.1:9/simple",
                    env={"PIP_RETRIES": "1", "PIP_TIMEOUT": "2", "PIP_CONFIG_FILE": os.devnull})
    assert result.get("failed"), result
    assert result["msg"].startswith("verl==0.6.0 cannot be downloaded: the package index does not answer")
    assert "deps_pinning_index_url" in result["msg"] and result["msg"].endswith("Nothing was installed.")
    assert not (ws / "verl").exists()


def test_a_failed_download_during_a_switch_says_the_workspace_is_as_it_was(ws, tmp_path):
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "__init__.py").write_text("# mine\n")
    (ws / ".grpo" / "verl-source.json").write_text('{"kind": "path", "path": "/somewhere"}')
    empty = tmp_path / "empty-wheelhouse"
    empty.mkdir()
    result = source(ws, {"kind": "registry", "release": "0.5.0"}, site={"wheelhouse": str(empty)},
                    env={"PIP_CONFIG_FILE": os.devnull})
    assert result.get("failed"), result
    assert result["msg"].startswith("verl==0.5.0 cannot be downloaded: ")
    assert result["msg"].endswith("Nothing was installed, and the workspace is exactly as it was (it holds path): "
                                  "set deps_pinning_verl_source back to it, or make the release reachable.")
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "# mine\n"
    assert sorted(os.listdir(ws)) == [".grpo", "verl"]


def test_a_tree_that_is_not_the_release_is_refused(ws):
    """A verl tree already there (no stamp) is not unpacked over; without the release's METADATA it is refused."""
    fake_wheel(ws / ".grpo" / "dl" / "verl-0.5.0", "0.5.0")  # downloaded before
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "__init__.py").write_text("# some other verl\n")
    result = source(ws, {"kind": "registry", "release": "0.5.0"})
    assert result.get("failed") and result["msg"].startswith("%s does not hold verl 0.5.0" % (ws / "verl")), result
    assert not (ws / ".grpo" / "verl-source.json").exists()
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "# some other verl\n"


# -- tarball and path --------------------------------------------------------------------------------------------

def git_archive(upstream, tmp_path):
    """``git archive --format=tar.gz --prefix=verl/`` of the pinned commit, as the README asks for one."""
    path = tmp_path / "verl.tar.gz"
    git("-C", upstream["repo"], "archive", "--format=tar.gz", "--prefix=verl/", "-o", str(path), upstream["pinned"])
    return str(path)


def test_a_proven_tarball_is_unpacked_once(ws, tmp_path, upstream):
    tarball = git_archive(upstream, tmp_path)
    proof = run_module("verl_tarball", {"path": tarball, "commit": upstream["pinned"]})
    assert proof["strip_components"] == 1, proof
    stamp = {"kind": "tarball", "tarball": tarball, "commit": upstream["pinned"]}
    first = source(ws, stamp, tarball_file=tarball, strip_components=proof["strip_components"])
    assert first["changed"] and not first.get("failed"), first
    assert (ws / "verl" / "verl" / "__init__.py").read_text() == "__version__ = 'pinned'\n"
    assert stamp_of(ws) == stamp
    again = source(ws, stamp, tarball_file=tarball, strip_components=1)
    assert again["changed"] is False and not again.get("failed"), again


def test_check_mode_before_a_tarball_is_proven_unpacks_nothing(ws, tmp_path, upstream):
    stamp = {"kind": "tarball", "tarball": "https://example.com/verl.tar.gz", "commit": upstream["pinned"]}
    result = source(ws, stamp, check=True, tarball_file=str(tmp_path / "not-downloaded.tar.gz"))
    assert result["changed"] and not result.get("failed"), result
    assert sorted(os.listdir(ws)) == [".grpo"]


def test_a_path_without_a_tree_is_refused_naming_the_setting(ws, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    result = run_module("verl_source", {"source": {"kind": "path", "path": str(mine)}, "dest": str(mine),
                                        "state_dir": str(ws / ".grpo"), "setting_names": NAMES})
    assert result.get("failed"), result
    assert result["msg"] == ("%s holds no verl source tree (no verl/__init__.py): check deps_pinning_verl_source and "
                             "its setting." % mine)
    (mine / "verl").mkdir()
    (mine / "verl" / "__init__.py").write_text("")
    ok = run_module("verl_source", {"source": {"kind": "path", "path": str(mine)}, "dest": str(mine),
                                    "state_dir": str(ws / ".grpo")})
    assert ok["changed"] and stamp_of(ws) == {"kind": "path", "path": str(mine)}, ok
    assert sorted(os.listdir(mine)) == ["verl"]  # the user's own tree: nothing added to it


def test_a_path_source_never_moves_the_tree(ws, tmp_path):
    mine = tmp_path / "mine"
    (mine / "verl").mkdir(parents=True)
    (mine / "verl" / "__init__.py").write_text("")
    (ws / ".grpo" / "verl-source.json").write_text('{"kind": "registry", "release": "0.5.0"}')
    result = run_module("verl_source", {"source": {"kind": "path", "path": str(mine)}, "dest": str(mine),
                                        "state_dir": str(ws / ".grpo")})
    assert result["switched"] is False and result["replaced"] is None, result
    assert (mine / "verl" / "__init__.py").is_file()


def test_the_tar_members_are_never_owned_by_the_archive(ws, tmp_path, upstream):
    """The tree gets the running user's owner, not the archive's (root would otherwise keep uid 4242)."""
    path = tmp_path / "owned.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b""
        info = tarfile.TarInfo("verl/verl/__init__.py")
        info.size, info.uid, info.gid, info.mode = len(data), 4242, 4242, 0o600
        tar.addfile(info, io.BytesIO(data))
    stamp = {"kind": "tarball", "tarball": str(path), "commit": upstream["pinned"]}
    result = source(ws, stamp, tarball_file=str(path), strip_components=1)
    assert not result.get("failed"), result
    assert os.stat(ws / "verl" / "verl" / "__init__.py").st_uid == os.getuid()
