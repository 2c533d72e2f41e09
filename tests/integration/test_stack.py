"""The pip side of the deps engine against a real, throwaway environment and the real package index."""

import os
import subprocess
import sys

import pytest

from ascend_grpo.common import runner
from ascend_grpo.deps import pins, pip_runner

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    return str(root / "bin" / "python")


def run_profile(profile, python, state_dir, accept=()):
    """What the module does for state=present, without Ansible."""
    os.makedirs(state_dir, exist_ok=True)
    arch = pip_runner.probe(python, "none")["machine"]
    plan = pip_runner.plan(profile, {}, None, arch, {}, python, state_dir, accept)
    if plan["blocking"]:
        return plan, None
    pip_runner.install(pins.install_steps(profile, {}, None, arch, {}, python,
                                          pip_runner.write_constraints(profile, state_dir)))
    after = pip_runner.probe(python, "none")
    return plan, after


def test_removal_runs_after_the_phase_that_brings_the_package_back(venv, tmp_path):
    profile = {
        "name": "removal", "constraints": True, "pins": {"python-dateutil": "2.9.0.post0"},
        "phases": [
            {"name": "drop-six", "remove": ["six"]},  # listed first, as the guide removes uvloop before vllm
            {"name": "dateutil", "requirements": ["python-dateutil==2.9.0.post0"]},  # brings six
        ],
    }
    plan, after = run_profile(profile, venv, str(tmp_path / "state"))
    assert [(r["package"], r["planned"], r["status"]) for r in plan["rows"]] == [
        ("python-dateutil", "2.9.0.post0", "ok")]
    assert after["versions"]["python-dateutil"] == "2.9.0.post0"
    assert "six" not in after["versions"]
    report = pins.check_installed(profile["pins"], after["versions"])
    assert report["ok"]


def test_a_pin_a_later_phase_would_move_fails_before_installing(venv, tmp_path):
    profile = {
        "name": "moving", "constraints": False, "pins": {"urllib3": "2.0.7"},
        "phases": [
            {"name": "pins", "requirements": ["urllib3==2.0.7"]},
            {"name": "later", "requirements": ["botocore==1.29.0"]},  # needs urllib3<1.27
        ],
    }
    before = pip_runner.probe(venv, "none")["versions"]
    plan, after = run_profile(profile, venv, str(tmp_path / "state"))
    assert after is None
    assert plan["blocking"] == ["urllib3"]
    row = plan["rows"][0]
    assert row["status"] == "conflict"
    assert "botocore 1.29.0 wants urllib3<1.27 and >=1.25.4" in row["pulled_by"]
    assert pip_runner.probe(venv, "none")["versions"] == before  # nothing installed


def test_accepted_drift_installs_and_is_reported(venv, tmp_path):
    profile = {
        "name": "accepted", "constraints": False, "pins": {"urllib3": "2.0.7"},
        "phases": [
            {"name": "pins", "requirements": ["urllib3==2.0.7"]},
            {"name": "later", "requirements": ["botocore==1.29.0"], "no_deps": False},
        ],
    }
    plan, after = run_profile(profile, venv, str(tmp_path / "state"), accept=["urllib3"])
    assert plan["accepted"] == ["urllib3"]
    # installed in order without constraints, the later phase moves the pin, as in the guide
    assert after["versions"]["urllib3"].startswith("1.26.")
    report = pins.check_installed(profile["pins"], after["versions"], accept=["urllib3"])
    assert report["ok"] and report["rows"][0]["status"] == "drift" and report["rows"][0]["accepted"]


def test_pin_that_does_not_exist(venv, tmp_path):
    profile = {"name": "ghost", "constraints": True, "pins": {"six": "0.0.42"},
               "phases": [{"name": "p", "requirements": ["six==0.0.42"]}]}
    with pytest.raises(pip_runner.StackError, match="no distribution of six==0.0.42"):
        run_profile(profile, venv, str(tmp_path / "state"))


def test_index_that_does_not_answer(venv, tmp_path):
    profile = {"name": "offline", "constraints": True, "pins": {"six": "1.16.0"},
               "phases": [{"name": "p", "requirements": ["six==1.16.0"], "index_url": "http://127.0.0.1:9/simple"}]}
    env = {"PIP_CONFIG_FILE": os.devnull}
    state = str(tmp_path / "state")
    os.makedirs(state)
    with pytest.raises(pip_runner.StackError, match="the package index does not answer"):
        pip_runner.plan(profile, {}, None, "x86_64", {}, venv, state,
                        run=lambda argv, e=None: runner.run_command(argv, dict(e or {}, **env)))


