"""The site's proxy reaches pip and git as their environment, never their command line (issue 46, item 3): ``ps``
shows every user of the host a process's arguments, and a proxy URL may hold a password. pip reads HTTP_PROXY and
HTTPS_PROXY (Python's urllib.request.getproxies_environment, which pip's requests session uses), git's curl reads
``http_proxy`` and ``HTTPS_PROXY`` (curl's manual, "ENVIRONMENT")."""

import json

import pytest
from grpo_testkit import fake_pip_python, run_module

from ascend_grpo.deps import venv_install, verl_checkout

SECRET = "pr0xy-s3cret"
URL = "http://builder:%s@proxy.example.internal:3128" % SECRET
PROXY = {"http_proxy": URL, "https_proxy": URL, "no_proxy": "localhost,.example.internal"}
EXPECTED = {"HTTP_PROXY": URL, "http_proxy": URL, "HTTPS_PROXY": URL, "https_proxy": URL,
            "NO_PROXY": "localhost,.example.internal", "no_proxy": "localhost,.example.internal"}
COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"


def shown(argv):
    return " ".join(str(word) for word in argv)


def test_pinned_venv_gives_pip_the_proxy_in_its_environment_only(tmp_path):
    fake, log = fake_pip_python(tmp_path)
    profile = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}
    result = run_module("pinned_venv", {"profile": profile, "python": str(fake), "state_dir": str(tmp_path / "st"),
                                         "proxy": PROXY, "setting_names": {"proxy": "grpo_proxy"}})
    assert result.get("failed"), result  # the fake pip finds no six: the calls are what matters
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls, result
    for call in calls:
        assert {k: v for k, v in call["env"].items() if k.lower().endswith("_proxy")} == EXPECTED
        assert SECRET not in shown(call["argv"]) and "proxy" not in shown(call["argv"])
    assert SECRET not in json.dumps(result)


def test_pinned_venv_passes_the_proxy_to_every_command_it_runs(tmp_path):
    calls = []

    def run_command(argv, environ_update=None):
        calls.append((list(argv), dict(environ_update or {})))
        return 1, "", "ERROR: Could not find a version that satisfies the requirement six==1.16.0"

    profile = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}
    params = {"state": "present", "profile": profile, "paths": {}, "site": {}, "index_url": "", "extra_index_urls": [],
              "python": "/venv/bin/python", "accept_drift": [], "state_dir": str(tmp_path / "st"),
              "editable_name": "verl", "plan_platform": {}, "download_cache": None, "source": None,
              "fail_on_drift": True, "venv": None, "venv_python": None, "venv_site_packages": False, "proxy": PROXY}
    with pytest.raises(venv_install.VenvError):
        venv_install.install(params, False, run_command)
    assert calls and all({k: v for k, v in env.items() if k.lower().endswith("_proxy")} == EXPECTED
                         for _argv, env in calls)
    assert not any(SECRET in shown(argv) for argv, _env in calls)
    assert SECRET in venv_install.hidden_values(params)


def test_a_bad_proxy_is_refused_naming_the_setting_before_pip_runs(tmp_path):
    fake, log = fake_pip_python(tmp_path)
    profile = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}
    result = run_module("pinned_venv", {"profile": profile, "python": str(fake), "state_dir": str(tmp_path / "st"),
                                         "proxy": {"https_proxy": "builder:%s@proxy:3128" % SECRET},
                                         "setting_names": {"proxy": "grpo_proxy"}})
    assert result["failed"] and result["field"] == "proxy"
    assert result["msg"].startswith("grpo_proxy.https_proxy (") and "is not a proxy URL" in result["msg"]
    assert SECRET not in json.dumps(result) and not log.exists()


def source_params(tmp_path, source, **extra):
    return dict({"source": source, "dest": str(tmp_path / "verl"), "state_dir": str(tmp_path / ".grpo"),
                 "tarball_file": None, "strip_components": None, "python": "/venv/bin/python", "site": {},
                 "index_url": "", "extra_index_urls": [], "proxy": PROXY}, **extra)


def recording(calls, rc=1):
    def run_command(argv, environ_update=None):
        calls.append((list(argv), dict(environ_update or {})))
        return rc, "", "fatal: unable to access the repository"
    return run_command


def test_git_clones_through_the_proxy_in_its_environment(tmp_path):
    calls = []
    repo = "https://u:repo-pass@git.example.com/verl.git"
    with pytest.raises(verl_checkout.ModuleFailure):
        verl_checkout.source_step(source_params(tmp_path, {"kind": "git", "repo": repo, "commit": COMMIT}), False,
                                  recording(calls))
    clones = [(argv, env) for argv, env in calls if argv[:2] == ["git", "clone"]]
    assert clones, calls
    for argv, env in clones:
        assert {k: v for k, v in env.items() if k.lower().endswith("_proxy")} == EXPECTED
        assert SECRET not in shown(argv)
        # the repository's own password still goes its own way (a credential helper's environment)
        assert env["GRPO_GIT_PASSWORD"] == "repo-pass" and "repo-pass" not in shown(argv)


def test_a_release_is_downloaded_by_pip_through_the_proxy(tmp_path):
    calls = []
    p = source_params(tmp_path, {"kind": "registry", "release": "0.5.0"}, index_url="https://mirror.example/simple")
    with pytest.raises(verl_checkout.ModuleFailure) as err:
        verl_checkout.source_step(p, False, recording(calls))
    downloads = [(argv, env) for argv, env in calls if argv[1:4] == ["-m", "pip", "download"]]
    assert downloads, calls
    for argv, env in downloads:
        assert {k: v for k, v in env.items() if k.lower().endswith("_proxy")} == EXPECTED
        assert env["PIP_INDEX_URL"] == "https://mirror.example/simple"
        assert SECRET not in shown(argv)
    assert SECRET not in err.value.msg
    assert SECRET in verl_checkout.source_credentials(p)


def test_verl_source_masks_the_proxy_in_its_result(tmp_path):
    tree = tmp_path / "own-verl"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl" / "__init__.py").write_text("")
    result = run_module("verl_source", {"source": {"kind": "path", "path": str(tree)}, "dest": str(tree),
                                         "state_dir": str(tmp_path / ".grpo"), "proxy": PROXY})
    assert not result.get("failed"), result
    assert SECRET not in json.dumps(result)
    bad = run_module("verl_source", {"source": {"kind": "path", "path": str(tree)}, "dest": str(tree),
                                      "state_dir": str(tmp_path / ".grpo"), "proxy": {"http_proxy": "ftp://x"},
                                      "setting_names": {"proxy": "grpo_proxy"}})
    assert bad["failed"] and bad["field"] == "proxy" and bad["msg"].startswith("grpo_proxy.http_proxy (")
    assert "is not a proxy URL" in bad["msg"]  # the value itself masked as every value of a no_log option
