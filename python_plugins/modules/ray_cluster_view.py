#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: Ray's view of the cluster (its nodes, alive, with their resources) against the inventory's."""

DOCUMENTATION = r"""
---
module: ray_cluster_view
short_description: Ray's view of a cluster, compared with the nodes the inventory expects
description:
  - Asks the running cluster at C(address) for its nodes (C(ray.nodes()) from a short driver run with the stack's
    Python, so this module's output stays clean), and compares them with C(expected), address by address (a node
    missing, dead, or short of a resource is named with why).
  - C(wait) keeps asking, up to that many seconds, until every expected node is there.
  - Changes nothing; check mode runs it too.
options:
  address:
    description: The cluster's address (head address:port).
    type: str
    required: true
  expected:
    description: The nodes, each C({name, ip, resources}).
    type: list
    elements: dict
    default: []
  python:
    description: The Python with Ray (the stack's venv).
    type: path
    required: true
  env:
    description: Environment for the driver (RAY_AUTH_MODE and RAY_AUTH_TOKEN_PATH where token auth is on).
    type: dict
    default: {}
  wait:
    description: Seconds to keep asking until every expected node joined.
    type: float
    default: 0
  timeout:
    description: Seconds one ask may take.
    type: int
    default: 90
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Wait until both nodes joined with their cards
  ray_cluster_view:
    address: 10.0.0.11:6379
    python: /data/grpo/venvs/stack/bin/python
    expected:
      - {name: qwen-grpo@npu-a, ip: 10.0.0.11, resources: {NPU: 8}}
      - {name: qwen-grpo@npu-b, ip: 10.0.0.12, resources: {NPU: 8}}
    wait: 300
"""

RETURN = r"""
joined:
  description: The expected nodes Ray has, alive with their resources.
  returned: always
  type: list
  elements: str
missing:
  description: The expected nodes it lacks, each C({name, ip, why}).
  returned: always
  type: list
  elements: dict
extra:
  description: Addresses of live nodes the inventory does not list.
  returned: always
  type: list
  elements: str
nodes:
  description: Every node Ray knows, C({ip, alive, resources}).
  returned: always
  type: list
  elements: dict
error:
  description: Why the cluster could not be asked (no head there, a refused token), or null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import cluster_view


def main():
    module = AnsibleModule(
        argument_spec=dict(
            address=dict(type="str", required=True),
            expected=dict(type="list", elements="dict", default=[]),
            python=dict(type="path", required=True),
            env=dict(type="dict", default={}),
            wait=dict(type="float", default=0),
            timeout=dict(type="int", default=90),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**cluster_view.view(module.params, module.run_command))


if __name__ == "__main__":
    main()
