#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: plan, install and verify a pinned Python stack described by a profile."""

DOCUMENTATION = r"""
---
module: pinned_venv
short_description: Plan, install and verify a pinned Python stack (a profile of ordered pip phases)
description:
  - C(state=present) first reads the installed versions of the profile's core packages with importlib.metadata.
    When every pin is satisfied and the editable source is installed from the expected folder, pip is not run at
    all and nothing changes.
  - Otherwise it plans before it installs; the whole profile is resolved with C(pip install --dry-run --report)
    (nothing is downloaded beyond metadata where the index allows) and every core package is compared with its
    pin. A conflict or a drift fails before anything is installed, unless accepted by name in C(accept_drift).
    Then the phases run in order (removals after every phase that could bring a package back, the editable
    source last with C(--no-deps)).
  - After an install the drift report is made again from what is installed now (the editable source included)
    and the module fails on drift, so one call plans, installs and verifies.
  - When the stack holds (satisfied before, or verified after the install), the module leaves the deps stage's
    record C(<state_dir>/deps.json) for the later stages (the verl tree, the profile, the Python); never in check
    mode, and only when it differs from the one there.
  - C(state=planned) only plans (read-only). C(state=verified) only writes and returns the drift report of the
    core packages (read-only) and fails on drift.
  - C(state=looked) is the quick look of C(state=present) alone. When the stack holds it does what C(state=present)
    does then (the drift report, the record); otherwise it returns C(satisfied=false) and the drift report and
    changes nothing (no venv made, no plan, no pip), so that a task can run C(state=present) only when pip must
    run, polled with C(async) and bounded in time.
  - In check mode C(state=present) plans and returns the pip commands it would run, without running them.
options:
  state:
    description: present (plan, install, report), planned (plan only), verified (drift report only) or looked
      (whether present would run pip, changing nothing when it would).
    type: str
    choices: [present, planned, verified, looked]
    default: present
  profile:
    description: The profile (name, constraints, pins, phases); see the role's profiles.
    type: dict
    required: true
  paths:
    description: Values for the placeholders in the profile, such as C({files}) and C({verl}).
    type: dict
    default: {}
  site:
    description:
      - Site index settings that win over the profile's, with keys index_url, extra_index_urls, find_links,
        trusted_hosts and wheelhouse (offline, C(--no-index --find-links)).
    type: dict
    default: {}
  index_url:
    description:
      - The site's index URL (it wins over C(site.index_url)). It may hold a password; its value is masked in the
        result and reaches pip as C(PIP_INDEX_URL), never on a command line.
    type: str
    default: ""
  extra_index_urls:
    description: More site index URLs (C(PIP_EXTRA_INDEX_URL)), masked the same way.
    type: list
    elements: str
    default: []
  python:
    description: The Python whose environment is managed (default the one running the module).
    type: str
  accept_drift:
    description: Core packages whose conflict or drift is accepted (reported, not fatal).
    type: list
    elements: str
    default: []
  state_dir:
    description: Folder for the constraints file, the plan and the drift report (the workspace's .grpo).
    type: path
    required: true
  editable_name:
    description: Distribution name of the editable source (checked to come from C(paths.verl)).
    type: str
    default: verl
  source:
    description:
      - What the source stage put into C(paths.verl) (for example kind git and commit, or kind registry and
        release). Compared with the stamp C(verl-source.json) in C(state_dir) (and, for git, with the checked-out
        commit); C(satisfied) is true only when they match.
    type: dict
  fail_on_drift:
    description: With C(state=verified), fail on drift (false only reports, for a quick look before deciding).
    type: bool
    default: true
  download_cache:
    description:
      - A folder of downloaded packages (in the workspace it survives the container). The plan first downloads what
        it resolves into C(<download_cache>/wheels) (C(pip download); not in check mode), and every pip run looks
        there before the index (C(--find-links)), so a reinstall, a recreated container or another run on the same
        host fetches nothing again, even from an index whose answers pip's HTTP cache may not keep. pip's own cache
        is C(<download_cache>/http).
      - Not used with a site wheelhouse (that is offline already).
    type: path
  venv:
    description:
      - A virtual environment to manage instead of I(python) (its C(bin/python)), made first with I(venv_python)
        (C(python -m venv)) when it is not there; in check mode a missing one is reported as a change.
      - One that cannot serve (its Python is gone, or of another version than I(venv_python), as after a new
        image; or it disagrees with I(venv_site_packages)) is moved aside to C(<venv>.bak-<time>), never deleted,
        and made again.
    type: path
  venv_python:
    description: The Python that makes I(venv) (default the one running the module).
    type: str
  venv_site_packages:
    description:
      - Make I(venv) with C(--system-site-packages), so it sees what I(venv_python) has installed (a CANN image's
        own Python packages); what the profile pins is installed into the venv all the same.
    type: bool
    default: false
  plan_platform:
    description:
      - Resolve for another platform from metadata only (for example arch aarch64, python_version 3.11,
        glibc 2.35). Empty resolves for this environment.
    type: dict
    default: {}
extends_documentation_fragment:
  - grpo_setting_names
  - grpo_named_site
  - grpo_proxy
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Install the vLLM 0.13.0 stack
  pinned_venv:
    profile: "{{ deps_pinning_profile_data }}"
    paths: {files: /data/grpo/.grpo/requirements, verl: /data/grpo/verl}
    state_dir: /data/grpo/.grpo
    accept_drift: [ray]
"""

