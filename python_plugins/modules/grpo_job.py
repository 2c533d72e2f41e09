#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: start, watch or stop a detached job whose state lives in the workspace."""

DOCUMENTATION = r"""
---
module: grpo_job
short_description: Start, watch or stop a command that outlives the Ansible connection
description:
  - A job runs in a session of its own with its output appended to a log; its pid, start time and, when it ends,
    its exit status are kept in C(state_dir/name) on the host, so a later run (or a person) sees what it did.
  - One run of a job at a time. C(state=started) starts the command unless the job already runs (then nothing
    changes); C(state=status) only reports; C(state=stopped) stops the job's whole process group (SIGTERM, then
    SIGKILL after C(grace)) and records that it was stopped. Each process gets one SIGTERM, those that join the
    group after the first signal too (Ray's daemons start their agents while Ray starts).
  - C(name=*) is every job of C(state_dir) (each folder with a job record, whatever its name), with
    C(state=stopped) (each running one stopped as above, one after another, those in C(exclude) left out) or
    C(state=status); the result lists them in C(jobs).
  - C(wait) makes C(state=status) block up to that many seconds while the job runs, so a retry loop shows progress
    without a task per poll.
  - Values in C(env) and C(secret_env) reach the process only; they are never written to the state folder (but
    for C(keep_secret_env)), and C(secret_env) is never logged.
  - Supports check mode.
options:
  name:
    description: The job's name (a folder under C(state_dir)); C(*) every job there (not with C(state=started)).
    type: str
    required: true
  exclude:
    description: With C(name=*), the jobs to leave out (one stopped before by a task of its own, say).
    type: list
    elements: str
    default: []
  state_dir:
    description: Where jobs keep their state (the workspace's C(.grpo/jobs)).
    type: path
    required: true
  state:
    description: What to do.
    type: str
    choices: [started, status, stopped]
    default: status
  command:
    description: The command, one argument per element (no shell). Required with C(state=started).
    type: list
    elements: str
  chdir:
    description: The folder the command runs in.
    type: path
  log:
    description: The log file (appended to); default C(state_dir/name/name.log).
    type: path
  env:
    description: Extra environment for the command.
    type: dict
    default: {}
  secret_env:
    description: Extra environment that is secret (tokens); reaches the process only, never a log or a file.
    type: dict
    default: {}
  keep_secret_env:
    description:
      - With C(state=started), also keep C(secret_env) in the job's folder (C(secret-env.json), root's only, 0600)
        so that the job can be relaunched without the controller (the train stage's resume hook after the container
        restarted). Never in C(job.json), a record, an argv or a log; removed when the command ends, when the job
        is stopped, and by a start without this option.
    type: bool
    default: false
  wait:
    description: With C(state=status), block up to this many seconds while the job runs.
    type: float
    default: 0
  grace:
    description: With C(state=stopped), seconds between SIGTERM and SIGKILL.
    type: float
    default: 30
  tail_lines:
    description: How many lines of the log's end to return.
    type: int
    default: 40
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Start the download unless it runs
  grpo_job:
    name: weights
    state_dir: /data/grpo/.grpo/jobs
    state: started
    command: [python3, -m, ascend_grpo.assets.weights, fetch, --plan, /data/grpo/.grpo/weights-plan.json]
    secret_env:
      HF_TOKEN: "{{ hub_token }}"

- name: Wait for it, showing its progress
  grpo_job:
    name: weights
    state_dir: /data/grpo/.grpo/jobs
    wait: 10
  register: job
  until: not job.running
  retries: 720
  delay: 0

- name: Stop every other job of the workspace (TensorBoard, an eval, a fetch), whatever its name
  grpo_job:
    name: "*"
    exclude: [train]
    state_dir: /data/grpo/.grpo/jobs
    state: stopped
  register: stopped_jobs
"""

RETURN = r"""
state:
  description: absent, running, finished (exit 0), failed (other exit, or killed without a status) or stopped.
  returned: when name is one job's
  type: str
running:
  description: Whether the job's process (or anything in its process group) runs.
  returned: when name is one job's
  type: bool
exit_status:
  description: The command's exit status once it ended (null while running, or when it was killed). Not C(rc),
    which Ansible would take for this module's own status.
  returned: when name is one job's
  type: int
log:
  description: The job's log file.
  returned: when name is one job's
  type: str
tail:
  description: The log's last lines (a progress bar's last frame only).
  returned: when name is one job's
  type: list
  elements: str
progress:
  description: The log's last line, for a progress display.
  returned: when name is one job's
  type: str
pid:
  description: The job's process id (its wrapper, which leads the job's process group); null when never launched.
  returned: when name is one job's
  type: int
command:
  description: The command the job runs (argv).
  returned: when name is one job's
  type: list
  elements: str
elapsed_s:
  description: Seconds the command ran, once it ended by itself (its exit status written); null before.
  returned: when the job exists
  type: float
started_at:
  description: When the job was launched (ISO 8601 with the host's offset); null when never launched.
  returned: when name is one job's
  type: str
jobs:
  description: With C(name=*), each job of the folder (but those excluded), by name, as the fields above say one
    job, with C(was_running) (it ran when the task began) and C(changed) (this task stopped it, or would have).
  returned: with name=*
  type: list
  elements: dict
said:
  description: >-
    With C(name=*), one line per job for a person (C(tensorboard: stopped (pid 812)), C(weights: was not
    running (finished))), or one saying the folder holds no job.
  returned: with name=*
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import jobs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            exclude=dict(type="list", elements="str", default=[]),
            state_dir=dict(type="path", required=True),
            state=dict(type="str", choices=["started", "status", "stopped"], default="status"),
            command=dict(type="list", elements="str"),
            chdir=dict(type="path"),
            log=dict(type="path"),
            env=dict(type="dict", default={}),
            secret_env=dict(type="dict", default={}, no_log=True),
            keep_secret_env=dict(type="bool", default=False),
            wait=dict(type="float", default=0),
            grace=dict(type="float", default=30),
            tail_lines=dict(type="int", default=40),
        ),
        required_if=[("state", "started", ["command"])],
        supports_check_mode=True,
    )
    try:
        result = jobs.converge(module.params, module.check_mode)
    except jobs.JobFailure as err:
        module.fail_json(msg=err.msg)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
