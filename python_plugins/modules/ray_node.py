#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: one node of a Ray cluster (probe it, start its Ray as head or worker, stop it)."""

DOCUMENTATION = r"""
---
module: ray_node
short_description: Probe, start or stop one node's Ray for a multi-host verl run
description:
  - C(state=probe) reads what the cluster stage decides with, changing nothing, the address and the network
    interface this node reaches C(head_address) through (or those of C(interface)), whether the head's port
    answers (C(check_port)), the Ray and Python versions, every installed distribution (to compare the nodes'
    stacks) and the TCP ports something listens on (to refuse a Ray port that is taken).
  - C(state=started) runs the rendered start script (which exports the node's environment and runs C(ray start))
    unless this node's Ray runs from the very same script; a Ray started from another script is stopped first. A
    worker first checks that the head's port answers, and a failed join is explained (unreachable address or
    port, version mismatch, token).
  - C(state=stopped) stops this node's Ray (C(ray stop)) when it runs.
  - What was started is kept in C(state_dir/ray-node.json), in the workspace. Supports check mode.
options:
  state:
    description: What to do.
    type: str
    choices: [probe, started, stopped]
    default: probe
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
    description: The head's address. C(state=probe) finds the route to it; a worker checks its port before joining.
    type: str
  port:
    description: The head's Ray (GCS) port.
    type: int
    default: 6379
  interface:
    description: Use this network interface instead of the one the route to C(head_address) leaves through.
    type: str
  check_port:
    description: With C(state=probe), also try a TCP connection to C(head_address):C(port), and fail saying why
      (refused, timed out) when it does not open.
    type: bool
    default: false
  ray:
    description: The ray executable (the stack's venv).
    type: path
    default: ray
  timeout:
    description: Seconds C(ray start) or C(ray stop) may take.
    type: int
    default: 180
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Find the NIC that reaches the head
  ray_node:
    state: probe
    state_dir: /data/grpo/.grpo
    head_address: 10.0.0.11
  register: node

- name: Join the cluster
  ray_node:
    state: started
    role: worker
    script: /data/grpo/.grpo/ray/start_ray.sh
    state_dir: /data/grpo/.grpo
    head_address: 10.0.0.11
"""

RETURN = r"""
ip:
  description: This node's address toward the head (probe).
  returned: state=probe
  type: str
interface:
  description: The network interface with that address (probe).
  returned: state=probe
  type: str
interfaces:
  description: Every interface with an IPv4 address, name to address (probe).
  returned: state=probe
  type: dict
ray_version:
  description: The Ray this Python has (probe).
  returned: state=probe
  type: str
python_version:
  description: This Python's version (probe).
  returned: state=probe
  type: str
packages:
  description: Every installed distribution, canonical name to version (probe).
  returned: state=probe
  type: dict
ray_options:
  description: The options this Python's C(ray start) takes, from its CLI's source (probe); null without Ray.
  returned: state=probe
  type: list
listening:
  description: The TCP ports something listens on in this node's network namespace, port to local addresses (probe).
  returned: state=probe
  type: dict
reach:
  description: Why the head's port does not answer (then the module fails), or null when it does (probe with
    check_port; a failed join).
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
import platform
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo import cluster, firewall, workspace


def _running():
    """Whether this node's Ray (its raylet) runs."""
    return bool(cluster.ray_processes()["raylet"])


def _listening():
    texts = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name, encoding="ascii") as handle:
                texts.append(handle.read())
        except OSError:
            continue
    return {str(port): addresses for port, addresses in firewall.listening_ports(*texts).items()}


