# -*- coding: utf-8 -*-
"""Callback plugin: show a long job's progress while a task retries (a download, a training start)."""

DOCUMENTATION = r"""
name: grpo_progress
type: notification
short_description: Print the C(progress) a retried task reports, on each retry
description:
  - A task that waits in an C(until) loop (the C(grpo_job) module with C(wait), say) only shows "FAILED - RETRYING"
    on the console. When its result carries a non-empty C(progress) string, this plugin prints it beside the host,
    so a long download or a training start is visibly moving.
  - Prints nothing for other tasks, and nothing when the result is C(no_log).
requirements:
  - enabled in ansible.cfg (callbacks_enabled)
"""

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "grpo_progress"
    CALLBACK_NEEDS_ENABLED = True

    def v2_runner_retry(self, result):
        res = getattr(result, "result", None)
        if res is None:  # ansible-core before 2.19 names it _result
            res = result._result
        progress = res.get("progress") if isinstance(res, dict) else None
        if not progress or not isinstance(progress, str) or res.get("_ansible_no_log"):
            return
        host = result.host.get_name() if hasattr(result, "host") else "?"
        self._display.display("  [%s] %s" % (host, progress[:300]))
