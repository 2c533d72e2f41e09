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

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible.module_utils.ascend_grpo.assets import template_install

SOURCES = ("template", "sample_file", "sample_url")
MAX_DOWNLOAD = 256 * 1024 * 1024


def _downloader(module):
    def download(url):
        last = None
        for attempt in range(3):
            response, info = fetch_url(module, url, timeout=60)
            if response is not None and info.get("status") == 200:
                data = response.read(MAX_DOWNLOAD + 1)
                if len(data) > MAX_DOWNLOAD:
                    raise template_install.TemplateError("%s is larger than %d MB: not the sample's file"
                                                         % (url, MAX_DOWNLOAD // 2 ** 20))
                return data
            last = "%s %s" % (info.get("status"), info.get("msg", ""))
            if isinstance(info.get("status"), int) and 400 <= info["status"] < 500:
                break  # not there: asking again will not help
            if attempt < 2:
                time.sleep(2 * (attempt + 1))
        raise template_install.TemplateError(
            "cannot download %s (%s): set assets_chat_template_sample_url to a mirror, or "
            "assets_chat_template_sample_file to a copy on the host (the file, or a git archive tarball of the "
            "sample's folder)"
            % (url, last.strip()))
    return download


def main():
    module = AnsibleModule(
        argument_spec=dict(model_dir=dict(type="path", required=True), template=dict(type="str"),
                           sample_file=dict(type="path"), sample_url=dict(type="str"),
                           sample_sha256=dict(type="str"), cache_dir=dict(type="path"),
                           state=dict(type="str", choices=["present", "proven"], default="present")),
        mutually_exclusive=[SOURCES],
        required_one_of=[SOURCES],
        required_by={"sample_file": "sample_sha256", "sample_url": "sample_sha256"},
        supports_check_mode=True,
    )
    params = module.params
    try:
        sample = None
        template = params["template"]
        if template is None:
            sample = template_install.load_sample(params["sample_sha256"], path=params["sample_file"],
                                                  url=params["sample_url"], download=_downloader(module),
                                                  cache_dir=params["cache_dir"], keep=not module.check_mode)
            template = sample["template"]
            other = template_install.other_keys_differing(params["model_dir"], sample["config"])
        if params["state"] == "proven":
            result = {"changed": False, "files": [], "backups": [], "diff": []}
        else:
            result = template_install.apply(params["model_dir"], template, check=module.check_mode)
    except (template_install.TemplateError, OSError) as err:
        # the assets stage's setting that gave the sample, so the message names what to change
        setting = "" if sample is not None else (
            "assets_chat_template_sample_file: " if params["sample_file"] else
            "assets_chat_template_sample_url: " if params["sample_url"] else "")
        module.fail_json(msg=setting + str(err))
    result["template_sha256"] = template_install.sha256_text(template)
    if sample is not None:
        result["sample"] = {key: sample[key] for key in ("origin", "sha256", "member", "commit", "cached")}
        result["sample"]["other_keys_kept"] = other
    module.exit_json(**result)


if __name__ == "__main__":
    main()
