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
  pinned_venv:
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

import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import secrets, workspace
from ansible.module_utils.ascend_grpo.deps import pins, pip_runner, verl_checkout


ARGUMENT_SPEC = dict(
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
)


class DepsRun(object):
    """One call of the module: look (probe, drift report), then per state verify, plan, install. Every way out is
    module.exit_json or module.fail_json."""

    def __init__(self, module):
        self.module, self.p = module, module.params
        p = self.p
        # a find-links location's or the verl repository's password: out of everything returned, arguments included
        module.no_log_values.update(secrets.credentials_in([p.get("site"), p.get("source")]))
        # The site's index URLs (they may hold a password) come as options of their own: Ansible masks their values
        # wherever they would appear in this module's result, and they reach pip through its environment, never argv.
        if p["index_url"] or p["extra_index_urls"]:
            p["site"] = dict(p["site"], **({"index_url": p["index_url"]} if p["index_url"] else {}),
                             **({"extra_index_urls": p["extra_index_urls"]} if p["extra_index_urls"] else {}))
        self.profile = p["profile"]
        self.paths = {k: str(v) for k, v in p["paths"].items()}
        self.not_read = []
        self.pip_env = {}
        self.venv_result = None
        self.result = {}

    # -- commands and files --------------------------------------------------------------------------------------

    def run(self, argv, env=None):
        argv, env = pins.index_env(argv, env)
        return self.module.run_command(argv, environ_update=env)

    def read_file(self, path):
        # check mode before the first real run: verl's tree and the shipped lists are not there yet; the real run
        # puts them in place and reads them
        if self.module.check_mode and not os.path.exists(path):
            self.not_read.append(path)
            return ""
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as err:
            self.module.fail_json(msg="requirements file %s of profile %s cannot be read: %s" % (
                path, self.profile["name"], err.strerror))

    # -- the steps -----------------------------------------------------------------------------------------------

    def choose_python(self):
        """The Python to manage: I(python), or I(venv)'s (made or remade first; in check mode, reported)."""
        p, module = self.p, self.module
        python = p["python"] or sys.executable
        if not p["venv"]:
            return python
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
            self.venv_result = pip_runner.ensure_venv(p["venv"], maker, base_version, p["venv_site_packages"],
                                                 module.check_mode, lambda argv: module.run_command(argv))
        except pip_runner.StackError as err:
            module.fail_json(msg=str(err))
        python = self.venv_result["python"]
        if self.venv_result["action"] != "kept":
            if module.check_mode and p["venv_site_packages"]:
                # a new venv that sees the base Python's packages starts out as that Python: plan against it
                python = maker
            elif module.check_mode:
                module.exit_json(changed=True, satisfied=False, python=python, venv=self.venv_result,
                                 msg="would %s the virtual environment %s (%s), then install %s into it" % (
                                     "make" if self.venv_result["action"] == "made" else "move aside and remake",
                                     p["venv"], self.venv_result["reason"], self.profile["name"]))
        return python

    def use_download_cache(self):
        p = self.p
        if p["download_cache"]:
            self.pip_env["PIP_CACHE_DIR"] = os.path.join(p["download_cache"], "http")
            if not p["site"].get("wheelhouse"):
                p["site"] = dict(p["site"], wheel_cache=os.path.join(p["download_cache"], "wheels"))
                os.makedirs(p["site"]["wheel_cache"], exist_ok=True)

    def look(self):
        """What is installed against the pins, the editable source, the stamped source and the last profile."""
        p, module = self.p, self.module
        self.editables = [pins.expand(ph["editable"], self.paths) for ph in self.profile["phases"]
                          if ph.get("editable")]
        try:
            self.before = pip_runner.probe(self.python, p["editable_name"], self.run)
        except pip_runner.StackError as err:
            module.fail_json(msg=str(err))
        self.arch = self.before["machine"]
        report = pins.check_installed(self.profile["pins"], self.before["versions"], p["accept_drift"])
        editable_ok = self.editable_holds(self.before["editable_url"])
        source_ok = verl_checkout.source_matches(p["source"], p["state_dir"], self.paths.get("verl"), self.run)
        self.installed_path = os.path.join(p["state_dir"], "deps-installed.json")
        installed_digest = (workspace.read_json(self.installed_path) or {}).get("profile_sha256")
        self.digest = pip_runner.profile_digest(self.profile, self.paths)
        # the last install was of this very profile (the quick look and state=present); plain verify does not care
        profile_ok = installed_digest == self.digest if (p["state"] == "present" or p["source"] is not None) else True
        # accepted drift counts as satisfied, or every rerun would run pip
        self.satisfied = report["ok"] and editable_ok and source_ok and profile_ok
        self.steps_python = self.venv_result["python"] if self.venv_result else self.python
        self.result = dict(changed=self.venv_result is not None and self.venv_result["action"] != "kept",
                           satisfied=self.satisfied, source_ok=source_ok, python=self.steps_python,
                           python_version=self.before["python"], arch=self.arch)
        if self.venv_result:
            self.result["venv"] = self.venv_result
        return report

    def editable_holds(self, editable_url):
        return all(editable_url == "file://" + os.path.abspath(e) for e in self.editables)

    def with_editable(self, report, editable_url):
        if not self.editable_holds(editable_url):
            report["rows"].append({"package": self.p["editable_name"],
                                   "expected": "editable from " + ", ".join(self.editables),
                                   "installed": editable_url, "status": "drift"})
            report["drift"].append(self.p["editable_name"])
            report["ok"] = False
        return report

    def finish(self, report, holds):
        """Write the drift report, fail on drift (when asked), leave the stage's record when the stack holds."""
        p, module, result = self.p, self.module, self.result
        path = os.path.join(p["state_dir"], "deps-drift.json")
        if not module.check_mode:
            workspace.write_json(path, {"profile": self.profile["name"], "python": self.before["python"],
                                        "arch": self.arch, **report})
        result.update(report=report, report_path=path,
                      table=pins.table(report["rows"], ["package", "expected", "installed", "status"]))
        if not report["ok"] and p["fail_on_drift"]:
            module.fail_json(msg="drift in profile %s: %s (expected vs installed above; accept by name with "
                                 "deps_pinning_accept_drift only if you know why)" % (
                                     self.profile["name"], ", ".join(report["drift"])), **result)
        if holds and self.paths.get("verl"):
            # the later stages read this instead of recomputing where verl is (a path source included)
            record = {"verl_dir": os.path.abspath(self.paths["verl"]), "profile": self.profile["name"],
                      "python": self.steps_python, "python_version": self.before["python"], "arch": self.arch,
                      "source": p["source"], "download_cache": p["download_cache"],
                      # the doctor checks the environment against these before a launch
                      "pins": {k: str(v) for k, v in self.profile["pins"].items()},
                      "accept_drift": list(p["accept_drift"])}
            result["record"] = record
            if workspace.write_record(p["state_dir"], "deps", record, module.check_mode):
                result["changed"] = True
        module.exit_json(**result)

    def plan(self):
        """The dry-run plan; a pin it cannot keep fails before anything is installed."""
        p, module, result = self.p, self.module, self.result
        try:
            plan = pip_runner.plan(self.profile, self.paths, self.read_file, self.arch, p["site"], self.python,
                              p["state_dir"], p["accept_drift"], p["plan_platform"] or None, self.pip_env, self.run,
                              fill_cache=not module.check_mode)
        except pip_runner.StackError as err:
            module.fail_json(msg="%s Nothing was installed." % err, **result)
        if self.not_read:
            # a pin only an unread list asks for is not missing: the real run reads that list (then it must be there)
            for row in plan["rows"]:
                if row["status"] == "missing":
                    row["status"] = "not planned"
                    plan["blocking"] = [name for name in plan["blocking"] if name != row["package"]]
        result["plan"] = plan
        result["plan_lines"] = pins.plan_text(plan) + [
            "%s: not read (put in place by a real run)" % path for path in sorted(set(self.not_read))]
        result["overrides"] = plan["overrides"]
        if plan["blocking"]:
            module.fail_json(msg="profile %s cannot keep its pins: %s. Nothing was installed. Fix the profile, or "
                                 "accept by name (deps_pinning_accept_drift: [%s]) if you know why.\n%s" % (
                                     self.profile["name"], ", ".join(plan["blocking"]), ", ".join(plan["blocking"]),
                                     "\n".join(result["plan_lines"])), **result)
        return plan

    def install(self, plan):
        """Run the phases (in check mode, only list them), then the drift report of what is installed now."""
        p, module, result = self.p, self.module, self.result
        if plan.get("from_cache"):
            p["site"] = dict(p["site"], cache_only=True)
        steps = pins.install_steps(self.profile, self.paths, self.read_file, self.arch, p["site"], self.steps_python,
                                   pip_runner.write_constraints(self.profile, p["state_dir"]))
        result["steps"] = [{"phase": s["phase"], "command": pins.mask_url(" ".join(s["argv"])), "env": s["env"]}
                           for s in steps]
        result["changed"] = True
        if module.check_mode:
            module.exit_json(**result)
        try:
            pip_runner.install(steps, self.pip_env, self.run)
            after = pip_runner.probe(self.python, p["editable_name"], self.run)
        except pip_runner.StackError as err:
            module.fail_json(msg=str(err), **result)
        workspace.write_json(self.installed_path, {"profile": self.profile["name"], "profile_sha256": self.digest})
        self.finish(self.with_editable(
            pins.check_installed(self.profile["pins"], after["versions"], p["accept_drift"]), after["editable_url"]),
            True)

    def main(self):
        problems = pins.validate_profile(self.profile)
        if problems:
            self.module.fail_json(msg="profile %s is not valid: %s" % (self.profile.get("name"), "; ".join(problems)))
        self.python = self.choose_python()
        self.p["paths"] = self.paths
        os.makedirs(self.p["state_dir"], exist_ok=True)
        self.use_download_cache()
        report = self.look()
        if self.p["state"] == "verified":
            self.finish(self.with_editable(report, self.before["editable_url"]), self.satisfied and report["ok"])
        if self.p["state"] == "present" and self.satisfied:
            self.finish(report, True)
        plan = self.plan()
        if self.p["state"] == "planned":
            self.module.exit_json(**self.result)
        self.install(plan)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[("python", "venv")],
                           supports_check_mode=True)
    DepsRun(module).main()


if __name__ == "__main__":
    main()
