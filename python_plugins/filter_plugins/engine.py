"""Filter: the source of the package's engines (python_plugins/module_utils/ascend_grpo), for a stage that runs one
in the training environment as a detached job (``python -m ascend_grpo.<engine>``) rather than as a module.

A role then writes the files it needs from this filter's answer, never from a path outside the role; the engine's
own imports within the package come with it, so the copy cannot miss one."""

import ast
import os

from ansible.errors import AnsibleFilterError

PACKAGE = "ascend_grpo"
_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils", PACKAGE)


def _package_imports(source):
    """The package's modules that ``source`` imports (``from . import x``, ``from .x import y``,
    ``from ascend_grpo import x``, ``import ascend_grpo.x``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1 or node.module == PACKAGE:
                found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith(PACKAGE + "."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names if alias.name.startswith(PACKAGE + "."))
    return found


def engine_sources(engines, dest, package_dir=_PACKAGE_DIR):
    """``{{ ['weights'] | engine_sources(lib_dir) }}``: ``[{path, content, mode}]`` for ``<dest>/ascend_grpo/``: the
    package's ``__init__.py``, each named engine and every module of the package they import, as ``grpo_files``
    takes them."""
    wanted, todo, out = set(), list(engines), {}
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        path = os.path.join(package_dir, name + ".py")
        if not os.path.isfile(path):
            raise AnsibleFilterError("engine_sources: %s has no module %s" % (PACKAGE, name))
        with open(path, encoding="utf-8") as handle:
            out[name] = handle.read()
        wanted.add(name)
        todo.extend(sorted(_package_imports(out[name]) - wanted))
    with open(os.path.join(package_dir, "__init__.py"), encoding="utf-8") as handle:
        out["__init__"] = handle.read()
    return [{"path": "%s/%s/%s.py" % (dest.rstrip("/"), PACKAGE, name), "content": out[name], "mode": "0644"}
            for name in sorted(out)]


class FilterModule:
    def filters(self):
        return {"engine_sources": engine_sources}
