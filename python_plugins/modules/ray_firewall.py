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

import re
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.cluster import firewall

PACKAGE_HINT = ("install nftables on the host (apt-get install nftables, dnf install nftables), or set "
                "ray_cluster_firewall to false and keep every other machine away from Ray's ports yourself")


def _nft(module, args, data=None):
    p = module.params
    argv = ([p["nsenter"], "--net=/proc/%d/ns/net" % p["pid"], "--"] if p["pid"] else []) + [p["nft"]] + args
    return module.run_command(argv, data=data, binary_data=True)


def _current(module):
    """nft's listing of our table, or "" when it is not there."""
    rc, out, err = _nft(module, ["list", "table", "inet", module.params["table"]])
    if rc == 0:
        return out
    if "No such file or directory" in err or "does not exist" in err:
        return ""
    module.fail_json(msg="nft cannot read the tables of %s: %s. %s" % (_where(module), err.strip(), PACKAGE_HINT))
    return ""


def _where(module):
    return "process %d's network namespace" % module.params["pid"] if module.params["pid"] else "this host"


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
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "absent" and not shutil.which(p["nft"]):
        module.exit_json(changed=False, before="", fingerprint="")  # no nft, so no table of ours
    for tool in ("nft",) + (("nsenter",) if p["pid"] else ()):
        if not shutil.which(p[tool]):
            module.fail_json(msg="%s is not on this host, and the cluster stage firewalls Ray's ports with it: %s"
                             % (p[tool], PACKAGE_HINT if tool == "nft" else "install util-linux"))
    before = _current(module)
    found = _fingerprint(before)
    if p["state"] == "check":
        module.exit_json(changed=False, before=before, fingerprint=found)
    if p["state"] == "absent":
        if not before:
            module.exit_json(changed=False, before="", fingerprint="")
        if not module.check_mode:
            rc, _out, err = _nft(module, ["-f", "-"], data=firewall.removal(p["table"]))
            if rc != 0:
                module.fail_json(msg="nft could not remove table inet %s in %s: %s" % (p["table"], _where(module),
                                                                                        err.strip()))
        module.exit_json(changed=True, before=before, fingerprint=found,
                         diff=dict(before=before, after="", before_header="table inet " + p["table"]))
    try:
        ports = list(p["ports"]) + ([firewall.ephemeral_span(_ephemeral(module))] if p["ephemeral"] else [])
        wanted = firewall.ruleset(ports, p["members"], p["table"], allow_no_members=p["one_host"])
        members = firewall.members_of(p["members"], allow_none=p["one_host"])
    except firewall.FirewallError as err:
        module.fail_json(msg="ray_firewall: %s" % err)
    result = dict(fingerprint=wanted["fingerprint"], rules=wanted["rules"], members=members, before=before)
    if found == wanted["fingerprint"] and all(member in before for member in members):
        module.exit_json(changed=False, **result)
    if not module.check_mode:
        rc, _out, err = _nft(module, ["-f", "-"], data=wanted["script"])
        if rc != 0:
            module.fail_json(msg="nft refused the rules in %s: %s" % (_where(module), err.strip()), **result)
        after = _current(module)
        if _fingerprint(after) != wanted["fingerprint"]:
            module.fail_json(msg="the table was loaded in %s, but nft lists it without our rules" % _where(module),
                             **result)
    module.exit_json(changed=True, diff=dict(before=before, after=wanted["rules"],
                                             before_header="table inet " + p["table"],
                                             after_header="table inet " + p["table"]), **result)


def _ephemeral(module):
    """The namespace's ip_local_port_range ("32768\t60999"), read in that namespace (/proc/sys/net is per
    namespace)."""
    p = module.params
    argv = ([p["nsenter"], "--net=/proc/%d/ns/net" % p["pid"], "--"] if p["pid"] else []) + \
        ["cat", "/proc/sys/net/ipv4/ip_local_port_range"]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg="cannot read the ephemeral port range of %s: %s" % (_where(module), err.strip()))
    return out.strip()


def _fingerprint(listing):
    found = re.search(r'comment "(grpo-ray [0-9a-f]{16})"', listing or "")
    return found.group(1) if found else ""


if __name__ == "__main__":
    main()
