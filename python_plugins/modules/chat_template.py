#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: install a chat template into a model folder's tokenizer config."""

DOCUMENTATION = r"""
---
module: chat_template
short_description: Install a chat template in a model's tokenizer_config.json (and chat_template.jinja)
description:
  - Sets C(chat_template) in C(tokenizer_config.json) and keeps every other key; when the folder also has a
    C(chat_template.jinja) (which transformers prefers), that file gets the same text.
  - The template is given as text (I(template)), or taken from the guide's sample C(tokenizer_config.json)
    (I(sample_file) or I(sample_url)); that file, or a C(git archive) tarball holding it, is proven by its sha256
    (I(sample_sha256)) before anything is read from it, and only its C(chat_template) is installed; the model's other
    tokenizer keys stay its own.
  - The template is data, never rendered here; it must be a string, and Jinja that parses when the Python running
    the module has Jinja. The sample's JSON must parse. All of this is checked before anything is written.
  - A downloaded sample is kept, once proven, in I(cache_dir), so a rerun needs no network.
  - The first change to a file keeps its original as C(<file>.orig), never overwritten later.
  - Nothing is written when the template is already in place. Supports check mode and diff (in check mode a URL
    is read, to show the diff, but nothing is kept).
options:
  model_dir:
    description: The model folder.
    type: path
    required: true
  template:
    description: The template's text (Jinja, as transformers renders it; not templated by Ansible).
    type: str
  sample_file:
    description: The sample's C(tokenizer_config.json), or a tarball holding it, on the host the module runs on.
    type: path
  sample_url:
    description: Where to download the sample's C(tokenizer_config.json) (or a tarball holding it) from.
    type: str
  sample_sha256:
    description: The sha256 of the sample's C(tokenizer_config.json) (the file itself, also when inside a tarball).
    type: str
  cache_dir:
    description: Where a download from I(sample_url) is kept once proven (named by its sha256).
    type: path
  state:
    description:
      - C(present) installs the template; C(proven) only proves the sample (and keeps a download), without reading
        the model folder, for a preflight that runs before the weights are there.
    type: str
    choices: [present, proven]
    default: present
extends_documentation_fragment:
  - grpo_setting_names
  - grpo_proxy
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Install the package's chat template
  chat_template:
    model_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct
    template: "{{ lookup('ansible.builtin.file', 'templates/chat_template.jinja') }}"

- name: Install the guide's sample's chat template, from the sample's folder as a git archive tarball
  chat_template:
    model_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct
    sample_file: /upstream/cann-recipes-train-93819a74531c19c5c6089a5a916519ae20cf28fb-verl_npu_demo.tar.gz
    sample_sha256: 566495cd5c2662151b1782f1832036bb592ab5c9df6b5f1b7b67838b97907ada
"""

RETURN = r"""
files:
  description: The files changed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
backups:
  description: Originals kept by this run.
  returned: always
  type: list
  elements: str
template_sha256:
  description: The sha256 of the template's text (UTF-8), the one installed.
  returned: always
  type: str
sample:
  description: >-
    With a sample: where it came from (origin), the pinned file's sha256, its path in a tarball (member) and the
    tarball's git commit (commit), whether the kept download answered (cached), and the keys besides chat_template
    on which the sample's file differs from the model's (other_keys_kept: these stay the model's).
  returned: when a sample was given
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible.module_utils.ascend_grpo.assets import template_install
from ansible.module_utils.ascend_grpo.common import errors, proxy


def main():
    module = AnsibleModule(
        argument_spec=dict(model_dir=dict(type="path", required=True), template=dict(type="str"),
                           sample_file=dict(type="path"), sample_url=dict(type="str"),
                           sample_sha256=dict(type="str"), cache_dir=dict(type="path"),
                           state=dict(type="str", choices=["present", "proven"], default="present"),
                           proxy=dict(type="dict", default={}, no_log=True),
                           setting_names=dict(type="dict", default={})),
        mutually_exclusive=[template_install.SOURCES],
        required_one_of=[template_install.SOURCES],
        required_by={"sample_file": "sample_sha256", "sample_url": "sample_sha256"},
        supports_check_mode=True,
    )
    # the proxy's password: out of everything returned, the echo of the arguments included
    module.no_log_values.update(proxy.hidden_values(module.params["proxy"]))
    try:
        result = template_install.install(module.params, module.check_mode,
                                          lambda url: fetch_url(module, url, timeout=60))
    except (template_install.TemplateError, proxy.ProxyError) as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
