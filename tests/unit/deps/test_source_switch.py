"""A new verl source is had and proven before the old tree moves: the issue's case, the deps stage of a workspace
that holds verl from a tarball run with the git source while the repository cannot be reached (the stage used to
move the tree aside first, then fail, leaving a workspace the train stage could not use)."""

import hashlib
import json
import os

from grpo_testkit import run_role

COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"


def _snapshot(root):
    """Every path under ``root`` with its content's sha256 (folders: None)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                out[os.path.relpath(os.path.join(folder, name), root)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def test_an_unreachable_new_source_leaves_the_workspace_as_it_was(tmp_path):
    ws = tmp_path / "ws"
    (ws / "verl" / "verl").mkdir(parents=True)
    (ws / "verl" / "verl" / "__init__.py").write_text("# edited by the patch stage\n")
    (ws / ".grpo").mkdir()
    stamp = {"kind": "tarball", "tarball": "/upstream/verl-%s.tar.gz" % COMMIT, "commit": COMMIT}
    (ws / ".grpo" / "verl-source.json").write_text(json.dumps(stamp))
    before = _snapshot(ws)
    done = run_role(tmp_path, "deps_pinning", {
        "grpo_workspace": str(ws), "deps_pinning_verl_source": "git", "deps_pinning_verl_version": COMMIT,
        "deps_pinning_verl_repo": "file://%s/no-such-repo.git" % tmp_path})
    assert done.returncode != 0
    # one refusal, by the source step itself
    assert [t for _h, t, _m in done.failed] == ["Source | Put verl's source tree in place and stamp it"], done.failed
    msg = done.failed[-1][2]
    assert "The verl source changed (deps_pinning_verl_source is git at %s" % COMMIT in msg
    assert "the workspace holds tarball /upstream/verl-%s.tar.gz" % COMMIT in msg
    assert "exactly as they were" in msg
    after = _snapshot(ws)
    # nothing moved, nothing left behind; only the stage's own state and (empty) download cache folders may be new
    mine = (".grpo", ".cache")
    assert {k: v for k, v in after.items() if not k.startswith(mine)} == \
        {k: v for k, v in before.items() if not k.startswith(mine)}
    assert after[".grpo/verl-source.json"] == before[".grpo/verl-source.json"]
    assert not [n for n in os.listdir(ws) if n.startswith("verl.")]


def test_an_unreachable_repository_on_a_fresh_workspace_is_named_with_the_setting(tmp_path):
    """No tree yet and the git source cannot be had: the refusal names the settings (it once passed the clone's
    check, failed_when clearing its failure, and stopped on git's own "cannot change to .../verl")."""
    ws = tmp_path / "ws"
    ws.mkdir()
    done = run_role(tmp_path, "deps_pinning", {
        "grpo_workspace": str(ws), "deps_pinning_verl_source": "git", "deps_pinning_verl_version": COMMIT,
        "deps_pinning_verl_repo": "file://%s/no-such-repo.git" % tmp_path})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Source | Put verl's source tree in place and stamp it", done.failed
    assert "Cannot check out verl commit %s from file://%s/no-such-repo.git" % (COMMIT, tmp_path) in msg
    assert "deps_pinning_verl_repo" in msg and "Nothing was installed" in msg
    assert not (ws / "verl").exists()
