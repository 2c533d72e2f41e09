"""OpenCompass's venv install is polled and bounded by grpo_eval_install_minutes (issue 46, item 4), and a venv whose
pins hold waits for no poll: a quick look (pinned_venv state=looked, tested in tests/unit/deps/test_venv_install.py)
decides whether the install, the only async task, runs at all. The refusal of a time-out through a real
ansible-playbook run is tests/unit/common/test_time_limits.py's; here, that the stage's tasks are wired to it."""

import os

import yaml

from grpo_testkit import ROOT

ROLE = os.path.join(ROOT, "roles", "grpo_eval")


def _venv_tasks():
    with open(os.path.join(ROLE, "tasks", "venv.yml"), encoding="utf-8") as handle:
        return {task["name"]: task for task in yaml.safe_load(handle)}


def test_the_look_runs_first_and_the_install_only_when_pip_must_run():
    tasks = _venv_tasks()
    names = list(tasks)
    look = tasks["Venv | Look at OpenCompass's virtual environment (pins holding, pip is not run)"]
    install = tasks["Venv | Make OpenCompass's virtual environment and install its pins"]
    assert names.index(look["name"]) < names.index(install["name"])
    assert look["pinned_venv"]["state"] == "looked" and "async" not in look
    assert install["pinned_venv"]["state"] == "present"
    # the same venv, profile, index and cache: only the state differs
    assert {k: v for k, v in look["pinned_venv"].items() if k != "state"} == \
        {k: v for k, v in install["pinned_venv"].items() if k != "state"}
    assert install["when"] == "not _grpo_eval_venv_looked.satisfied"


def test_the_install_is_polled_bounded_by_its_setting_and_a_time_out_names_it():
    tasks = _venv_tasks()
    install = tasks["Venv | Make OpenCompass's virtual environment and install its pins"]
    assert install["async"] == "{{ (grpo_eval_install_minutes | int) * 60 }}" and 0 < install["poll"] <= 15
    assert install["failed_when"] == ("_grpo_eval_venv_installed is failed and not "
                                      "(_grpo_eval_venv_installed | timed_out)")
    refuse = tasks["Venv | Refuse an install that ran out of time, naming the setting to raise"]
    assert refuse["when"] == "_grpo_eval_venv_installed | timed_out"
    assert "'grpo_eval_install_minutes', grpo_eval_install_minutes" in refuse["ansible.builtin.fail"]["msg"]


def test_the_setting_is_documented_validated_and_defaulted():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)["argument_specs"]["main"]["options"]["grpo_eval_install_minutes"]
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert spec["type"] == "int" and spec["default"] == defaults["grpo_eval_install_minutes"] == 120
    assert spec["description"].rstrip().endswith("Check: count from 1 to 10080.")


def test_the_settings_check_refuses_a_time_limit_that_is_no_positive_whole_number():
    from ascend_grpo.common import settings

    with open(os.path.join(ROLE, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)
    for bad in (0, -5, "soon"):
        (problem,) = [p["message"] for p in settings.check_settings(spec, {"grpo_eval_install_minutes": bad})]
        assert problem.startswith("grpo_eval_install_minutes"), problem
    assert settings.check_settings(spec, {"grpo_eval_install_minutes": 120}) == []
