"""site.yml validates every stage's settings before the container stage changes anything (kubespray's
validate_inventory): a bad value of the eval stage, the last one, fails in the first seconds naming the setting, not
after hours of training; a --tags run of one stage validates first too.

Run in check mode against an inventory whose one NPU host is this machine: no task of the container stage may start
before the refusal."""

import json
import sys

import yaml
from grpo_testkit import playbook

VALIDATE = "Refuse a bad value of any stage's setting, naming the setting and the fix"


def _inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"npu_hosts": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    return str(path)


def _container_stage_started(done):
    """The events of any task of the container stage (its role, its playbook)."""
    return [e["event_data"].get("task") for e in done.events
            if e.get("event", "").startswith(("runner_on", "playbook_on_task_start"))
            and ("/roles/npu_container/" in str(e["event_data"].get("task_path", ""))
                 or "/playbooks/container.yml" in str(e["event_data"].get("task_path", "")))]


def _refused(done, words):
    assert done.returncode != 0, done.stdout[-2000:]
    (_host, task, msg), = done.failed
    assert task == VALIDATE, (task, msg)
    assert words in msg, msg
    assert _container_stage_started(done) == []


def test_a_bad_eval_value_fails_site_yml_before_the_container_stage_runs(tmp_path):
    done = playbook("site.yml", "-i", _inventory(tmp_path), "--check",
                    "-e", json.dumps({"grpo_eval_max_out_len": 0}))
    _refused(done, "grpo_eval_max_out_len (0) must be a whole number from 1 to 131072")


def test_a_tag_run_validates_first_too(tmp_path):
    done = playbook("site.yml", "-i", _inventory(tmp_path), "--check", "--tags", "eval",
                    "-e", json.dumps({"grpo_eval_report_dir": "relative/reports"}))
    _refused(done, "grpo_eval_report_dir ('relative/reports') must be an absolute path")


def test_good_values_and_values_made_of_later_ones_pass_the_validation(tmp_path):
    # a value that refers to another stage's default is left to that stage's own preflight
    done = playbook("site.yml", "-i", _inventory(tmp_path), "--check", "--tags", "no_such_stage",
                    "-e", json.dumps({"grpo_eval_max_out_len": 2048, "assets_hub_endpoint": "http://mirror.example",
                                      "assets_hub_allow_http": True,
                                      "grpo_train_checkpoint_dir": "/ckpt/{{ grpo_train_project }}"}))
    assert done.returncode == 0, done.failed
    assert ("localhost", VALIDATE) in done.tasks("runner_on_ok")


def test_the_stage_list_is_the_one_site_yml_runs_and_the_engines_know():
    import os

    from ascend_grpo.common import workspace
    from grpo_testkit import ROOT

    with open(os.path.join(ROOT, "roles", "grpo_common", "vars", "stages.yml"), encoding="utf-8") as handle:
        stages = yaml.safe_load(handle)["grpo_common_stages"]
    with open(os.path.join(ROOT, "site.yml"), encoding="utf-8") as handle:
        imports = [(play["tags"], play["ansible.builtin.import_playbook"]) for play in yaml.safe_load(handle)
                   if "ansible.builtin.import_playbook" in play]
    for entry in stages:
        assert any(entry["stage"] in tags and book == "playbooks/%s.yml" % entry["stage"] for tags, book in imports), \
            entry
        assert os.path.isfile(os.path.join(ROOT, "roles", entry["role"], "meta", "argument_specs.yml")), entry
    # the stages that leave a record, in order (the support bundle leaves none)
    assert tuple(e["stage"] for e in stages if e["stage"] != "bundle") == workspace.STAGES
