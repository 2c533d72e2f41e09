#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: put verl's source tree in the workspace from the source asked for, and stamp it."""

DOCUMENTATION = r"""
---
module: verl_source
short_description: Put verl's source tree in place (git commit, registry release, proven tarball or a path)
description:
  - Reads the stamp C(<state_dir>/verl-source.json) that names the source the tree C(dest) holds, and makes the
    tree the source C(source) asks for. C(kind=git) clones C(repo) at C(commit) (or checks C(commit) out in a git
    tree at another commit); C(kind=registry) downloads verl C(release)'s wheel with pip into
    C(<state_dir>/dl/verl-<release>) and unpacks it; C(kind=tarball) unpacks C(tarball_file), a tarball the
    C(verl_tarball) module has proven (C(strip_components) from its proof); C(kind=path) uses a tree that is there.
    Then it requires C(dest/verl/__init__.py) and writes the stamp.
  - Another source than the stamped one is fetched and proven first (a git clone into C(<dest>.incoming), whose
    commit must be C(commit); a release's download); only then is the old tree, which may carry the patch stage's
    edits, moved aside to C(<dest>.replaced-<UTC time>), never deleted. A new source that cannot be had fails with
    the workspace exactly as it was, naming the setting that changed.
  - A git tree at C(commit) is left alone, edits included (the patch stage edits verl in place). A git tree at
    another commit is moved to C(commit) only when it has no local changes.
  - Messages name the settings I(setting_names) maps I(source), I(commit), I(repo), I(release) and I(tarball) to
    (the deps stage's C(deps_pinning_verl_source), C(deps_pinning_verl_version), C(deps_pinning_verl_repo),
    C(deps_pinning_verl_release), C(deps_pinning_verl_tarball)), or those options themselves.
  - A second run with the same source changes nothing. In check mode nothing is fetched, moved, unpacked or
    written; C(actions) and the diff say what would be done.
options:
  source:
    description:
      - The source asked for, as the stamp records it. C(kind) is git (with C(repo), C(commit)), registry (with
        C(release)), tarball (with C(tarball), the setting as given, and C(commit)) or path (with C(path)).
    type: dict
    required: true
  dest:
    description: The source tree (C(deps_pinning_verl_dir)); for C(kind=path) the user's own tree.
    type: path
    required: true
  state_dir:
    description: The workspace's state folder (C(.grpo)), where the stamp and a release's download are kept.
    type: path
    required: true
  tarball_file:
    description: The proven tarball in the environment the module runs in (C(kind=tarball)).
    type: path
  strip_components:
    description:
      - How many leading folders to drop when unpacking the tarball (the C(verl_tarball) proof's). Left out when
        the tarball could not be proven yet (check mode before a URL's download); then nothing is unpacked.
    type: int
  python:
    description: The Python whose pip downloads a release (default the one running the module).
    type: str
  site:
    description: The site's pip settings without its index URLs (trusted_hosts, find_links, wheelhouse).
    type: dict
    default: {}
  index_url:
    description: The site's index URL; it may hold a password, so its value is masked and reaches pip through
      C(PIP_INDEX_URL), never a command line.
    type: str
    default: ""
  extra_index_urls:
    description: More index URLs (C(PIP_EXTRA_INDEX_URL)), masked the same way.
    type: list
    elements: str
    default: []
  commit:
    description:
      - Not read (the commit is C(source.commit)). Only named in messages, as the setting I(setting_names) maps it
        to.
    type: raw
  repo:
    description: Not read (C(source.repo)). Only named in messages, as the setting I(setting_names) maps it to.
    type: raw
  release:
    description: Not read (C(source.release)). Only named in messages, as the setting I(setting_names) maps it to.
    type: raw
  tarball:
    description: Not read (C(source.tarball)). Only named in messages, as the setting I(setting_names) maps it to.
    type: raw
extends_documentation_fragment:
  - grpo_setting_names
  - grpo_named_site
  - grpo_proxy
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: verl at the guide's commit
  verl_source:
    source: {kind: git, repo: "https://github.com/volcengine/verl.git",
             commit: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba}
    dest: /data/grpo/verl
    state_dir: /data/grpo/.grpo

- name: verl 0.5.0 from the package index, through a mirror
  verl_source:
    source: {kind: registry, release: "0.5.0"}
    dest: /data/grpo/verl
    state_dir: /data/grpo/.grpo
    index_url: https://mirror.example.com/simple
"""

RETURN = r"""
source:
  description: The source asked for (now stamped).
  returned: always
  type: dict
  sample: {kind: git, repo: "https://github.com/volcengine/verl.git", commit: 634bd9352bfd21df3abab2dcfb86deb91f04c1ba}
held:
  description: What the stamp said the workspace held before (null without a stamp, {} for an unreadable one).
  returned: always
  type: dict
switched:
  description: Whether another source than the stamped one was asked for.
  returned: always
  type: bool
replaced:
  description: Where the former tree was moved (or, in check mode, would be); null when none was.
  returned: always
  type: str
commit:
  description: The commit the tree has checked out (git; in check mode the one it would have).
  returned: always
  type: str
tree:
  description: Whether C(dest/verl/__init__.py) is there (in check mode, before the change that would put it there).
  returned: always
  type: bool
actions:
  description: What was done (in check mode, what would be), in order.
  returned: always
  type: list
  elements: str
dest:
  description: The source tree.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors, proxy
from ansible.module_utils.ascend_grpo.deps import verl_checkout


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="dict", required=True),
            dest=dict(type="path", required=True),
            state_dir=dict(type="path", required=True),
            tarball_file=dict(type="path"),
            strip_components=dict(type="int"),
            python=dict(type="str"),
            site=dict(type="dict", default={}),
            index_url=dict(type="str", default="", no_log=True),
            extra_index_urls=dict(type="list", elements="str", default=[], no_log=True),
            proxy=dict(type="dict", default={}, no_log=True),
            # only named in messages (setting_names maps them to the role's settings)
            commit=dict(type="raw"),
            repo=dict(type="raw"),
            release=dict(type="raw"),
            tarball=dict(type="raw"),
            wheelhouse=dict(type="raw"),
            workspace_host=dict(type="raw"),
            setting_names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    module.no_log_values.update(verl_checkout.source_credentials(module.params))
    try:
        result = verl_checkout.source_step(module.params, module.check_mode, module.run_command)
    except (verl_checkout.ModuleFailure, proxy.ProxyError) as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
