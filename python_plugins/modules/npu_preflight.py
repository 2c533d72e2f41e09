#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: check an Ascend NPU host before a training container is made."""

DOCUMENTATION = r"""
---
module: npu_preflight
short_description: Check an Ascend NPU host (device nodes, driver folders, npu-smi, disk) before anything changes
description:
  - Checks that each requested card has its C(/dev/davinciN) node and that the shared nodes exist as character
    devices, that the driver and add-ons folders exist, that C(npu-smi info) runs and lists every requested card as
    healthy, and that the workspace disk has enough free space.
  - Reads only; never changes the host. Fails with every problem found, each naming what is missing and the fix;
    with C(fail_on_problems=false) it only reports them in C(problems), for a caller that lists them together with
    problems of its own.
  - Returns the parsed C(npu-smi info) table so later tasks can show health, HBM and AICore use.
options:
  cards:
    description: Card numbers (the N of C(/dev/davinciN)) that the container will use.
    type: list
    elements: int
    required: true
  dev_dir:
    description: Folder holding the device nodes.
    type: path
    default: /dev
  shared_nodes:
    description: Device nodes every card needs besides its own.
    type: list
    elements: str
    default: [davinci_manager, devmm_svm, hisi_hdc]
  driver_dir:
    description: The Ascend driver folder.
    type: path
    default: /usr/local/Ascend/driver
  addons_dir:
    description: The Ascend add-ons folder.
    type: path
    default: /usr/local/Ascend/add-ons
  npu_smi:
    description: The npu-smi command (a name on PATH or a path).
    type: str
    default: npu-smi
  workspace:
    description: Host folder that will hold the workspace (need not exist yet).
    type: path
    required: true
  min_free_gib:
    description:
      - What the run writes where the workspace is, in GiB (the container stage gives its estimate,
        C(ascend_grpo.train.run_size)). What the workspace already holds counts as written; it is measured only when the
        free space alone falls short.
    type: float
    default: 50
  min_free_why:
    description: How I(min_free_gib) was reached, for the message when there is too little room.
    type: str
    default: ""
  docker_root:
    description:
      - Docker's data root (C(docker info)'s DockerRootDir) when an image is about to be pulled there; empty skips
        the check. When it shares a filesystem with the workspace, both needs count.
    type: str
    default: ""
  image_gib:
    description: The image's size on disk after the pull, in GiB.
    type: float
    default: 10
  fail_on_problems:
    description: Fail when a problem is found (false reports them in C(problems) and succeeds).
    type: bool
    default: true
  max_ckpt_to_keep:
    description:
      - Not read. Only named, in the problem about too little room (keep fewer checkpoints), as the setting
        I(setting_names) maps it to (the number of checkpoints the run keeps, which I(min_free_gib) counts).
    type: raw
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Check the host before creating the container
  npu_preflight:
    cards: [0]
    workspace: /data/grpo
    min_free_gib: 50.6
    docker_root: /var/lib/docker
    image_gib: 10
  register: npu_host
"""

RETURN = r"""
npu_smi:
  description: The parsed C(npu-smi info) table (version, cards with health, HBM and AICore use, processes).
  returned: when npu-smi ran
  type: dict
cards:
  description: The requested cards' health, AICore %, HBM used/total, temperature and power.
  returned: always
  type: list
  elements: dict
  sample: [{npu: 0, name: 910B3, health: OK, aicore_pct: 0.0, hbm_mb_used: 3161, hbm_mb_total: 65536}]
disk_free_gib:
  description: Free GiB where the workspace is or will be.
  returned: always
  type: float
npu_smi_path:
  description: The npu-smi that ran, as a full path when it was found on PATH.
  returned: always
  type: str
docker_devices:
  description: The device mappings for the container, C(host_node:/dev/name), cards first.
  returned: always
  type: list
  elements: str
problems:
  description: Every problem found (empty when the host is ready), naming the settings I(setting_names) maps.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.container import host_checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cards=dict(type="list", elements="int", required=True),
            dev_dir=dict(type="path", default="/dev"),
            shared_nodes=dict(type="list", elements="str", default=["davinci_manager", "devmm_svm", "hisi_hdc"]),
            driver_dir=dict(type="path", default="/usr/local/Ascend/driver"),
            addons_dir=dict(type="path", default="/usr/local/Ascend/add-ons"),
            npu_smi=dict(type="str", default="npu-smi"),
            workspace=dict(type="path", required=True),
            min_free_gib=dict(type="float", default=50),
            min_free_why=dict(type="str", default=""),
            docker_root=dict(type="str", default=""),
            image_gib=dict(type="float", default=10),
            fail_on_problems=dict(type="bool", default=True),
            max_ckpt_to_keep=dict(type="raw"),  # only named in a message (setting_names maps it)
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = host_checks.preflight(module.params, module.get_bin_path)
    except host_checks.HostNotReady as err:
        module.fail_json(**errors.module_failure(module, err))
    result["problems"] = errors.module_text(module, result["problems"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
