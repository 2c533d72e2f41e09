# -*- coding: utf-8 -*-
"""Callback: load the Jinja filters and tests once, in the controller's main process, before the first task."""

DOCUMENTATION = r"""
name: grpo_preload
type: aggregate
short_description: Load the filter and test plugins once, before the workers fork
description:
  - Each task runs in a worker process forked from the controller's main process. The first filter or test a
    worker templates makes Ansible load every filter and test plugin file it knows (its own and this package's
    C(python_plugins/filter_plugins), which import the engines), and the worker then exits with what it loaded.
    Loaded here once, at the start of the playbook, every worker inherits them instead.
  - Changes nothing a task does or prints. Enabled by its presence in C(callback_plugins); it needs no setting.
"""

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "grpo_preload"
    CALLBACK_NEEDS_ENABLED = False

    def v2_playbook_on_play_start(self, play):
        # at each play: a role's plugin folders join the search path when the play is loaded; a name Ansible
        # resolves itself (no file of ours) makes it load every file of its kind once, then keep them
        for loader, name in ((filter_loader, "ansible.builtin.to_json"), (test_loader, "ansible.builtin.exists")):
            loader.get(name.rsplit(".", 1)[1])
