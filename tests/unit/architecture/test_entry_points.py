"""Every entry point checks the settings it uses with the stage's own check (issue 44, item 5): --tags status and
the support bundle read the train stage's settings through its status tasks, and npu-smi and the container's name
on the NPU hosts, without the stages' preflights; a bad value reached the code that uses it."""

import json
import os
import sys

from grpo_testkit import ROOT, playbook

TRAIN_CHECK = "Preflight | Check every setting of the stage (names, paths, environment variables, profiles, counts)"
CONTAINER_CHECK = "Preflight | Check every setting of the stage (names, paths, environment variables, mounts)"


def _status_of_the_train_stage(tmp_path, extra):
    """The train stage's status tasks as playbooks/status.yml and bundle.yml include them, on this machine."""
    book = tmp_path / "status.yml"
    book.write_text("- name: Status alone\n  hosts: localhost\n  connection: local\n  gather_facts: false\n"
                    "  tasks:\n    - name: Look at the run\n      ansible.builtin.include_role:\n"
                    "        name: grpo_train\n        tasks_from: status\n")
    extra = dict({"grpo_env_ready": True, "grpo_workspace": str(tmp_path / "ws"), "grpo_cards": [0],
                  "grpo_npu_host": "localhost", "ansible_python_interpreter": sys.executable}, **extra)
    return playbook(str(book), "-i", "localhost,", "-e", json.dumps(extra),
                    env={"ANSIBLE_ROLES_PATH": os.path.join(ROOT, "roles")})


def test_status_refuses_a_run_folder_that_leaves_the_workspace_with_the_stages_own_check(tmp_path):
    done = _status_of_the_train_stage(tmp_path, {"grpo_train_experiment": "../../escape",
                                                 "grpo_train_tensorboard_host": "0.0.0.0 --evil"})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == TRAIN_CHECK
    assert "grpo_train_experiment ('../../escape') becomes a folder name" in msg
    assert "grpo_train_tensorboard_host ('0.0.0.0 --evil')" in msg
    assert not (tmp_path / "ws").exists()  # nothing looked at, nothing made


def _npu_host_play(tmp_path, book, extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("npu_hosts:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                         "      ansible_python_interpreter: %s\n" % sys.executable)
    return playbook(os.path.join(ROOT, "playbooks", book), "-i", str(inventory), "-e", json.dumps(extra))


def test_status_and_bundle_refuse_an_npu_smi_that_is_no_command_before_running_it(tmp_path):
    planted = tmp_path / "ran"
    for book in ("status.yml", "bundle.yml"):
        done = _npu_host_play(tmp_path, book, {"npu_container_npu_smi": "/bin/sh -c 'touch %s'" % planted,
                                               "npu_container_mode": "none"})
        assert done.returncode != 0, book
        (_host, task, msg), = done.failed
        assert task == CONTAINER_CHECK, book
        assert msg.startswith("npu_container_npu_smi (") and "must be a command name or an absolute path" in msg
    assert not planted.exists()
