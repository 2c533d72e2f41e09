"""The deps stage's pinned venv: one call of the ``pinned_venv`` module (look, verify, plan, install), as plain
Python.

The module hands its arguments, check mode and ``run_command`` to :func:`install` and turns its answer into
``exit_json`` (the result) or ``fail_json`` (:class:`VenvError`): the logic is here, where a test can import it.
pip itself runs through :mod:`pip_runner`; the pins, the plan and the drift report are :mod:`pins`'. A message names
an input as ``{field}``, one of the module's options (``{accept_drift}``: deps_pinning_accept_drift in the deps
stage), which the module names by its role's settings.
"""

import os
import sys

from ..common import proxy, secrets, workspace
from . import pins, pip_runner, verl_checkout
from ..common.errors import StageFailure


class _Exit(Exception):
    """The call's answer, reached before its last step (the stack holds, a check-mode preview)."""

    def __init__(self, result):
        super().__init__()
        self.result = result


class VenvError(StageFailure):
    """A refusal: ``msg`` says what and the fix; ``result`` is what was found before it (the drift report...)."""


def _exit(**result):
    raise _Exit(result)


def _fail(msg, **result):
    raise VenvError(msg, result)


def hidden_values(params):
    """A find-links location's, the verl repository's or the proxy's password, to keep out of everything returned
    (the module's arguments included)."""
    return secrets.credentials_in([params.get("site"), params.get("source")]) + proxy.hidden_values(
        params.get("proxy"))


def install(params, check_mode, run_command):
    """One call of the ``pinned_venv`` module: its result (a dict), or VenvError.

    ``params``: the module's arguments (see its documentation); ``check_mode``: report, change nothing;
    ``run_command``: Ansible's ``module.run_command`` or one with its signature (``common.runner.run_command``).
    A proxy that cannot be used (``params["proxy"]``) raises ``common.proxy.ProxyError`` before anything runs.
    """
    try:
        VenvInstall(params, check_mode, run_command).main()
    except _Exit as done:
        return done.result
    raise AssertionError("VenvInstall.main ends in an exit or a failure")  # pragma: no cover


