# -*- coding: utf-8 -*-
"""Stdout callback: Ansible's default output, minus what alarms or clutters on a healthy run."""

DOCUMENTATION = r"""
name: grpo_console
type: stdout
short_description: The default output, with progress lines instead of "FAILED - RETRYING" and no empty plays
description:
  - Prints what C(ansible.builtin.default) prints, with these differences.
  - A task that waits in an C(until) loop prints a progress line per check, not C(FAILED - RETRYING). When the result
    carries a C(progress) string (C(grpo_job), C(grpo_train_status), the weights download), the line is that string,
    printed when it changes and otherwise once a minute with the time it has stood still. Without one, the line
    says the task is still waiting. An attempt that really failed says so, with its message, and that it retries.
  - A play's banner is printed when its first task runs, so a play whose tasks are all left out by tags (C(--tags
    stop), C(--tags status), which a plain run leaves out) prints nothing; so does a play that matches no host
    (the cluster stage with one NPU host), where the default says that no host matched.
  - The argument checks Ansible adds in front of every role (C(Validating arguments against arg spec)) print
    nothing when they pass; a failing one prints as usual. So does the check in front of C(site.yml) that the
    inventory lists NPU hosts (C(Require an inventory with NPU hosts)), and the one after it that no name the
    package sets itself was set by the user.
  - A task run with C(async) and C(poll) (the deps stage's install, the container stage's image pull,
    OpenCompass's venv install) prints that it is still working, with the time it has taken, once a minute,
    instead of an C(ASYNC POLL) line per poll.
  - With C(-v) or more every line of the default output is printed as well.
options:
  repeat_after:
    description:
      - Seconds before an unchanged progress line is printed again, and between two "still working" lines of an
        async task.
    type: float
    default: 60
    env:
      - name: GRPO_CONSOLE_REPEAT_AFTER
    ini:
      - section: grpo_console
        key: repeat_after
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as the stdout callback in ansible.cfg (C(stdout_callback = grpo_console))
"""

import time

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

from ascend_grpo.common import secrets

# Ansible's own role argument check (ansible.playbook.role.Role._prepend_validation_task)
_VALIDATE_ACTIONS = ("validate_argument_spec", "ansible.builtin.validate_argument_spec",
                     "ansible.legacy.validate_argument_spec")
_VALIDATE_NAME = "Validating arguments against arg spec"
# The package's own checks in front of the chain (site.yml: an inventory with NPU hosts, every stage's settings), as
# quiet as Ansible's
_ASSERT_ACTIONS = ("assert", "ansible.builtin.assert", "ansible.legacy.assert")
_QUIET_CHECKS = ("Require an inventory with NPU hosts", "Refuse a name the package sets itself, set in the inventory "
                 "or with -e", "Refuse a bad value of any stage's setting, naming the setting and the fix")
# An unchanged progress line is shown again after this many seconds, so a long quiet step still shows life.
REPEAT_AFTER_S = 60.0


def _result_dict(result):
    return result.result if isinstance(result.result, dict) else {}  # ansible-core 2.19's CallbackTaskResult


def retry_line(host, task_name, res, last=None, now=None, repeat_after=REPEAT_AFTER_S):
    """The line for one retry of a waiting task, or None when nothing new is to be said.

    ``res`` is the attempt's result (with ``attempts`` and ``retries``); ``last`` is ``(text, shown_at,
    changed_at)`` for the progress shown before for this host and task, or None (monotonic seconds). Returns
    ``(line, text)``: ``text`` is the progress to remember, or None; ``(None, None)`` prints nothing this time.
    """
    now = time.monotonic() if now is None else now
    attempts, retries = res.get("attempts"), res.get("retries")
    count = " (check %s of %s)" % (attempts, retries) if attempts and retries else ""
    if res.get("_ansible_no_log"):
        return "  [%s] waiting: %s%s" % (host, task_name, count), None
    if res.get("failed"):
        # a job's text: no escape sequence or control character reaches the terminal, no credential is shown
        msg = secrets.mask_url(secrets.printable(str(res.get("msg") or "failed").splitlines()[0]))[:300]
        return "  [%s] %s: attempt %s failed (%s); trying again" % (host, task_name, attempts or "?", msg), None
    progress = res.get("progress")
    if isinstance(progress, str) and progress.strip():
        text = secrets.mask_url(secrets.printable(progress, newlines=False)).strip()[:300]
        if last is not None and last[0] == text:
            if now - last[1] < repeat_after:
                return None, None
            return "  [%s] %s (no new output for %ds)" % (host, text, int(now - last[2])), text
        return "  [%s] %s" % (host, text), text
    return "  [%s] still waiting: %s%s" % (host, task_name, count), None


