"""The deps stage's install is polled and bounded by deps_pinning_install_minutes, and a time-out is refused naming
that setting (issue 46, item 4); the refusal through a real ansible-playbook run is
tests/unit/common/test_time_limits.py's, here that the stage's install is wired to it."""

import os

import yaml

from grpo_testkit import ROOT


def test_the_install_is_polled_bounded_by_its_setting_and_a_time_out_names_it():
    with open(os.path.join(ROOT, "roles", "deps_pinning", "tasks", "install.yml"), encoding="utf-8") as handle:
        tasks = {task["name"]: task for task in yaml.safe_load(handle)}
    install = tasks["Install | Plan, install what the pins need, verify"]
    assert install["async"] == "{{ (deps_pinning_install_minutes | int) * 60 }}"
    assert install["failed_when"] == "deps_pinning_result is failed and not (deps_pinning_result | timed_out)"
    refuse = tasks["Install | Refuse an install that ran out of time, naming the setting to raise"]
    assert refuse["when"] == "deps_pinning_result | timed_out"
    assert "'deps_pinning_install_minutes', deps_pinning_install_minutes" in refuse["ansible.builtin.fail"]["msg"]
    names = list(tasks)
    assert names.index(refuse["name"]) == names.index(install["name"]) + 1