def test_download_cache_makes_a_second_install_need_no_index(tmp_path_factory, tmp_path):
    """The first plan downloads into the wheel cache; a fresh environment then plans (without a download pass: the
    first plan found everything in the cache) and installs the same profile with the index unreachable (a closed
    port), from the cache alone."""
    profile = {
        "name": "cached", "constraints": True, "pins": {"python-dateutil": "2.9.0.post0"},
        "phases": [{"name": "dateutil", "requirements": ["python-dateutil==2.9.0.post0"]},
                   {"name": "fixed", "requirements": ["idna==3.7"], "no_deps": True}],
    }
    cache = tmp_path / "wheels"
    cache.mkdir()
    site = {"wheel_cache": str(cache)}
    calls = []

    def run(argv, env=None):
        calls.append(argv)
        # this machine's own pip settings name local indexes; only the test's sources count here
        return runner.run_command(argv, dict(env or {}, PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS=""))

    for round_, extra in (("first", {}), ("offline", {"index_url": "http://127.0.0.1:9/simple"})):
        calls.clear()
        root = tmp_path_factory.mktemp("venv-" + round_)
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        python = str(root / "bin" / "python")
        state = tmp_path / round_
        state.mkdir()
        arch = pip_runner.probe(python, "none")["machine"]
        plan = pip_runner.plan(profile, {}, None, arch, dict(site, **extra), python, str(state), run=run)
        assert not plan["blocking"], plan
        downloads = [c for c in calls if "download" in c]
        # first: the resolved set, the no-deps package, the build tools; then none (the cache holds it all)
        assert len(downloads) == (3 if round_ == "first" else 0), downloads
        assert plan["from_cache"]
        pip_runner.install(pins.install_steps(profile, {}, None, arch, dict(site, **extra), python,
                                              pip_runner.write_constraints(profile, str(state))))
        versions = pip_runner.probe(python, "none")["versions"]
        assert versions["python-dateutil"] == "2.9.0.post0" and versions["six"] and versions["idna"] == "3.7"
    # what the first plan resolved (dateutil and its six) and the no-deps package, as files
    names = sorted(path.name.split("-")[0].lower() for path in cache.iterdir() if path.is_file())
    assert names == ["idna", "python_dateutil", "setuptools", "six", "wheel"]


def test_no_download_in_check_mode_and_none_of_a_package_built_from_source(tmp_path):
    calls = []

    def run(argv, env=None):
        calls.append(argv)
        if "--report" in argv:
            with open(argv[argv.index("--report") + 1], "w", encoding="utf-8") as handle:
                handle.write('{"install": []}')
        return 0, "", ""

    profile = {"name": "p", "constraints": False, "pins": {},
               "phases": [{"name": "a", "requirements": ["six"]},
                          {"name": "built", "requirements": ["vllm==0.13.0"], "no_deps": True, "no_binary": ["vllm"]},
                          {"name": "plain", "requirements": ["idna==3.7"], "no_deps": True}]}
    site = {"wheel_cache": str(tmp_path)}
    pip_runner.plan(profile, {}, None, "x86_64", site, "py", str(tmp_path), run=run, fill_cache=False)
    assert [c for c in calls if "download" in c] == []
    assert ["--find-links", str(tmp_path)] == calls[-1][calls[-1].index("--find-links"):][:2]
    calls.clear()
    pip_runner.plan(profile, {}, None, "x86_64", site, "py", str(tmp_path), run=run)
    downloads = [c for c in calls if "download" in c]
    assert [c[-1] for c in downloads] == ["six", "idna==3.7", "wheel"]
    assert "--no-deps" in downloads[1] and not any("vllm==0.13.0" in c for c in downloads)
    # the downloads worked: the dry run and the install phases take the cache alone, but for the phase built from
    # source (its sdist is fetched at install)
    assert calls[-1][calls[-1].index("--no-index") + 1:][:2] == ["--find-links", str(tmp_path)]
    steps = pins.install_steps(profile, {}, None, "x86_64", dict(site, cache_only=True), "py")
    assert ["--no-index" in s["argv"] for s in steps] == [True, False, True]
    assert all(c[c.index("-d") + 1] == str(tmp_path) for c in downloads)


def test_a_phase_that_fails_from_the_cache_alone_is_run_again_with_the_index(tmp_path):
    profile = {"name": "p", "constraints": False, "pins": {},
               "phases": [{"name": "a", "requirements": ["needs-a-build-tool"]}]}
    site = {"wheel_cache": str(tmp_path), "cache_only": True, "index_url": "https://mirror.example/simple"}
    steps = pins.install_steps(profile, {}, None, "x86_64", site, "py")
    calls = []

    def run(argv, env=None):
        calls.append(argv)
        return (1, "", "no matching distribution for hatchling") if "--no-index" in argv else (0, "", "")

    pip_runner.install(steps, run=run)
    assert ["--no-index" in c for c in calls] == [True, False]
    assert calls[1][calls[1].index("--index-url") + 1] == "https://mirror.example/simple"
