#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: an offline bundle's parts fetched on a connected host, for the target host's platform."""

DOCUMENTATION = r"""
---
module: offline_export
short_description: Fetch what a chain needs into an offline bundle, for another host's platform
description:
  - Runs on a host that reaches the internet (the controller) and fills the folders of an offline bundle for a
    host that does not, namely C(wheels/) (pip downloads of the deps profile's and the eval profile's packages, for the
    target's machine, Python and C library, the source packages a profile builds and their build tools), C(verl/)
    (verl's tree as a git archive tarball, proven to be the commit), C(model/) and C(data/) (from the hub with
    huggingface_hub, or copied from a folder), C(sample/) (the guide's sample file).
  - Unless this host's machine, Python and C library equal the target's, pip downloads wheels only, with its
    platform options; a listed package without a wheel for the target is fetched as its source package, and what
    cannot be fetched fails the task, naming it (the rest is kept).
  - The container image and the manifest are written by other tasks (community.docker.docker_image_export,
    offline_bundle).
  - In check mode, nothing is downloaded or copied; the result says what would be.
extends_documentation_fragment:
  - grpo_setting_names
options:
  dest:
    description: The bundle's folder on this host.
    type: path
    required: true
  parts:
    description: The parts to fetch.
    type: list
    elements: str
    default: [wheels, verl, model, data, sample]
  target:
    description: The target's platform, C(arch) (aarch64 or x86_64), C(python_version) (major.minor) and C(glibc).
    type: dict
    required: true
  profiles:
    description: The stack's profiles, each C(data) (the profile as loaded) and C(files) (its requirement lists).
    type: list
    elements: dict
    default: []
  python:
    description: The Python whose pip downloads (this host's; any Python with pip).
    type: str
    default: ""
  site:
    description: The index settings besides the URLs, C(trusted_hosts) and C(find_links).
    type: dict
    default: {}
  index_url:
    description: The package index (a mirror) pip downloads from instead of the profiles' own; may hold a password.
    type: str
    default: ""
  extra_index_urls:
    description: More indexes; may hold a password.
    type: list
    elements: str
    default: []
  pip_cache:
    description: pip's cache folder (PIP_CACHE_DIR), so files downloaded before are not downloaded again.
    type: path
    default: ""
  wheel_cache:
    description: A folder of files downloaded before (a deps stage's download cache, C(<cache>/wheels)); each
      download is tried from it alone first (C(--no-index)), and from the indexes when it lacks a file.
    type: path
    default: ""
  verl:
    description: C(commit) (40 characters), and C(tarball) (a file here, with C(tarball_sha256)) or C(repo) (git).
    type: dict
    default: {}
  model:
    description: C(source) (hf or local), C(repo), C(revision), C(allow_patterns), C(endpoint), C(local_dir).
    type: dict
    default: {}
  data:
    description: The same keys as C(model), for the MATH dataset (its parquet files).
    type: dict
    default: {}
  token:
    description: A hub token for private or gated repositories (never shown).
    type: str
    default: ""
  sample:
    description: C(file) (the guide's sample here), or C(url) and C(sha256).
    type: dict
    default: {}
author: ascend-grpo
"""

EXAMPLES = r"""
- name: Fetch the wheels and verl for a 910B host
  offline_export:
    dest: /srv/grpo-bundle
    parts: [wheels, verl]
    target: {arch: aarch64, python_version: "3.11", glibc: "2.34"}
    profiles:
      - {data: "{{ deps_profile }}", files: "{{ playbook_dir }}/../roles/deps_pinning/files/requirements"}
    verl: {commit: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba, repo: https://github.com/volcengine/verl.git}
"""

RETURN = r"""
parts:
  description: Per part what was done (wheels, files, bytes, native, unfetched; verl path and proof; model/data
    files, copied, bytes; sample path).
  returned: always
  type: dict
target:
  description: The target platform as checked.
  returned: always
  type: dict
field:
  description: On failure, the option at fault.
  returned: failure
  type: str
"""

import sys

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.bundle import offline_export
from ansible.module_utils.ascend_grpo.common import errors


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            parts=dict(type="list", elements="str", default=["wheels", "verl", "model", "data", "sample"]),
            target=dict(type="dict", required=True),
            profiles=dict(type="list", elements="dict", default=[]),
            python=dict(type="str", default=""),
            site=dict(type="dict", default={}),
            index_url=dict(type="str", default="", no_log=True),
            extra_index_urls=dict(type="list", elements="str", default=[], no_log=True),
            pip_cache=dict(type="path", default=""),
            wheel_cache=dict(type="path", default=""),
            verl=dict(type="dict", default={}),
            model=dict(type="dict", default={}),
            data=dict(type="dict", default={}),
            token=dict(type="str", default="", no_log=True),
            sample=dict(type="dict", default={}),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    module.no_log_values.update(offline_export.hidden_values(module.params))
    params = dict(module.params, python=module.params["python"] or sys.executable)
    try:
        result = offline_export.run_export(params, module.check_mode, module.run_command)
    except errors.StageFailure as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
