"""`make demo` installs only the controller's packages (setup.py's install_requires): everything the controller runs
must import with those alone, without the tests' extras (torch, transformers, datasets, matplotlib, hydra, ...)."""

import ast
import importlib.metadata as md
import os
import re
import subprocess
import sys

import pytest
from grpo_testkit import ROOT

PLUGINS = os.path.join(ROOT, "python_plugins")
# Modules that run on the controller's Python: on the NPU hosts (a local connection with ansible_playbook_python in
# both inventories) and the eval report delegated to localhost. The others run in the training environment.
CONTROLLER_MODULES = ("npu_preflight", "grpo_handover", "grpo_eval_result")


def _setup_requires():
    tree = ast.parse(open(os.path.join(ROOT, "setup.py"), encoding="utf-8").read())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("install_requires", "extras_require")}
    return kw["install_requires"], kw["extras_require"]["test"]


def _name(requirement):
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names):
    """The distributions ``names`` need, transitively, as installed here (extras not followed)."""
    seen, todo = set(), [_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r]
    return seen


def _blocked_imports():
    """Top-level import names whose distribution only the tests' extras bring."""
    base, test = _setup_requires()
    allowed = _closure(base) | {"ascend-grpo-playbooks"}
    test_only = _closure(test) - allowed
    blocked = set()
    for module, dists in md.packages_distributions().items():
        if all(_name(d) in test_only for d in dists):
            blocked.add(module)
    return blocked


def test_the_demo_needs_none_of_the_test_extras():
    base, test = _setup_requires()
    assert not {_name(r) for r in base} & {"molecule", "pytest", "torch", "transformers", "matplotlib", "datasets"}
    assert {"torch", "transformers", "matplotlib", "molecule"} <= {_name(r) for r in test}


def test_what_the_controller_runs_imports_without_the_test_extras():
    blocked = _blocked_imports()
    # the blocker is no blocker unless it holds the heavy ones
    assert {"torch", "transformers", "matplotlib", "datasets", "hydra", "omegaconf", "math_verify",
            "molecule", "ansible_runner"} <= blocked
    targets = [os.path.join(PLUGINS, "filter_plugins", f) for f in sorted(os.listdir(os.path.join(PLUGINS,
               "filter_plugins"))) if f.endswith(".py")]
    targets += [os.path.join(PLUGINS, "callback_plugins", f) for f in sorted(os.listdir(os.path.join(PLUGINS,
                "callback_plugins"))) if f.endswith(".py")]
    # the container's connection (grpo_container) runs in the controller's ansible-playbook too
    targets += [os.path.join(PLUGINS, "connection_plugins", f) for f in sorted(os.listdir(os.path.join(PLUGINS,
                "connection_plugins"))) if f.endswith(".py")]
    engines = set()
    for module in CONTROLLER_MODULES:
        text = open(os.path.join(PLUGINS, "modules", module + ".py"), encoding="utf-8").read()
        for package, names in re.findall(r"^from ansible\.module_utils\.ascend_grpo\.(\w+) import (.+)$", text, re.M):
            engines |= {package + "." + n.strip().split(" as ")[0] for n in names.split(",")}
    assert {"container.host_checks", "common.workspace", "eval.result_store"} <= engines
    # grpo_eval_result reaches checkpoint_pick and result_report through its engine, imported below with it
    path = os.path.join(PLUGINS, "module_utils", "ascend_grpo", "eval", "result_store.py")
    text = open(path, encoding="utf-8").read()
    for needs in ("checkpoint_pick", "result_report"):
        assert re.search(r"^from \. import .*\b%s\b" % needs, text, re.M), needs
    code = """
import importlib.abc, importlib.util, sys
BLOCKED = %(blocked)r
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError('%%s comes only with the test extras' %% name)
        return None
before = set(sys.modules)  # what site loaded at start (setuptools' .pth hook), before any of ours
sys.meta_path.insert(0, Block())
sys.path.insert(0, %(utils)r)
for path in %(targets)r:
    spec = importlib.util.spec_from_file_location('controller_' + path.rsplit('/', 1)[-1][:-3], path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
for name in %(engines)r:
    importlib.import_module('ascend_grpo.' + name)
heavy = sorted(m for m in set(sys.modules) - before if m.split('.')[0] in BLOCKED)
print('loaded', len(%(targets)r) + len(%(engines)r), 'heavy', heavy)
""" % {"blocked": sorted(blocked), "utils": os.path.join(PLUGINS, "module_utils"), "targets": targets,
       "engines": sorted(engines)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "loaded %d heavy []" % (len(targets) + len(engines)), proc.stdout


def _make_venv(tmp_path, version):
    """``make venv`` into a fresh folder with a fake python3 first on PATH that says it is ``version`` (prints
    nothing and fails when ``version`` is None)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\n" + ("echo %s\n" % version if version else "exit 1\n"))
    (fake / "python3").chmod(0o755)
    env = dict(os.environ, PATH=str(fake) + os.pathsep + os.environ["PATH"])
    return subprocess.run(["make", "--no-print-directory", "venv", "VENV=%s" % (tmp_path / "venv")], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("version", ["3.7.9", "3.9.9", "3.10.12"])
def test_make_venv_stops_on_an_older_python_naming_both_versions_and_the_way_out(tmp_path, version):
    """The usual 910B systems ship Python 3.7 to 3.10 (openEuler 22.03: 3.9); ansible-core 2.19 needs 3.11."""
    done = _make_venv(tmp_path, version)
    assert done.returncode != 0
    assert ("make venv: python3 is Python %s; the controller needs Python >= 3.11 (ansible-core 2.19)" % version
            in done.stderr), done.stderr
    assert 'README.md, "What the controller needs"' in done.stderr
    assert "make venv PYTHON=" in done.stderr
    assert not (tmp_path / "venv").exists()


def test_make_venv_says_so_when_python3_does_not_run(tmp_path):
    done = _make_venv(tmp_path, None)
    assert done.returncode != 0
    assert "make venv: python3 does not run; the controller needs Python >= 3.11" in done.stderr, done.stderr


@pytest.mark.parametrize("version", ["3.11.0", "3.12.3", "3.13.1"])
def test_make_venv_goes_on_with_python_311_or_newer(tmp_path, version):
    done = _make_venv(tmp_path, version)
    # the check let it by: the fake then makes no venv, so pip is missing, which is not the check's message
    assert "the controller needs Python" not in done.stderr, done.stderr
    assert "python3 -m venv" in done.stdout or "pip" in done.stdout + done.stderr


def test_the_readme_says_what_the_controller_needs():
    text = " ".join(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split())
    assert "### What the controller needs" in open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for words in ("Python 3.11", "ansible-core 2.19", "community.docker", "make venv",
                  "make venv PYTHON=", "ansible_become: true", "ansible_port"):
        assert words in text, words
