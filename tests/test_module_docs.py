"""Every module's DOCUMENTATION, EXAMPLES and RETURN is YAML that ansible-doc renders (a colon followed by a space in a
plain line used to break two of them without any test noticing)."""

import ast
import glob
import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT

MODULES = sorted(glob.glob(os.path.join(ROOT, "python_plugins", "modules", "*.py")))


def docs(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("DOCUMENTATION", "EXAMPLES",
                                                                                         "RETURN")}


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_docs_are_yaml_and_ansible_doc_renders_them(path):
    found = docs(path)
    assert sorted(found) == ["DOCUMENTATION", "EXAMPLES", "RETURN"]
    for text in found.values():
        yaml.safe_load(text)
    name = os.path.basename(path)[:-3]
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-M",
                           os.path.dirname(path), "-t", "module", name], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "MODULE" in proc.stdout, proc.stderr[-2000:]
