#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: what the cluster stage needs to know about one node (read-only; ray_node changes it)."""

DOCUMENTATION = r"""
---
module: ray_node_info
short_description: Read what the cluster stage decides with on one node, changing nothing
description:
  - Reads the address and the network interface this node reaches C(head_address) through (or those of
    C(interface)), the Ray and Python versions, every installed distribution (to compare the nodes' stacks), the
    options this Ray's C(ray start) takes, whether this node's Ray runs, and the TCP ports something listens on
    (to refuse a Ray port that is taken).
  - With C(check_port), also tries a TCP connection to C(head_address):C(port) and fails saying why (refused, timed
    out) when it does not open, so a worker is checked before anything on it changes.
  - With C(ports), waits up to C(wait_free) seconds for the ports of that plan that something listens on to be
    freed (a Ray just stopped may hold them for a few seconds), then reports what listens, without failing;
    C(clashes) names what is still taken.
  - Read-only (the C(_info) counterpart of C(ray_node)); runs the same in check mode and never reports a change.
options:
  head_address:
    description: The head's address; the route to it names this node's address and interface.
    type: str
  port:
    description: The head's Ray (GCS) port.
    type: int
    default: 6379
  interface:
    description: Use this network interface instead of the one the route to C(head_address) leaves through.
    type: str
  check_port:
    description: Also try a TCP connection to C(head_address):C(port), and fail saying why when it does not open.
    type: bool
    default: false
  ports:
    description: The cluster's port plan (C(ray_cluster_ports) rows with field, setting, first, last, nodes) to look
      for clashes in.
    type: list
    elements: dict
    default: []
  role:
    description: This node's role in the plan (a worker does not use the head's own ports).
    type: str
    choices: [head, worker]
    default: worker
  wait_free:
    description: Seconds to wait for the plan's ports to be freed before reporting (0 looks once).
    type: int
    default: 0
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Find the NIC that reaches the head
  ray_node_info:
    head_address: 10.0.0.11
  register: node

- name: Look again, for up to 30 s, at the Ray ports something listens on
  ray_node_info:
    ports: "{{ ray_cluster_ports }}"
    role: worker
    wait_free: 30
  register: seen
"""

RETURN = r"""
ip:
  description: This node's address toward the head.
  returned: always
  type: str
interface:
  description: The network interface with that address.
  returned: always
  type: str
interfaces:
  description: Every interface with an IPv4 address, name to address.
  returned: always
  type: dict
ray_version:
  description: The Ray this Python has.
  returned: always
  type: str
python_version:
  description: This Python's version.
  returned: always
  type: str
packages:
  description: Every installed distribution, canonical name to version.
  returned: always
  type: dict
ray_options:
  description: The options this Python's C(ray start) takes, from its CLI's source; null without Ray.
  returned: always
  type: list
listening:
  description: The TCP ports something listens on in this node's network namespace, port to local addresses.
  returned: always
  type: dict
clashes:
  description: The plan's rows whose port something listens on (after waiting), as "setting, port, addresses" (a
    row's setting as the plan names it, else its field).
  returned: when ports are given
  type: list
reach:
  description: Why the head's port does not answer (then the module fails), or null when it does.
  returned: with check_port
  type: str
running:
  description: Whether this node's Ray daemons run.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import node_probe, ray_nodes
from ansible.module_utils.ascend_grpo.common import errors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            head_address=dict(type="str"),
            port=dict(type="int", default=ray_nodes.DEFAULT_PORT),
            interface=dict(type="str"),
            check_port=dict(type="bool", default=False),
            ports=dict(type="list", elements="dict", default=[]),
            role=dict(type="str", choices=["head", "worker"], default="worker"),
            wait_free=dict(type="int", default=0),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = node_probe.probe(module.params)
    except node_probe.ProbeError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