class VenvInstall(object):
    """One call: look (probe, drift report), then per state verify, plan, install. Every way out is _exit (the
    result) or _fail (VenvError)."""

    def __init__(self, params, check_mode, run_command):
        # the arguments themselves, as the module had them (it reports them back as its invocation)
        self.p, self.check_mode = params, check_mode
        p = self.p
        # the site's proxy reaches pip (and the venv's making) as its environment, never its command line
        self.run_command = proxy.through(run_command, proxy.proxy_env(p.get("proxy")))
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
        return self.run_command(argv, environ_update=env)

    def read_file(self, path):
        # check mode before the first real run: verl's tree and the shipped lists are not there yet; the real run
        # puts them in place and reads them
        if self.check_mode and not os.path.exists(path):
            self.not_read.append(path)
            return ""
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError as err:
            _fail("requirements file %s of profile %s cannot be read: %s" % (
                path, self.profile["name"], err.strerror))

    # -- the steps -----------------------------------------------------------------------------------------------

    def choose_python(self):
        """The Python to manage: I(python), or I(venv)'s (made or remade first; in check mode, reported)."""
        p = self.p
        python = p["python"] or sys.executable
        if not p["venv"]:
            return python
        maker = p["venv_python"] or sys.executable
        # a look (state=looked) makes nothing: a venv to make or remake is only reported
        no_change = self.check_mode or p["state"] == "looked"
        if maker == sys.executable:
            base_version = "%d.%d" % sys.version_info[:2]
        else:
            rc, out, err = self.run_command([maker, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            if rc != 0:
                _fail("the Python %s that is to make the virtual environment %s does not run: %s" % (
                    maker, p["venv"], (err or out).strip()[-400:]))
            base_version = out.strip()
        try:
            self.venv_result = pip_runner.ensure_venv(p["venv"], maker, base_version, p["venv_site_packages"],
                                                      no_change, lambda argv: self.run_command(argv))
        except pip_runner.StackError as err:
            _fail(str(err))
        python = self.venv_result["python"]
        if self.venv_result["action"] != "kept":
            if p["state"] == "looked":
                _exit(changed=False, satisfied=False, python=python, venv=self.venv_result,
                      msg="the virtual environment %s is to be %s (%s)" % (
                          p["venv"], self.venv_result["action"], self.venv_result["reason"]))
            if self.check_mode and p["venv_site_packages"]:
                # a new venv that sees the base Python's packages starts out as that Python: plan against it
                python = maker
            elif self.check_mode:
                _exit(changed=True, satisfied=False, python=python, venv=self.venv_result,
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
        p = self.p
        self.editables = [pins.expand(ph["editable"], self.paths) for ph in self.profile["phases"]
                          if ph.get("editable")]
        try:
            self.before = pip_runner.probe(self.python, p["editable_name"], self.run)
        except pip_runner.StackError as err:
            _fail(str(err))
        self.arch = self.before["machine"]
        report = pins.check_installed(self.profile["pins"], self.before["versions"], p["accept_drift"])
        editable_ok = self.editable_holds(self.before["editable_url"])
        source_ok = verl_checkout.source_matches(p["source"], p["state_dir"], self.paths.get("verl"), self.run)
        self.installed_path = os.path.join(p["state_dir"], "deps-installed.json")
        installed_digest = (workspace.read_json(self.installed_path) or {}).get("profile_sha256")
        self.digest = pip_runner.profile_digest(self.profile, self.paths)
        # the last install was of this very profile (the quick look and state=present); plain verify does not care
        profile_ok = (installed_digest == self.digest
                      if (p["state"] in ("present", "looked") or p["source"] is not None) else True)
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
        p, result = self.p, self.result
        path = os.path.join(p["state_dir"], "deps-drift.json")
        if not self.check_mode:
            workspace.write_json(path, {"profile": self.profile["name"], "python": self.before["python"],
                                        "arch": self.arch, **report})
        result.update(report=report, report_path=path,
                      table=pins.table(report["rows"], ["package", "expected", "installed", "status"]))
        if not report["ok"] and p["fail_on_drift"]:
            _fail("drift in profile %s: %s (expected vs installed above; accept by name with "
                  "{accept_drift} only if you know why)" % (
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
            if workspace.write_record(p["state_dir"], "deps", record, self.check_mode):
                result["changed"] = True
        _exit(**result)

    def plan(self):
        """The dry-run plan; a pin it cannot keep fails before anything is installed."""
        p, result = self.p, self.result
        try:
            plan = pip_runner.plan(self.profile, self.paths, self.read_file, self.arch, p["site"], self.python,
                                   p["state_dir"], p["accept_drift"], p["plan_platform"] or None, self.pip_env, self.run,
                                   fill_cache=not self.check_mode)
        except pip_runner.StackError as err:
            _fail("%s Nothing was installed." % err, **result)
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
            _fail("profile %s cannot keep its pins: %s. Nothing was installed. Fix the profile, or "
                  "accept by name ({accept_drift}: [%s]) if you know why.\n%s" % (
                      self.profile["name"], ", ".join(plan["blocking"]), ", ".join(plan["blocking"]),
                      "\n".join(result["plan_lines"])), **result)
        return plan

    def install(self, plan):
        """Run the phases (in check mode, only list them), then the drift report of what is installed now."""
        p, result = self.p, self.result
        if plan.get("from_cache"):
            p["site"] = dict(p["site"], cache_only=True)
        steps = pins.install_steps(self.profile, self.paths, self.read_file, self.arch, p["site"], self.steps_python,
                                   pip_runner.write_constraints(self.profile, p["state_dir"]))
        result["steps"] = [{"phase": s["phase"], "command": pins.mask_url(" ".join(s["argv"])), "env": s["env"]}
                           for s in steps]
        result["changed"] = True
        if self.check_mode:
            _exit(**result)
        try:
            pip_runner.install(steps, self.pip_env, self.run)
            after = pip_runner.probe(self.python, p["editable_name"], self.run)
        except pip_runner.StackError as err:
            _fail(str(err), **result)
        workspace.write_json(self.installed_path, {"profile": self.profile["name"], "profile_sha256": self.digest})
        self.finish(self.with_editable(
            pins.check_installed(self.profile["pins"], after["versions"], p["accept_drift"]), after["editable_url"]),
            True)

    def main(self):
        problems = pins.validate_profile(self.profile)
        if problems:
            _fail("profile %s is not valid: %s" % (self.profile.get("name"), "; ".join(problems)))
        self.python = self.choose_python()
        self.p["paths"] = self.paths
        os.makedirs(self.p["state_dir"], exist_ok=True)
        if self.p["state"] != "looked":
            self.use_download_cache()
        report = self.look()
        if self.p["state"] == "verified":
            self.finish(self.with_editable(report, self.before["editable_url"]), self.satisfied and report["ok"])
        if self.p["state"] in ("present", "looked") and self.satisfied:
            self.finish(report, True)
        if self.p["state"] == "looked":
            # state=present would plan and run pip: a look stops here, having changed nothing
            _exit(**dict(self.result, report=report,
                         table=pins.table(report["rows"], ["package", "expected", "installed", "status"])))
        plan = self.plan()
        if self.p["state"] == "planned":
            _exit(**self.result)
        self.install(plan)
