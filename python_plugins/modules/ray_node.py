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
extends_documentation_fragment:
  - grpo_setting_names
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

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import ray_daemon, ray_nodes
from ansible.module_utils.ascend_grpo.common import errors


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
            setting_names=dict(type="dict", default={}),
        ),
        required_if=[("state", "started", ["role", "script"])],
        supports_check_mode=True,
    )
    try:
        result = ray_daemon.converge(module.params, module.check_mode, module.run_command)
    except ray_daemon.NodeError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
