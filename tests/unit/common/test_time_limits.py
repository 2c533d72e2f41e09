"""A slow step run with async and poll, bounded by a setting (issue 46, item 4): a time-out is told from the step's
own failure, and refused naming the setting to raise (ascend_grpo.common.time_limits, the timed_out and
time_limit_message filters), first against Ansible's own shapes, then through a real ansible-playbook run."""

import os
import sys
import textwrap

import pytest

from grpo_testkit import playbook

from ascend_grpo.common import time_limits

# Transcribed from ansible-core 2.19: lib/ansible/modules/async_wrapper.py, the job killed at its limit
# (res = {'msg': 'Timeout exceeded', 'failed': True, 'child_pid': sub_pid}; async_status adds finished), and
# lib/ansible/executor/task_executor.py, _poll_async_result, the polls counted out first
# (dict(failed=True, msg="async task did not complete within the requested time - %ss" % async_val, ...)).
KILLED = {"msg": "Timeout exceeded", "failed": True, "child_pid": 4242, "finished": True, "ansible_job_id": "j1"}
POLLED_OUT = {"failed": True, "msg": "async task did not complete within the requested time - 7200s",
              "async_result": {"started": True, "finished": False, "ansible_job_id": "j1"}}


def test_the_shapes_are_ansibles_own():
    """The two texts as the installed ansible-core writes them (a new release that rewords one fails here)."""
    import ansible

    def source(*parts):
        with open(os.path.join(os.path.dirname(ansible.__file__), *parts), encoding="utf-8") as handle:
            return handle.read()

    assert "'msg': 'Timeout exceeded', 'failed': True" in source("modules", "async_wrapper.py")
    assert '"async task did not complete within the requested time - %ss"' in source("executor", "task_executor.py")


@pytest.mark.parametrize("result", [KILLED, POLLED_OUT])
def test_both_ways_ansible_ends_a_step_at_its_limit_are_a_time_out(result):
    assert time_limits.timed_out(result) is True
    # as registered by the step, whose failed_when lets a time-out by (Ansible then sets failed to false)
    assert time_limits.timed_out(dict(result, failed=False, failed_when_result=False)) is True


@pytest.mark.parametrize("result", [
    {"failed": True, "msg": "pull access denied for cann, repository does not exist"},
    {"failed": True, "msg": "profile t cannot keep its pins: torch. Nothing was installed."},
    {"failed": False, "changed": True, "msg": "Timeout exceeded"},  # a step that says so and succeeded
    {"failed": True, "msg": "Timeout exceeded"},  # a module's own failure that reads so (no killed job)
    {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"},
    {}, None, "Timeout exceeded",
])
def test_anything_else_is_no_time_out(result):
    assert time_limits.timed_out(result) is False
    assert time_limits.message_if_timed_out(result, "Pulling image x", "npu_container_pull_minutes", 120, "h") == ""


def test_the_message_names_the_step_the_setting_its_value_and_the_host():
    msg = time_limits.message_if_timed_out(
        POLLED_OUT, "Pulling image cann:8.2", "npu_container_pull_minutes", 120, "npu1",
        found="As found after it, image cann:8.2 is not on the host", then="Or load the image by hand.")
    assert msg == ("Pulling image cann:8.2 did not finish on npu1 within 120 minutes (npu_container_pull_minutes) "
                   "and was stopped. As found after it, image cann:8.2 is not on the host. Raise "
                   "npu_container_pull_minutes (a slow link needs more time) and run again. Or load the image by "
                   "hand.")


def _book(tmp_path, command):
    """A step as the stages run theirs (async from a minutes setting, poll, failed_when letting a time-out by),
    then its refusal; here bounded in seconds (the settings count minutes)."""
    book = tmp_path / "slow.yml"
    book.write_text(textwrap.dedent("""\
        - name: A slow step
          hosts: localhost
          connection: local
          gather_facts: false
          vars:
            demo_minutes: 3
          tasks:
            - name: Pull the image
              ansible.builtin.command: %s
              register: _step
              async: 2
              poll: 1
              changed_when: false
              failed_when: _step is failed and not (_step | timed_out)

            - name: Refuse a pull that ran out of time
              ansible.builtin.fail:
                msg: "{{ _step | time_limit_message('Pulling image x', 'demo_minutes', demo_minutes, inventory_hostname) }}"
              when: _step | timed_out
        """ % command))
    return playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable)


def test_a_step_past_its_limit_is_refused_naming_the_setting_to_raise(tmp_path):
    done = _book(tmp_path, "sleep 30")
    assert done.returncode != 0 and done.seconds < 25, done.stdout[-3000:]
    (_host, task, msg), = done.failed
    assert task == "Refuse a pull that ran out of time"
    assert msg.startswith("Pulling image x did not finish on localhost within 3 minutes (demo_minutes) and was "
                          "stopped. Raise demo_minutes"), msg


def test_a_step_that_fails_of_its_own_keeps_its_failure(tmp_path):
    done = _book(tmp_path, "ls /no/such/folder")
    (_host, task, msg), = done.failed
    assert task == "Pull the image" and "demo_minutes" not in (msg or ""), done.stdout[-3000:]
    assert "non-zero return code" in msg and done.seconds < 25, done.stdout[-3000:]
