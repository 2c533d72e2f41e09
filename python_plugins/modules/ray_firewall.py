#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: the nftables table that lets only a Ray cluster's own nodes reach Ray's ports on one node."""

DOCUMENTATION = r"""
---
module: ray_firewall
short_description: Keep Ray's ports on one node for the cluster's own nodes (one nftables table of ours)
description:
  - Runs on the host, in the network namespace where Ray listens. With C(pid), that process's namespace (a
    container's, entered with C(nsenter) from the host, so the container needs no capability); without it, the
    host's own (host networking, or no container).
  - C(state=present) loads one table (C(inet grpo_ray) by default) whose input chain accepts C(ports) from loopback
    and from the C(members) and drops them for every other source. No other port and no other table is touched.
    The table is replaced in one nft transaction when the ports or the members change; a rerun with the same ones
    changes nothing (the table's last rule carries the fingerprint of its rules).
  - C(state=absent) removes the table when it is there (without nft on the host, there is none).
  - C(state=check) changes nothing and fails, naming the package to install, when nft cannot be run (or cannot
    read that namespace's tables).
  - Supports check mode and diff.
options:
  state:
    description: Whether the table should be there, or only check that it can be.
    type: str
    choices: [present, absent, check]
    default: present
  ports:
    description: Ray's TCP ports on this node, single ports or ranges (C(10002-19999)).
    type: list
    elements: str
    default: []
  members:
    description:
      - The IPv4 addresses of every node of the cluster (this one included); they reach every port. With
        C(one_host), the host's own addresses on the container's network (its Docker gateway), or none.
    type: list
    elements: str
    default: []
  one_host:
    description:
      - A training environment of one host, whose processes reach each other over loopback; C(members) may be
        empty.
    type: bool
    default: false
  ephemeral:
    description:
      - Also keep the namespace's ephemeral port range (C(net.ipv4.ip_local_port_range), read in that namespace)
        for the members, the free ports a run's other servers take (torch's rendezvous store, Gloo, vLLM), where
        the table cannot cover every port (the host's own network).
    type: bool
    default: false
  pid:
    description: A process in the network namespace to act in (the container's main process). Unset, the host's.
    type: int
  table:
    description: The nftables table (family inet) this module owns.
    type: str
    default: grpo_ray
  nft:
    description: The nft executable.
    type: path
    default: nft
  nsenter:
    description: The nsenter executable (with C(pid)).
    type: path
    default: nsenter
  firewall:
    description:
      - Only named, never read - the switch that turns this table off in the calling role. The fix for a host
        without nft says to set it to false (C(setting_names) maps it to the role's setting).
    type: bool
    default: true
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Keep Ray's ports for the cluster's nodes, in the container's network namespace
  ray_firewall:
    ports: ["6379", "6380", "6381", "10001", "52365-52368", "10002-19999"]
    members: [10.0.0.11, 10.0.0.12]
    pid: 4242

- name: Remove the table (the cluster is stopped)
  ray_firewall:
    state: absent
    pid: 4242
"""

RETURN = r"""
fingerprint:
  description: The fingerprint of the rules wanted (present) or found (absent).
  returned: always
  type: str
rules:
  description: The table as loaded (present).
  returned: state=present
  type: str
members:
  description: The member addresses allowed, sorted.
  returned: state=present
  type: list
before:
  description: nft's listing of the table before (empty when it was not there).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import firewall, nft_table
from ansible.module_utils.ascend_grpo.common import errors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent", "check"], default="present"),
            ports=dict(type="list", elements="str", default=[]),
            members=dict(type="list", elements="str", default=[]),
            one_host=dict(type="bool", default=False),
            ephemeral=dict(type="bool", default=False),
            pid=dict(type="int"),
            table=dict(type="str", default=firewall.TABLE),
            nft=dict(type="path", default="nft"),
            nsenter=dict(type="path", default="nsenter"),
            firewall=dict(type="bool", default=True),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = nft_table.converge(module.params, module.check_mode, module.run_command)
    except nft_table.NftError as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
