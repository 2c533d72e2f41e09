"""The verl_source and verl_tarball modules' engine calls, in-process: what each returns or fails with (the
tarball named ``tarball``, its pax comment dropped, URLs masked, the credentials kept out of the output)."""

import hashlib

import pytest

from ascend_grpo.deps import verl_checkout
from grpo_testkit.upstream import plain_verl_tarball

COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"


def plain_tarball(path):
    """A tarball without a commit id and its sha256."""
    made = plain_verl_tarball(path)
    with open(made, "rb") as handle:
        return made, hashlib.sha256(handle.read()).hexdigest()


def test_a_proven_tarball_is_returned_as_tarball_without_its_comment(tmp_path):
    path, digest = plain_tarball(tmp_path / "verl-src.tar.gz")
    found = verl_checkout.tarball_step({"path": path, "commit": COMMIT, "sha256": digest, "origin": ""})
    assert found["changed"] is False and found["tarball"] == path and "path" not in found
    assert "comment" not in found and found["sha256"] == digest and found["proof"] == "sha256"
    assert found["strip_components"] == 1


def test_a_refused_tarball_names_it_with_the_origins_password_masked(tmp_path):
    origin = "https://user:hunter22@mirror.example.com/verl.tar.gz"
    p = {"path": str(tmp_path / "absent.tar.gz"), "commit": COMMIT, "sha256": "", "origin": origin}
    with pytest.raises(verl_checkout.ModuleFailure) as err:
        verl_checkout.tarball_step(p)
    assert "hunter22" not in err.value.msg and err.value.result == {"tarball": p["path"]}
    assert set(verl_checkout.tarball_credentials(p)) == {"hunter22"}


def test_the_source_steps_credentials_come_from_the_source_and_the_site():
    p = {"source": {"kind": "git", "repo": "https://u:repo-pass@git.example.com/verl.git"},
         "site": {"PIP_INDEX_URL": "https://u:site-pass@pypi.example.com/simple"}}
    assert set(verl_checkout.source_credentials(p)) == {"repo-pass", "site-pass"}


def test_a_refused_source_fails_naming_the_tree_and_runs_nothing(tmp_path):
    asked = []
    p = {"source": {"kind": "ftp"}, "dest": str(tmp_path / "verl"), "state_dir": str(tmp_path / ".grpo"),
         "tarball_file": None, "strip_components": None, "python": None, "site": {}, "index_url": "",
         "extra_index_urls": []}
    with pytest.raises(verl_checkout.ModuleFailure) as err:
        verl_checkout.source_step(p, False, lambda argv, environ_update=None: asked.append(argv))
    assert err.value.msg.startswith("{source} must be one of git, registry, tarball, path")
    assert err.value.result == {"dest": p["dest"]} and asked == []
