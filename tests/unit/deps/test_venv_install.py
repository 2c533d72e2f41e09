"""The pinned_venv module's engine (ascend_grpo.deps.venv_install), in-process: the module's documented ways out
(a stack that holds runs no pip; state=verified fails on drift; check mode makes no venv) with a fake
run_command, no ansible process."""
import json
import os
import sys

import pytest

from ascend_grpo.deps import venv_install

PROFILE = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}


def _params(tmp_path, **changes):
    """The module's arguments as AnsibleModule hands them over: every option, at its default unless given."""
    params = dict(state="present", profile=PROFILE, paths={}, site={}, index_url="", extra_index_urls=[],
                  python="/fake/python3", accept_drift=[], state_dir=str(tmp_path / "state"), editable_name="verl",
                  plan_platform={}, download_cache=None, source=None, fail_on_drift=True, venv=None,
                  venv_python=None, venv_site_packages=False)
    params.update(changes)
    return params


def _probe_only(installed, calls):
    """A run_command that answers the engine's probe of the environment (``python -c <probe> verl``) with the
    ``installed`` versions, records every call and refuses anything else (pip would be a change)."""
    def run_command(argv, environ_update=None):
        calls.append(list(argv))
        if len(argv) == 4 and argv[1] == "-c" and argv[3] == "verl":
            return 0, json.dumps({"versions": installed, "editable_url": None, "machine": "x86_64",
                                  "python": "3.11.7"}), ""
        return 1, "", "not expected in this test: %s" % argv
    return run_command


def test_verified_reports_the_drift_of_the_core_packages_and_runs_no_pip(tmp_path):
    calls = []
    result = venv_install.install(_params(tmp_path, state="verified"), False, _probe_only({"six": "1.16.0"}, calls))
    assert result["report"]["ok"] is True and result["satisfied"] is True
    assert result["changed"] is False
    assert [argv[1] for argv in calls] == ["-c"]  # the probe, and nothing else
    assert os.path.isfile(os.path.join(str(tmp_path / "state"), "deps-drift.json"))


def test_verified_fails_on_drift_naming_the_package_and_the_setting(tmp_path):
    calls = []
    with pytest.raises(venv_install.VenvError) as err:
        venv_install.install(_params(tmp_path, state="verified"), False, _probe_only({"six": "1.15.0"}, calls))
    assert "drift in profile t: six" in err.value.msg and "accept by name with {accept_drift} only" in err.value.msg
    assert err.value.result["report"]["drift"] == ["six"]


def test_an_invalid_profile_is_refused_before_anything_runs(tmp_path):
    calls = []
    with pytest.raises(venv_install.VenvError, match="profile t is not valid"):
        venv_install.install(_params(tmp_path, profile={"name": "t"}), False, _probe_only({}, calls))
    assert calls == []


def test_check_mode_says_it_would_make_the_venv_and_makes_nothing(tmp_path):
    venv = str(tmp_path / "venvs" / "stack")
    calls = []
    result = venv_install.install(_params(tmp_path, python=None, venv=venv, venv_python=sys.executable), True,
                                  _probe_only({}, calls))
    assert result["changed"] is True and result["venv"]["action"] == "made"
    assert result["msg"].startswith("would make the virtual environment %s" % venv)
    assert not os.path.exists(venv) and calls == []


def test_the_passwords_in_a_site_or_a_source_are_hidden():
    secret = "s3cret-pass"
    params = {"site": {"find_links": ["https://user:%s@mirror.example.org/wheels/" % secret]}, "source": None}
    assert secret in venv_install.hidden_values(params)


# ---- state=looked: whether state=present would run pip, changing nothing when it would ------------------------------
# (the eval stage looks first and runs the install, polled and bounded by grpo_eval_install_minutes, only then)

def _installed_last(tmp_path, profile=PROFILE):
    """The note state=present leaves after installing ``profile``."""
    from ascend_grpo.deps import pip_runner

    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    (state / "deps-installed.json").write_text(json.dumps(
        {"profile": profile["name"], "profile_sha256": pip_runner.profile_digest(profile, {})}))


def test_looked_with_the_pins_holding_does_what_present_does_then_and_runs_no_pip(tmp_path):
    _installed_last(tmp_path)
    looked_calls, present_calls = [], []
    looked = venv_install.install(_params(tmp_path, state="looked"), False, _probe_only({"six": "1.16.0"}, looked_calls))
    present = venv_install.install(_params(tmp_path), False, _probe_only({"six": "1.16.0"}, present_calls))
    assert looked["satisfied"] is True and looked["changed"] is False
    assert looked == present
    assert [argv[1] for argv in looked_calls] == ["-c"]  # the probe, and nothing else
    assert os.path.isfile(os.path.join(str(tmp_path / "state"), "deps-drift.json"))


def test_looked_on_drift_says_pip_must_run_and_neither_fails_nor_plans(tmp_path):
    _installed_last(tmp_path)
    cache = tmp_path / "cache"
    calls = []
    result = venv_install.install(_params(tmp_path, state="looked", download_cache=str(cache)), False,
                                  _probe_only({"six": "1.15.0"}, calls))
    assert result["satisfied"] is False and result["changed"] is False
    assert result["report"]["drift"] == ["six"] and "1.15.0" in result["table"]
    assert [argv[1] for argv in calls] == ["-c"]  # no pip: no plan, no install
    assert not cache.exists()


def test_looked_after_another_profile_was_installed_says_pip_must_run_where_verified_does_not(tmp_path):
    _installed_last(tmp_path, dict(PROFILE, constraints=["wheel<1"]))
    looked = venv_install.install(_params(tmp_path, state="looked"), False, _probe_only({"six": "1.16.0"}, []))
    verified = venv_install.install(_params(tmp_path, state="verified"), False, _probe_only({"six": "1.16.0"}, []))
    assert looked["satisfied"] is False and verified["satisfied"] is True


def test_looked_at_a_venv_still_to_be_made_makes_nothing(tmp_path):
    venv = str(tmp_path / "venvs" / "opencompass")
    calls = []
    result = venv_install.install(_params(tmp_path, state="looked", python=None, venv=venv,
                                          venv_python=sys.executable), False, _probe_only({}, calls))
    assert result["satisfied"] is False and result["changed"] is False
    assert result["venv"]["action"] == "made" and "does not exist" in result["msg"]
    assert not os.path.exists(venv) and calls == []