def _stop(module, ray, timeout):
    argv = [ray, "stop", "--grace-period", "30"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        output = proc.stdout + proc.stderr
    except (OSError, subprocess.TimeoutExpired) as err:
        module.fail_json(msg="ray stop failed: %s" % err)
    deadline = time.time() + 30
    while _running() and time.time() < deadline:
        time.sleep(1)
    if _running():
        subprocess.run([ray, "stop", "--force"], capture_output=True, text=True, timeout=timeout, check=False)
    return output


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["probe", "started", "stopped"], default="probe"),
            state_dir=dict(type="path", required=True),
            role=dict(type="str", choices=["head", "worker"]),
            script=dict(type="path"),
            head_address=dict(type="str"),
            port=dict(type="int", default=cluster.DEFAULT_PORT),
            interface=dict(type="str"),
            check_port=dict(type="bool", default=False),
            ray=dict(type="path", default="ray"),
            timeout=dict(type="int", default=180),
        ),
        required_if=[("state", "started", ["role", "script"])],
        supports_check_mode=True,
    )
    p = module.params
    record_path = os.path.join(p["state_dir"], "ray-node.json")
    running = _running()

    if p["state"] == "probe":
        try:
            if p["interface"]:
                ifname, ip = p["interface"], cluster.address_of(p["interface"])
            elif p["head_address"]:
                ip, ifname = cluster.route_to(p["head_address"], p["port"])
            else:
                ip = ifname = None
        except cluster.ClusterError as err:
            module.fail_json(msg="%s: %s. Set ray_cluster_interface to the NIC that reaches the other hosts, or "
                                 "ray_cluster_head_address to an address of the head they reach" % (
                                     "interface" if p["interface"] else "the route to the head", err))
        packages = cluster.installed_packages()
        result = dict(changed=False, ip=ip, interface=ifname, interfaces=cluster.interfaces(),
                      ray_version=packages.get("ray"), python_version=platform.python_version(),
                      packages=packages, running=running, listening=_listening(),
                      ray_options=cluster.ray_start_options())
        if p["check_port"] and p["head_address"]:
            result["reach"] = cluster.tcp_reachable(p["head_address"], p["port"])
            if result["reach"]:
                result.pop("packages")
                module.fail_json(msg=cluster.join_failure("", p["head_address"], p["port"], result["reach"]),
                                 **result)
        module.exit_json(**result)

    if p["state"] == "stopped":
        if not running:
            module.exit_json(changed=False, running=False)
        output = "" if module.check_mode else _stop(module, p["ray"], p["timeout"])
        if not module.check_mode:
            workspace.write_json(record_path, dict(workspace.read_json(record_path, {}) or {}, stopped_at=time.time()))
        module.exit_json(changed=True, running=module.check_mode, output=output)

    # started
    try:
        with open(p["script"], "rb") as handle:
            digest = hashlib.sha1(handle.read()).hexdigest()
    except OSError as err:
        module.fail_json(msg="the start script %s cannot be read: %s" % (p["script"], err))
    record = workspace.read_json(record_path, {}) or {}
    if running and record.get("script_sha1") == digest and not record.get("stopped_at"):
        module.exit_json(changed=False, running=True)
    if module.check_mode:
        module.exit_json(changed=True, running=running, diff=dict(
            before={"script_sha1": record.get("script_sha1"), "running": running},
            after={"script_sha1": digest, "running": True}))
    # A head this worker cannot reach fails before anything here changes (a Ray that runs keeps running).
    if p["role"] == "worker" and p["head_address"]:
        reach = cluster.tcp_reachable(p["head_address"], p["port"])
        if reach:
            module.fail_json(msg=cluster.join_failure("", p["head_address"], p["port"], reach), reach=reach,
                             running=running)
    output = ""
    if running:  # started from another script (other settings): stopped first
        output = _stop(module, p["ray"], p["timeout"])
    try:
        proc = subprocess.run(["bash", p["script"]], capture_output=True, text=True, timeout=p["timeout"],
                              check=False)
        output += proc.stdout + proc.stderr
        rc = proc.returncode
    except subprocess.TimeoutExpired as err:
        output += "%s" % err
        rc = None
    if rc != 0:
        reach = cluster.tcp_reachable(p["head_address"], p["port"]) if p["role"] == "worker" else None
        msg = (cluster.join_failure(output, p["head_address"], p["port"], reach) if p["role"] == "worker"
               else "ray start --head failed: %s" % " | ".join(
                   [line for line in output.splitlines() if line.strip()][-6:]))
        module.fail_json(msg=msg, output=output, running=_running())
    workspace.write_json(record_path, {"script_sha1": digest, "role": p["role"], "started_at": time.time()})
    module.exit_json(changed=True, running=_running(), output=output[-4000:])


if __name__ == "__main__":
    main()