RETURN = r"""
satisfied:
  description: Whether every pin was already satisfied before anything ran (then pip did not run; with
    C(state=looked), whether C(state=present) would leave pip unrun).
  returned: always
  type: bool
venv:
  description:
    - What was done to I(venv) (action kept, made or remade), its Python, why it was (re)made and where the old one
      was moved.
  returned: when venv is given
  type: dict
plan:
  description: Per core package, pinned vs planned version, status (ok, drift, conflict, missing) and who pulls it.
  returned: when a plan was made
  type: dict
plan_lines:
  description: The plan as readable lines (table, replaced requirement lines, what could not be planned).
  returned: when a plan was made
  type: list
  elements: str
overrides:
  description: Requirement-file lines of core packages that the profile's pins replaced.
  returned: when a plan was made
  type: list
steps:
  description: The pip commands run (or, in check mode, that would run), in order.
  returned: state=present
  type: list
report:
  description: The drift report, every core package with expected and installed version and status.
  returned: always
  type: dict
table:
  description: The drift report (or the plan) as a readable table.
  returned: always
  type: str
report_path:
  description: Where the drift report was written on the host (the workspace's state folder).
  returned: when the report was written
  type: str
record:
  description: The deps stage's record (verl_dir, profile, python, python_version, arch, source, download_cache, pins,
    accept_drift) left in
    C(<state_dir>/deps.json) for the later stages.
  returned: when the stack holds
  type: dict
  sample: {verl_dir: /data/grpo/verl, profile: vllm0.13.0, python: /usr/bin/python3, python_version: "3.11.2"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors, proxy
from ansible.module_utils.ascend_grpo.deps import venv_install


ARGUMENT_SPEC = dict(
    state=dict(type="str", default="present", choices=["present", "planned", "verified", "looked"]),
    profile=dict(type="dict", required=True),
    paths=dict(type="dict", default={}),
    site=dict(type="dict", default={}),
    index_url=dict(type="str", default="", no_log=True),
    extra_index_urls=dict(type="list", elements="str", default=[], no_log=True),
    python=dict(type="str"),
    accept_drift=dict(type="list", elements="str", default=[]),
    state_dir=dict(type="path", required=True),
    editable_name=dict(type="str", default="verl"),
    plan_platform=dict(type="dict", default={}),
    download_cache=dict(type="path"),
    source=dict(type="dict"),
    fail_on_drift=dict(type="bool", default=True),
    venv=dict(type="path"),
    venv_python=dict(type="str"),
    venv_site_packages=dict(type="bool", default=False),
    proxy=dict(type="dict", default={}, no_log=True),
    # only named in messages (setting_names maps them to the role's settings)
    wheelhouse=dict(type="raw"),
    workspace_host=dict(type="raw"),
    setting_names=dict(type="dict", default={}),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[("python", "venv")],
                           supports_check_mode=True)
    # a find-links location's, the verl repository's or the proxy's password: out of everything returned, arguments
    # included
    module.no_log_values.update(venv_install.hidden_values(module.params))
    try:
        result = venv_install.install(module.params, module.check_mode, module.run_command)
    except (venv_install.VenvError, proxy.ProxyError) as err:
        module.fail_json(**errors.module_failure(module, err))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