def async_line(host, task_name, first_seen, now, repeat_after=REPEAT_AFTER_S):
    """The line for one poll of an async task, or None before ``repeat_after`` seconds: the time since the first
    poll (monotonic seconds)."""
    waited = now - first_seen
    if waited < repeat_after:
        return None
    minutes, seconds = divmod(int(waited), 60)
    return "  [%s] still working: %s (%dm%02ds)" % (host, task_name, minutes, seconds)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "grpo_console"

    def __init__(self):
        super().__init__()
        self._pending_play = None
        self._quiet = set()  # uuids of passing argument checks not shown
        self._progress = {}  # (host, task uuid) -> (text, shown_at, changed_at)
        self._async = {}  # (host, task name) -> (first poll, last line shown), monotonic seconds

    def _repeat_after(self):
        try:
            return float(self.get_option("repeat_after"))
        except (KeyError, TypeError, ValueError):
            return REPEAT_AFTER_S

    # plays: the banner waits for the play's first task
    def v2_playbook_on_play_start(self, play):
        self._play = play  # the default's task banner reads the play's strategy
        self._pending_play = play
        if self._display.verbosity >= 1:
            self._flush_play()

    def _flush_play(self):
        play, self._pending_play = self._pending_play, None
        if play is not None:
            super().v2_playbook_on_play_start(play)

    def _is_quiet(self, task):
        name = task.get_name() or ""
        return self._display.verbosity < 1 and (
            (task.action in _VALIDATE_ACTIONS and _VALIDATE_NAME in name)
            or (task.action in _ASSERT_ACTIONS and name.strip() in _QUIET_CHECKS))

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._is_quiet(task):
            self._quiet.add(task._uuid)
            return
        self._flush_play()
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task):
        self._flush_play()
        super().v2_playbook_on_handler_task_start(task)

    # a play with no host to run on (the cluster stage with one NPU host) prints nothing unless -v
    def v2_playbook_on_no_hosts_matched(self):
        if self._display.verbosity < 1:
            self._pending_play = None
            return
        self._flush_play()
        super().v2_playbook_on_no_hosts_matched()

    def v2_playbook_on_include(self, included_file):
        self._flush_play()
        super().v2_playbook_on_include(included_file)

    # results of a quiet task: nothing unless it failed
    def _loud(self, result):
        task = result.task
        if task._uuid in self._quiet:
            self._quiet.discard(task._uuid)
            self._flush_play()
            self._last_task_name = task.get_name().strip()

    def v2_runner_on_ok(self, result):
        if result.task._uuid in self._quiet and not _result_dict(result).get("changed"):
            return
        self._loud(result)
        super().v2_runner_on_ok(result)

    def v2_runner_on_skipped(self, result):
        if result.task._uuid in self._quiet:
            return
        super().v2_runner_on_skipped(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._loud(result)
        super().v2_runner_on_failed(result, ignore_errors=ignore_errors)

    def v2_runner_on_unreachable(self, result):
        self._loud(result)
        super().v2_runner_on_unreachable(result)

    # waiting tasks: a progress line, never "FAILED - RETRYING"
    def v2_runner_retry(self, result):
        if self._display.verbosity >= 1:
            super().v2_runner_retry(result)
            return
        res = _result_dict(result)
        host = self.host_label(result)
        name = (result.task_name or str(result.task)).strip()
        key = (host, getattr(result.task, "_uuid", name))
        now = time.monotonic()
        last = self._progress.get(key)
        line, text = retry_line(host, name, res, last=last, now=now, repeat_after=self._repeat_after())
        if line is None:
            return
        if text is not None:
            changed_at = last[2] if last is not None and last[0] == text else now
            self._progress[key] = (text, now, changed_at)
        self._display.display(line)

    def v2_runner_on_async_poll(self, result):
        if self._display.verbosity >= 1:
            super().v2_runner_on_async_poll(result)
            return
        host, name = key = self._async_key(result)
        now = time.monotonic()
        first, shown = self._async.setdefault(key, (now, now))
        if now - shown < self._repeat_after():
            return
        line = async_line(host, name, first, now, repeat_after=self._repeat_after())
        if line:
            self._async[key] = (first, now)
            self._display.display(line)

    def _async_key(self, result):
        # each poll is an async_status task of its own: the name is the task that started it, the last one shown
        return self.host_label(result), self._last_task_name or (result.task_name or str(result.task)).strip()

    def v2_runner_on_async_ok(self, result):
        self._async.pop(self._async_key(result), None)
        if self._display.verbosity >= 1:  # "ASYNC OK on host: jid=...": the ok or changed line that follows says it
            super().v2_runner_on_async_ok(result)
