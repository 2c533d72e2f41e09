#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: plan, install and verify a pinned Python stack described by a profile."""

DOCUMENTATION = r"""
---
module: deps_pinning
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
  - In check mode C(state=present) plans and returns the pip commands it would run, without running them.
options:
  state:
    description: present (plan, install, report), planned (plan only) or verified (drift report only).
    type: str
    choices: [present, planned, verified]
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
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Install the vLLM 0.13.0 stack
  deps_pinning:
    profile: "{{ deps_pinning_profile_data }}"
    paths: {files: /data/grpo/.grpo/requirements, verl: /data/grpo/verl}
    state_dir: /data/grpo/.grpo
    accept_drift: [ray]
"""

RETURN = r"""
satisfied:
  description: Whether every pin was already satisfied before anything ran (then pip did not run).
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

import json
import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo import pins, stack, workspace


def profile_digest(profile, paths):
    """sha256 of the profile and the requirement files it reads: a changed profile is not 'satisfied'. A file
    that is not there yet counts as such (then nothing installed by this profile can match)."""
    import hashlib

    digest = hashlib.sha256(json.dumps(profile, sort_keys=True).encode())
    for phase in profile["phases"]:
        for path in phase.get("requirements_files") or []:
            try:
                with open(pins.expand(path, paths), encoding="utf-8") as handle:
                    digest.update(handle.read().encode())
            except OSError:
                digest.update(b"<missing>")
    return digest.hexdigest()


def source_matches(source, state_dir, verl_dir, run):
    """The source stamp in state_dir equals ``source`` (and a git tree is at the stamped commit)."""
    if source is None:
        return True
    try:
        stamp = workspace.read_json(os.path.join(state_dir, "verl-source.json"))
    except (OSError, ValueError):
        return False
    if stamp != source:
        return False
    if source.get("kind") == "git":
        rc, out, _ = run(["git", "-C", verl_dir, "rev-parse", "HEAD"])
        return rc == 0 and out.strip() == source.get("commit")
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="present", choices=["present", "planned", "verified"]),
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
        ),
        mutually_exclusive=[("python", "venv")],
        supports_check_mode=True,
    )
    p = module.params
    # The site's index URLs (they may hold a password) come as options of their own: Ansible masks their values
    # wherever they would appear in this module's result, and they reach pip through its environment, never argv.
    if p["index_url"] or p["extra_index_urls"]:
        p["site"] = dict(p["site"], **({"index_url": p["index_url"]} if p["index_url"] else {}),
                         **({"extra_index_urls": p["extra_index_urls"]} if p["extra_index_urls"] else {}))
    profile = p["profile"]
    problems = pins.validate_profile(profile)
    if problems:
        module.fail_json(msg="profile %s is not valid: %s" % (profile.get("name"), "; ".join(problems)))
    python = p["python"] or sys.executable
    venv_result = None
    if p["venv"]:
        maker = p["venv_python"] or sys.executable
        if maker == sys.executable:
            base_version = "%d.%d" % sys.version_info[:2]
        else:
            rc, out, err = module.run_command([maker, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            if rc != 0:
                module.fail_json(msg="the Python %s that is to make the virtual environment %s does not run: %s" % (
                    maker, p["venv"], (err or out).strip()[-400:]))
            base_version = out.strip()
        try:
            venv_result = stack.ensure_venv(p["venv"], maker, base_version, p["venv_site_packages"],
                                            module.check_mode, lambda argv: module.run_command(argv))
        except stack.StackError as err:
            module.fail_json(msg=str(err))
        python = venv_result["python"]
        if venv_result["action"] != "kept":
            if module.check_mode and p["venv_site_packages"]:
                # a new venv that sees the base Python's packages starts out as that Python: plan against it
                python = maker
            elif module.check_mode:
                module.exit_json(changed=True, satisfied=False, python=python, venv=venv_result,
                                 msg="would %s the virtual environment %s (%s), then install %s into it" % (
                                     "make" if venv_result["action"] == "made" else "move aside and remake",
                                     p["venv"], venv_result["reason"], profile["name"]))
    paths = {k: str(v) for k, v in p["paths"].items()}
    p["paths"] = paths
    os.makedirs(p["state_dir"], exist_ok=True)

    not_read = []

    def read_file(path):
        # check mode before the first real run: verl's tree and the shipped lists are not there yet; the real run
        # puts them in place and reads them
        if module.check_mode and not os.path.exists(path):
            not_read.append(path)
            return ""
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as err:
            module.fail_json(msg="requirements file %s of profile %s cannot be read: %s" % (
                path, profile["name"], err.strerror))

    pip_env = {}
    if p["download_cache"]:
        pip_env["PIP_CACHE_DIR"] = os.path.join(p["download_cache"], "http")
        if not p["site"].get("wheelhouse"):
            p["site"] = dict(p["site"], wheel_cache=os.path.join(p["download_cache"], "wheels"))
            os.makedirs(p["site"]["wheel_cache"], exist_ok=True)

    def run(argv, env=None):
        argv, env = pins.index_env(argv, env)
        rc, out, err = module.run_command(argv, environ_update=env)
        return rc, out, err

    editables = [pins.expand(ph["editable"], paths) for ph in profile["phases"] if ph.get("editable")]
    try:
        before = stack.probe(python, p["editable_name"], run)
    except stack.StackError as err:
        module.fail_json(msg=str(err))
    arch = before["machine"]
    report = pins.check_installed(profile["pins"], before["versions"], p["accept_drift"])
    editable_ok = all(before["editable_url"] == "file://" + os.path.abspath(e) for e in editables)
    source_ok = source_matches(p["source"], p["state_dir"], paths.get("verl"), run)
    installed_path = os.path.join(p["state_dir"], "deps-installed.json")
    installed_digest = (workspace.read_json(installed_path) or {}).get("profile_sha256")
    digest = profile_digest(profile, paths)
    # the last install was of this very profile (the quick look and state=present); plain verify does not care
    profile_ok = installed_digest == digest if (p["state"] == "present" or p["source"] is not None) else True
    # accepted drift counts as satisfied, or every rerun would run pip
    satisfied = report["ok"] and editable_ok and source_ok and profile_ok
    steps_python = venv_result["python"] if venv_result else python
    result = dict(changed=venv_result is not None and venv_result["action"] != "kept",
                  satisfied=satisfied, source_ok=source_ok, python=steps_python,
                  python_version=before["python"], arch=arch)
    if venv_result:
        result["venv"] = venv_result

    def with_editable(report, editable_url):
        if not all(editable_url == "file://" + os.path.abspath(e) for e in editables):
            report["rows"].append({"package": p["editable_name"], "expected": "editable from " + ", ".join(editables),
                                   "installed": editable_url, "status": "drift"})
            report["drift"].append(p["editable_name"])
            report["ok"] = False
        return report

    def finish(report, holds, **extra):
        path = os.path.join(p["state_dir"], "deps-drift.json")
        if not module.check_mode:
            workspace.write_json(path, {"profile": profile["name"], "python": before["python"], "arch": arch,
                                        **report})
        result.update(report=report, report_path=path,
                      table=pins.table(report["rows"], ["package", "expected", "installed", "status"]), **extra)
        if not report["ok"] and p["fail_on_drift"]:
            module.fail_json(msg="drift in profile %s: %s (expected vs installed above; accept by name with "
                                 "deps_pinning_accept_drift only if you know why)" % (
                                     profile["name"], ", ".join(report["drift"])), **result)
        if holds and paths.get("verl"):
            # the later stages read this instead of recomputing where verl is (a path source included)
            record = {"verl_dir": os.path.abspath(paths["verl"]), "profile": profile["name"], "python": steps_python,
                      "python_version": before["python"], "arch": arch, "source": p["source"],
                      "download_cache": p["download_cache"],
                      # the doctor checks the environment against these before a launch
                      "pins": {k: str(v) for k, v in profile["pins"].items()}, "accept_drift": list(p["accept_drift"])}
            result["record"] = record
            if workspace.write_record(p["state_dir"], "deps", record, module.check_mode):
                result["changed"] = True
        module.exit_json(**result)

    if p["state"] == "verified":
        finish(with_editable(report, before["editable_url"]), satisfied and report["ok"])

    if p["state"] == "present" and satisfied:
        finish(report, True)

    try:
        plan = stack.plan(profile, paths, read_file, arch, p["site"], python, p["state_dir"], p["accept_drift"],
                          p["plan_platform"] or None, pip_env, run, fill_cache=not module.check_mode)
    except stack.StackError as err:
        module.fail_json(msg="%s Nothing was installed." % err, **result)
    if not_read:
        # a pin only an unread list asks for is not missing: the real run reads that list (then it must be there)
        for row in plan["rows"]:
            if row["status"] == "missing":
                row["status"] = "not planned"
                plan["blocking"] = [name for name in plan["blocking"] if name != row["package"]]
    result["plan"] = plan
    result["plan_lines"] = pins.plan_text(plan) + [
        "%s: not read (put in place by a real run)" % path for path in sorted(set(not_read))]
    result["overrides"] = plan["overrides"]
    if plan["blocking"]:
        module.fail_json(msg="profile %s cannot keep its pins: %s. Nothing was installed. Fix the profile, or "
                             "accept by name (deps_pinning_accept_drift: [%s]) if you know why.\n%s" % (
                                 profile["name"], ", ".join(plan["blocking"]), ", ".join(plan["blocking"]),
                                 "\n".join(result["plan_lines"])), **result)
    if p["state"] == "planned":
        module.exit_json(**result)

    if plan.get("from_cache"):
        p["site"] = dict(p["site"], cache_only=True)
    steps = pins.install_steps(profile, paths, read_file, arch, p["site"], steps_python,
                               stack.write_constraints(profile, p["state_dir"]))
    result["steps"] = [{"phase": s["phase"], "command": pins.mask_url(" ".join(s["argv"])), "env": s["env"]}
                       for s in steps]
    result["changed"] = True
    if module.check_mode:
        module.exit_json(**result)
    try:
        stack.install(steps, pip_env, run)
        after = stack.probe(python, p["editable_name"], run)
    except stack.StackError as err:
        module.fail_json(msg=str(err), **result)
    workspace.write_json(installed_path, {"profile": profile["name"], "profile_sha256": digest})
    finish(with_editable(pins.check_installed(profile["pins"], after["versions"], p["accept_drift"]),
                         after["editable_url"]), True)


if __name__ == "__main__":
    main()
