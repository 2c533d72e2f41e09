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
  - Otherwise it plans before it installs: the whole profile is resolved with C(pip install --dry-run --report)
    (nothing is downloaded beyond metadata where the index allows) and every core package is compared with its
    pin. A conflict or a drift fails before anything is installed, unless accepted by name in C(accept_drift).
    Then the phases run in order (removals after every phase that could bring a package back, the editable
    source last with C(--no-deps)).
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
plan:
  description: Per core package, pinned vs planned version, status (ok, drift, conflict, missing) and who pulls it.
  returned: when a plan was made
  type: dict
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
"""

import json
import os
import platform
import subprocess
import sys
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo import pins

_PROBE = r"""
import json, sys
from importlib import metadata
names, editable = json.loads(sys.argv[1]), sys.argv[2]
out = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        out.setdefault(name, dist.version)
where = None
try:
    dist = metadata.distribution(editable)
    direct = dist.read_text("direct_url.json")
    where = json.loads(direct)["url"] if direct else None
except Exception:
    pass
print(json.dumps({"versions": out, "editable_url": where, "machine": __import__("platform").machine(),
                  "python": "%d.%d" % sys.version_info[:2]}))
"""


def probe(module, python, names, editable):
    rc, out, err = module.run_command([python, "-c", _PROBE, json.dumps(names), editable])
    if rc != 0:
        module.fail_json(msg="cannot read the installed packages with %s: %s" % (python, err.strip()[-500:]))
    data = json.loads(out)
    data["versions"] = {pins.canonical(k): v for k, v in data["versions"].items()}
    return data


def manylinux_platforms(arch, glibc):
    major, minor = (int(x) for x in str(glibc).split(".")[:2])
    tags = ["manylinux_%d_%d_%s" % (major, m, arch) for m in range(minor, 16, -1)]
    return tags + ["manylinux2014_%s" % arch, "linux_%s" % arch]


def run_plan(module, p, python, arch, read_file):
    profile = p["profile"]
    request = pins.plan_request(profile, p["paths"], read_file, arch, p["site"])
    report_path = os.path.join(p["state_dir"], "deps-plan-report.json")
    argv = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
            "--disable-pip-version-check", "--retries", "2", "--timeout", "20", "--report", report_path] + request["index_args"]
    cross = p["plan_platform"]
    tmp = None
    if cross:
        tmp = tempfile.mkdtemp(prefix="deps-plan-")
        argv += ["--target", tmp, "--only-binary=:all:", "--implementation", "cp",
                 "--python-version", str(cross.get("python_version", "3.11")), "--use-feature=fast-deps"]
        for tag in manylinux_platforms(cross.get("arch", "x86_64"), cross.get("glibc", "2.28")):
            argv += ["--platform", tag]
    constraints = os.path.join(p["state_dir"], "constraints.txt")
    if profile.get("constraints"):
        argv += ["-c", constraints]
    env = {}
    for phase in profile["phases"]:
        env.update({k: str(v) for k, v in (phase.get("env") or {}).items()})
    env["PIP_NO_INPUT"] = "1"
    requirements = list(request["requirements"])
    unplanned = []
    for _attempt in range(10):
        rc, out, err = module.run_command(argv + requirements, environ_update=env)
        missing = _no_distribution(out + "\n" + err)
        if rc == 0 or not cross or not missing:
            break
        # Cross-platform plans see wheels only: a source-only package cannot be planned here; it is resolved
        # natively at install time. Core pins stay, so a missing pin still shows as missing below.
        name = pins.canonical(pins.split_requirement(missing)[0])
        if name in {pins.canonical(k) for k in profile["pins"]}:
            break
        unplanned.append(missing)
        requirements = [r for r in requirements if pins.canonical(pins.split_requirement(r)[0]) != name]
    resolved, conflicts = None, None
    if rc == 0:
        with open(report_path, encoding="utf-8") as handle:
            resolved = pins.parse_report(json.load(handle))
    else:
        conflicts = pins.parse_conflict(out + "\n" + err)
        if not conflicts:
            module.fail_json(msg="pip could not plan profile %s: %s" % (profile["name"], explain_pip_error(
                out + "\n" + err, p["site"], request["index_args"])), argv=argv)
    analysis = pins.analyze_plan(profile["pins"], resolved, conflicts, request["fixed"], p["accept_drift"])
    analysis["overrides"] = request["overrides"]
    analysis["unplanned"] = unplanned
    with open(os.path.join(p["state_dir"], "deps-plan.json"), "w", encoding="utf-8") as handle:
        json.dump(analysis, handle, indent=2, sort_keys=True)
    return analysis


def _no_distribution(text):
    for line in text.splitlines():
        if "No matching distribution found for" in line:
            return line.split("found for", 1)[1].strip()
    return None


def explain_pip_error(text, site, index_args):
    """pip's failure in words a user can act on. Connection trouble first: pip then also says 'No matching
    distribution', which would wrongly blame the pin."""
    lines = [l for l in text.splitlines() if l.strip() and "is ignored: it is neither" not in l]
    for line in lines:
        low = line.lower()
        if any(word in low for word in ("connection", "timed out", "max retries", "name resolution",
                                        "ssl", "proxyerror")):
            return ("the package index does not answer (%s). Check deps_pinning_index_url / the mirror, the "
                    "proxy and CA settings, or install offline with deps_pinning_wheelhouse." % line.strip()[:300])
    req = _no_distribution(text)
    if req:
        return ("%s is not on the index (%s). Check the pin in the profile, or the index settings "
                "(deps_pinning_index_url, deps_pinning_extra_index_urls, deps_pinning_wheelhouse)."
                % (req, " ".join(index_args) or "pip's default index"))
    return "\n".join(lines[-15:])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="present", choices=["present", "planned", "verified"]),
            profile=dict(type="dict", required=True),
            paths=dict(type="dict", default={}),
            site=dict(type="dict", default={}),
            python=dict(type="str"),
            accept_drift=dict(type="list", elements="str", default=[]),
            state_dir=dict(type="path", required=True),
            editable_name=dict(type="str", default="verl"),
            plan_platform=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    profile = p["profile"]
    problems = pins.validate_profile(profile)
    if problems:
        module.fail_json(msg="profile %s is not valid: %s" % (profile.get("name"), "; ".join(problems)))
    python = p["python"] or sys.executable
    paths = {k: str(v) for k, v in p["paths"].items()}
    p["paths"] = paths
    os.makedirs(p["state_dir"], exist_ok=True)
    with open(os.path.join(p["state_dir"], "constraints.txt"), "w", encoding="utf-8") as handle:
        handle.write(pins.constraints_text(profile["pins"]))

    def read_file(path):
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as err:
            module.fail_json(msg="requirements file %s of profile %s cannot be read: %s" % (
                path, profile["name"], err.strerror))

    editables = [pins.expand(ph["editable"], paths) for ph in profile["phases"] if ph.get("editable")]
    names = list(profile["pins"])
    before = probe(module, python, names, p["editable_name"])
    arch = before["machine"]
    report = pins.check_installed(profile["pins"], before["versions"], p["accept_drift"])
    editable_ok = all(before["editable_url"] == "file://" + os.path.abspath(e) for e in editables)
    satisfied = report["ok"] and editable_ok  # accepted drift counts as satisfied, or every rerun would run pip
    result = dict(changed=False, satisfied=satisfied, python=python, python_version=before["python"], arch=arch)

    def finish(report, **extra):
        path = os.path.join(p["state_dir"], "deps-drift.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"profile": profile["name"], "python": before["python"], "arch": arch, **report}, handle,
                      indent=2, sort_keys=True)
        result.update(report=report, report_path=path,
                      table=pins.table(report["rows"], ["package", "expected", "installed", "status"]), **extra)
        if not report["ok"]:
            module.fail_json(msg="drift in profile %s: %s (expected vs installed above; accept by name with "
                                 "deps_pinning_accept_drift only if you know why)" % (
                                     profile["name"], ", ".join(report["drift"])), **result)
        module.exit_json(**result)

    if p["state"] == "verified":
        if not editable_ok:
            report["rows"].append({"package": p["editable_name"], "expected": "editable from " + ", ".join(editables),
                                   "installed": before["editable_url"], "status": "drift"})
            report["drift"].append(p["editable_name"])
            report["ok"] = False
        finish(report)

    if p["state"] == "present" and satisfied:
        finish(report)

    plan = run_plan(module, p, python, arch, read_file)
    result["plan"] = plan
    result["plan_table"] = pins.table(plan["rows"], ["package", "pinned", "planned", "status", "pulled_by"])
    result["overrides"] = plan["overrides"]
    if plan["blocking"]:
        module.fail_json(msg="profile %s cannot keep its pins: %s. Nothing was installed. Fix the profile, or "
                             "accept by name (deps_pinning_accept_drift: [%s]) if you know why.\n%s" % (
                                 profile["name"], ", ".join(plan["blocking"]), ", ".join(plan["blocking"]),
                                 result["plan_table"]), **result)
    if p["state"] == "planned":
        module.exit_json(**result)

    steps = pins.install_steps(profile, paths, read_file, arch, p["site"], python,
                               os.path.join(p["state_dir"], "constraints.txt"))
    result["steps"] = [{"phase": s["phase"], "command": " ".join(s["argv"]), "env": s["env"]} for s in steps]
    result["changed"] = True
    if module.check_mode:
        module.exit_json(**result)
    for step in steps:
        env = dict(step["env"], PIP_NO_INPUT="1")
        rc, out, err = module.run_command(step["argv"], environ_update=env)
        if rc != 0:
            module.fail_json(msg="phase %s failed (exit %d): %s" % (step["phase"], rc, "\n".join(
                (out + "\n" + err).strip().splitlines()[-20:])), **result)
    after = probe(module, python, names, p["editable_name"])
    finish(pins.check_installed(profile["pins"], after["versions"], p["accept_drift"]))


if __name__ == "__main__":
    main()
