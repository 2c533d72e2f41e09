#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: one node of a Ray cluster (start its Ray as head or worker, stop it); ray_node_info reads it."""

DOCUMENTATION = r"""
---
module: ray_node
short_description: Start or stop one node's Ray for a multi-host verl run
description:
  - C(state=started) runs the rendered start script (which exports the node's environment and runs C(ray start))
    unless this node's Ray runs from the very same script; a Ray started from another script is stopped first. A
    worker first checks that the head's port answers, and a failed join is explained (unreachable address or
    port, version mismatch, token).
  - C(state=stopped) stops this node's Ray (C(ray stop)) when it runs.
  - What was started is kept in C(state_dir/ray-node.json), in the workspace. Supports check mode and diff.
  - What the cluster stage reads about a node (its address and NIC toward the head, its stack, the ports taken)
    is the read-only C(ray_node_info)'s.
options:
  state:
    description: What to do.
    type: str
    choices: [started, stopped]
    default: started
  state_dir:
    description: The workspace's state folder (C(.grpo)); the record lives there.
    type: path
    required: true
  role:
    description: head or worker (with C(state=started)).
    type: str
    choices: [head, worker]
  script:
    description: The start script (with C(state=started)).
    type: path
  head_address:
    description: The head's address; a worker checks its port before joining.
    type: str
  port:
    description: The head's Ray (GCS) port.
    type: int
    default: 6379
  ray:
    description: The ray executable (the stack's venv).
    type: path
    default: ray
  timeout:
    description: Seconds C(ray start) or C(ray stop) may take (run under C(timeout)).
    type: int
    default: 180
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Join the cluster
  ray_node:
    state: started
    role: worker
    script: /data/grpo/.grpo/ray/start_ray.sh
    state_dir: /data/grpo/.grpo
    head_address: 10.0.0.11

- name: Stop this node's Ray
  ray_node:
    state: stopped
    state_dir: /data/grpo/.grpo
"""

RETURN = r"""
reach:
  description: Why the head's port does not answer (a failed join).
  returned: when checked
  type: str
running:
  description: Whether this node's Ray daemons run (after the action).
  returned: always
  type: bool
output:
  description: What ray start or ray stop printed.
  returned: when it ran
  type: str
"""

import hashlib
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import ray_nodes
from ansible.module_utils.ascend_grpo.common import workspace

TIMED_OUT = 124  # timeout(1)'s exit status when the command ran out of time


def _running():
    """Whether this node's Ray (its raylet) runs."""
    return bool(ray_nodes.ray_processes()["raylet"])


def _run(module, argv, timeout):
    """``argv`` under timeout(1) through run_command: (rc, output); a run out of time says so in the output."""
    rc, out, err = module.run_command(["timeout", str(timeout)] + argv)
    output = (out or "") + (err or "")
    if rc == TIMED_OUT:
        output += "\n%s did not finish within %d s" % (" ".join(argv), timeout)
    return rc, output


def _stop(module, ray, timeout):
    rc, output = _run(module, [ray, "stop", "--grace-period", "30"], timeout)
    if rc == 127:  # no such command (timeout's own code for it)
        module.fail_json(msg="ray stop failed: %s" % output.strip())
    deadline = time.time() + 30
    while _running() and time.time() < deadline:
        time.sleep(1)
    if _running():
        _run(module, [ray, "stop", "--force"], timeout)
    return output


def stopped(module, p, running, record_path):
    if not running:
        module.exit_json(changed=False, running=False)
    output = "" if module.check_mode else _stop(module, p["ray"], p["timeout"])
    if not module.check_mode:
        workspace.write_json(record_path, dict(workspace.read_json(record_path, {}) or {}, stopped_at=time.time()))
    module.exit_json(changed=True, running=module.check_mode, output=output,
                     diff=dict(before={"running": True}, after={"running": False}))


def started(module, p, running, record_path):
    try:
        with open(p["script"], "rb") as handle:
            digest = hashlib.sha1(handle.read()).hexdigest()
    except OSError as err:
        module.fail_json(msg="the start script %s cannot be read: %s" % (p["script"], err))
    record = workspace.read_json(record_path, {}) or {}
    if running and record.get("script_sha1") == digest and not record.get("stopped_at"):
        module.exit_json(changed=False, running=True)
    diff = dict(before={"script_sha1": record.get("script_sha1"), "running": running},
                after={"script_sha1": digest, "running": True})
    if module.check_mode:
        module.exit_json(changed=True, running=running, diff=diff)
    # A head this worker cannot reach fails before anything here changes (a Ray that runs keeps running).
    if p["role"] == "worker" and p["head_address"]:
        reach = ray_nodes.tcp_reachable(p["head_address"], p["port"])
        if reach:
            module.fail_json(msg=ray_nodes.join_failure("", p["head_address"], p["port"], reach), reach=reach,
                             running=running)
    output = ""
    if running:  # started from another script (other settings): stopped first
        output = _stop(module, p["ray"], p["timeout"])
    rc, started_output = _run(module, ["bash", p["script"]], p["timeout"])
    output += started_output
    if rc != 0:
        reach = ray_nodes.tcp_reachable(p["head_address"], p["port"]) if p["role"] == "worker" else None
        msg = (ray_nodes.join_failure(output, p["head_address"], p["port"], reach) if p["role"] == "worker"
               else "ray start --head failed: %s" % " | ".join(
                   [line for line in output.splitlines() if line.strip()][-6:]))
        module.fail_json(msg=msg, output=output, running=_running())
    workspace.write_json(record_path, {"script_sha1": digest, "role": p["role"], "started_at": time.time()})
    module.exit_json(changed=True, running=_running(), output=output[-4000:], diff=diff)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["started", "stopped"], default="started"),
            state_dir=dict(type="path", required=True),
            role=dict(type="str", choices=["head", "worker"]),
            script=dict(type="path"),
            head_address=dict(type="str"),
            port=dict(type="int", default=ray_nodes.DEFAULT_PORT),
            ray=dict(type="path", default="ray"),
            timeout=dict(type="int", default=180),
        ),
        required_if=[("state", "started", ["role", "script"])],
        supports_check_mode=True,
    )
    p = module.params
    record_path = os.path.join(p["state_dir"], "ray-node.json")
    (stopped if p["state"] == "stopped" else started)(module, p, _running(), record_path)


if __name__ == "__main__":
    main()
