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
  - The first change to a file keeps its original as C(<file>.orig), never overwritten later.
  - Nothing is written when the template is already in place. Supports check mode and diff.
options:
  model_dir:
    description: The model folder.
    type: path
    required: true
  template:
    description: The template's text (Jinja, as transformers renders it; not templated by Ansible).
    type: str
    required: true
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Install the package's chat template
  chat_template:
    model_dir: /data/grpo/models/Qwen2.5-1.5B-Instruct
    template: "{{ lookup('ansible.builtin.file', 'templates/chat_template.jinja') }}"
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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo import chat_template


def main():
    module = AnsibleModule(
        argument_spec=dict(model_dir=dict(type="path", required=True), template=dict(type="str", required=True)),
        supports_check_mode=True,
    )
    try:
        result = chat_template.apply(module.params["model_dir"], module.params["template"], check=module.check_mode)
    except (chat_template.TemplateError, OSError) as err:
        module.fail_json(msg=str(err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
