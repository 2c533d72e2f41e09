"""Every module's DOCUMENTATION, EXAMPLES and RETURN is YAML that ansible-doc renders (a colon followed by a space in a
plain line used to break two of them without any test noticing)."""

import ast
import glob
import os
import subprocess
import sys

import pytest
import yaml
from grpo_testkit import ROOT, inprocess

MODULES = sorted(glob.glob(os.path.join(ROOT, "python_plugins", "modules", "*.py")))


def docs(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("DOCUMENTATION", "EXAMPLES",
                                                                                         "RETURN")}


def _ansible_doc(*names):
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-M",
                           os.path.dirname(MODULES[0]), "-t", "module"] + list(names),
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def rendered_together():
    """ansible-doc over every module at once (one start of Ansible instead of one per module): its result, used by
    each module's test when all of them rendered; when one did not, each test asks ansible-doc about its own."""
    return _ansible_doc(*[os.path.basename(path)[:-3] for path in MODULES])


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_docs_are_yaml_and_ansible_doc_renders_them(path, rendered_together):
    found = docs(path)
    assert sorted(found) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]
    for text in found.values():
        yaml.safe_load(text)
    name = os.path.basename(path)[:-3]
    together = rendered_together
    proc = together if together.returncode == 0 and "(%s)" % path in together.stdout else _ansible_doc(name)
    assert proc.returncode == 0 and "MODULE" in proc.stdout, proc.stderr[-2000:]


class _Captured(Exception):
    def __init__(self, spec, options):
        super().__init__("captured")
        self.spec, self.options = spec, options


def argument_spec(path):
    """The argument_spec the module passes to AnsibleModule (the module is run up to that call)."""
    import importlib
    import importlib.util

    import ansible.module_utils.basic as basic

    # the modules import the engines as ansible.module_utils.ascend_grpo (Ansible ships them so): alias the package
    inprocess.alias_engines()

    def capture(argument_spec=None, **options):
        raise _Captured(argument_spec, options)

    original = basic.AnsibleModule
    basic.AnsibleModule = capture
    try:
        spec = importlib.util.spec_from_file_location("module_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.main()
    except _Captured as captured:
        return captured.spec, captured.options
    finally:
        basic.AnsibleModule = original
    raise AssertionError("%s never built an AnsibleModule" % path)


FRAGMENTS = os.path.join(ROOT, "python_plugins", "doc_fragments")


def documented_options(path):
    """The module's options, with those of the documentation fragments it extends (python_plugins/doc_fragments),
    as ansible-doc merges them."""
    documentation = yaml.safe_load(docs(path)["DOCUMENTATION"])
    options = dict(documentation.get("options") or {})
    for name in documentation.get("extends_documentation_fragment") or []:
        tree = ast.parse(open(os.path.join(FRAGMENTS, name + ".py"), encoding="utf-8").read())
        fragment = next(node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                        and getattr(node.targets[0], "id", "") == "DOCUMENTATION")
        options.update(yaml.safe_load(fragment.value.value).get("options") or {})
    return options


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_documented_options_are_the_argument_spec(path):
    spec, options = argument_spec(path)
    documented = documented_options(path)
    assert sorted(documented) == sorted(spec)
    for name, code in spec.items():
        doc = documented[name]
        assert doc.get("type", "str") == code.get("type", "str"), name
        assert bool(doc.get("required", False)) == bool(code.get("required", False)), name
        assert doc.get("default") == code.get("default"), name
        assert doc.get("elements") == code.get("elements"), name
        assert doc.get("choices") == code.get("choices"), name


STANDARD_KEYS = {"changed", "failed", "msg", "skipped", "diff", "results", "rc", "stdout", "stderr", "stdout_lines",
                 "warnings", "invocation", "skip_reason", "item", "ansible_loop_var", "failed_when_result"}


def module_uses():
    """{module name: {key: [where]}} for every key the roles read from a registered result of this package's
    modules."""
    import re

    names = {os.path.basename(path)[:-3] for path in MODULES}
    uses = {}
    for role in glob.glob(os.path.join(ROOT, "roles", "*")):
        files = glob.glob(os.path.join(role, "**", "*.yml"), recursive=True)
        texts = {f: open(f, encoding="utf-8").read() for f in files}
        for path, text in texts.items():
            for task in _tasks(yaml.safe_load(text)):
                module = next((k.split(".")[-1] for k in task if k.split(".")[-1] in names), None)
                if module is None or "register" not in task:
                    continue
                var = task["register"]
                pattern = re.compile(r"\b%s(?:\.results\[[^\]]*\]|\.results\|[^.]*)?\.(\w+)" % re.escape(var))
                for other, other_text in texts.items():
                    for key in pattern.findall(other_text):
                        uses.setdefault(module, {}).setdefault(key, []).append(os.path.relpath(other, ROOT))
    return uses


def _tasks(data):
    if isinstance(data, list):
        for item in data:
            if isinstance(item, dict):
                yield item
                for block in ("block", "rescue", "always"):
                    yield from _tasks(item.get(block))


def test_return_documents_every_key_the_roles_read():
    missing = []
    for module, keys in sorted(module_uses().items()):
        path = os.path.join(ROOT, "python_plugins", "modules", module + ".py")
        documented = set(yaml.safe_load(docs(path)["RETURN"]) or {})
        for key, where in sorted(keys.items()):
            if key not in documented and key not in STANDARD_KEYS:
                missing.append("%s: %s (read in %s)" % (module, key, ", ".join(sorted(set(where)))))
    assert missing == []
