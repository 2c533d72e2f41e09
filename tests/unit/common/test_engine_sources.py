"""The engine_sources filter: the assets stage writes its answer to <state>/lib and runs the weights fetch there as a
detached job (roles/assets/tasks/fetch.yml: ``python -m ascend_grpo.assets.weights fetch --plan <state>/weights-plan.json``
with PYTHONPATH=<state>/lib). The copy must run on its own, with nothing of this checkout on the path."""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from grpo_testkit import ROOT

PACKAGE_DIR = os.path.join(ROOT, "python_plugins", "module_utils", "ascend_grpo")
from common_filters import engine_sources  # noqa: E402


def _write(files):
    for item in files:
        os.makedirs(os.path.dirname(item["path"]), exist_ok=True)
        with open(item["path"], "w", encoding="utf-8") as handle:
            handle.write(item["content"])


def _host_python(lib, args, cwd):
    """Python as the training environment runs the job: -S keeps this checkout's editable install (a .pth in the
    venv's site-packages) off the path, so only the stdlib and the written files are importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = lib
    return subprocess.run([sys.executable, "-S"] + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def _imports_in_text(source, here="", package_dir=PACKAGE_DIR):
    """The ascend_grpo modules (dotted below the package) a file's text imports, read with regular expressions (not
    the filter's ast walk); ``here``: the sub-package the file sits in (``assets`` for assets/weights.py)."""
    def exists(dotted):
        return os.path.isfile(os.path.join(package_dir, *dotted.split(".")) + ".py")

    found = set()
    for dots, module, names in re.findall(r"^\s*from\s+(\.+|ascend_grpo\.?)([\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)",
                                          source, re.M):
        package = here.split(".") if here else []
        base = (package[:len(package) - (len(dots) - 1)] if dots.startswith(".") else []) + \
            (module.split(".") if module else [])
        for name in names.strip("()").split(","):
            name = name.split(" as ")[0].strip()
            if name and exists(".".join(base + [name])):
                found.add(".".join(base + [name]))
            elif name and base and exists(".".join(base)):
                found.add(".".join(base))
    found |= {m for m in re.findall(r"^\s*import\s+ascend_grpo\.([\w.]+)", source, re.M) if exists(m)}
    return found


def _fetch_yml_engines():
    """The engines roles/assets/tasks/fetch.yml installs through grpo_common's host_lib (which hands
    grpo_common_host_lib_files to the engine_sources filter)."""
    with open(os.path.join(ROOT, "roles", "assets", "tasks", "fetch.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    shipping = next(t for t in tasks if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "host_lib")
    with open(os.path.join(ROOT, "roles", "grpo_common", "tasks", "host_lib.yml"), encoding="utf-8") as handle:
        assert "grpo_common_host_lib_files | engine_sources(grpo_common_state_dir ~ '/lib')" in handle.read()
    return shipping["vars"]["grpo_common_host_lib_files"]


def test_the_written_weights_engine_runs_the_fetch_job_as_fetch_yml_starts_it(tmp_path):
    lib, workspace = tmp_path / "state" / "lib", tmp_path / "workspace"
    engines = _fetch_yml_engines()
    assert engines == ["assets.weights"]
    files = engine_sources(engines, str(lib) + "/")
    assert all(f["path"].startswith(str(lib / "ascend_grpo") + "/") and f["mode"] == "0644" for f in files)
    _write(files)
    workspace.mkdir()

    # what the job imports is the copy, and it has the entry point the job calls
    probe = _host_python(str(lib), ["-c", "import ascend_grpo.assets.weights as w; "
                                          "print(w.__file__); print(callable(w.main), callable(w.fetch))"],
                         str(workspace))
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [str(lib / "ascend_grpo" / "assets" / "weights.py"), "True True"]

    # the job itself, on a plan that copies a local model folder (no network)
    source, dest = tmp_path / "local-model", workspace / "models" / "tiny"
    source.mkdir()
    for name, content in {"config.json": "{}", "model.safetensors": "w" * 64, "tokenizer.json": "{}"}.items():
        (source / name).write_text(content, encoding="utf-8")
    files_in_plan = {name: os.path.getsize(source / name) for name in sorted(os.listdir(source))}
    plan = {"source": "local", "repo": None, "revision": None, "local_dir": str(source), "allow": ["*"],
            "dest": str(dest), "endpoint": None, "fetch": "copy", "commit": None, "files": files_in_plan,
            "missing": sorted(files_in_plan), "reason": "copy from %s" % source}
    plan_path = tmp_path / "state" / "weights-plan.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    run = _host_python(str(lib), ["-m", "ascend_grpo.assets.weights", "fetch", "--plan", str(plan_path),
                                  "--interval", "0.05"], str(workspace))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "complete: 3 files" in run.stdout
    assert sorted(os.listdir(dest)) == [".grpo-weights.json", "config.json", "model.safetensors", "tokenizer.json"]

    # and its check subcommand agrees that the folder is complete
    check = _host_python(str(lib), ["-m", "ascend_grpo.assets.weights", "check", str(dest)], str(workspace))
    assert (check.returncode, check.stdout.strip()) == (0, "complete"), check.stdout + check.stderr
    (dest / "config.json").unlink()
    check = _host_python(str(lib), ["-m", "ascend_grpo.assets.weights", "check", str(dest)], str(workspace))
    assert check.returncode == 1 and "no config.json" in check.stdout, check.stdout + check.stderr


def test_every_package_module_weights_imports_comes_with_it():
    wanted, todo = set(), ["assets.weights"]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            with open(os.path.join(PACKAGE_DIR, *name.split(".")) + ".py", encoding="utf-8") as handle:
                todo.extend(_imports_in_text(handle.read(), name.rpartition(".")[0]))
    assert "common.workspace" in wanted, "weights.py imports the package's workspace module (the reference found none)"
    # each sub-package on the way comes with its __init__.py, so the copy imports as the package does
    inits = {"__init__"} | {name.split(".")[0] + ".__init__" for name in wanted}
    names = {f["path"][len("/lib/ascend_grpo/"):-3].replace("/", ".") for f in engine_sources(["assets.weights"], "/lib")}
    assert names == wanted | inits, "the filter's files differ from weights.py's imports, read from its text"


def test_imports_of_every_form_are_followed_and_an_unknown_engine_is_refused(tmp_path):
    package = tmp_path / "ascend_grpo"
    package.mkdir()
    sources = {"__init__": "",
               "job": "import os\nfrom . import a\nfrom .b import thing\nimport ascend_grpo.c\n",
               "a": "from ascend_grpo import d as dee\n", "b": "thing = 1\n", "c": "from ascend_grpo.e import x\n",
               "d": "", "e": "x = 2\n", "unused": ""}
    for name, text in sources.items():
        (package / (name + ".py")).write_text(text, encoding="utf-8")
    got = engine_sources(["job"], "/dest", package_dir=str(package))
    assert [f["path"] for f in got] == ["/dest/ascend_grpo/%s.py" % n for n in ("__init__", "a", "b", "c", "d", "e",
                                                                                 "job")]
    assert {n for n in _imports_in_text(sources["job"], package_dir=str(package))} == {"a", "b", "c"}
    with pytest.raises(AnsibleFilterError, match="has no module nope"):
        engine_sources(["nope"], "/dest", package_dir=str(package))
