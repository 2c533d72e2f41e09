"""The export's downloads for another platform, against the real index: a 910B's aarch64 / CPython 3.11 / glibc
2.34 from this x86_64 machine. A package with a wheel for it comes as that wheel; one with no wheel at all (hydra's
antlr4-python3-runtime 4.9.3 is published as a source package only) comes as its source package, named as such;
the build tools a source build needs come too. What pip's index holds is upstream fact as of these pins."""

import os
import sys

import pytest
from grpo_testkit import VERL_TARBALL

from ascend_grpo.bundle import offline_export

pytestmark = pytest.mark.network

NPU = {"arch": "aarch64", "python_version": "3.11", "glibc": "2.34"}
PROFILE = {"name": "cross-check", "constraints": True, "pins": {"pyyaml": "6.0.2"},
           "phases": [{"name": "one", "requirements": ["pyyaml==6.0.2", "antlr4-python3-runtime==4.9.3"]}]}


def test_an_aarch64_wheel_and_a_source_only_package_are_fetched_from_an_x86_64_host(tmp_path):
    dest = tmp_path / "wheels"
    done = offline_export.export_wheels([{"data": PROFILE, "files": str(tmp_path)}], str(dest), NPU, {},
                                        sys.executable, VERL_TARBALL)
    files = sorted(os.listdir(dest))
    assert not done["native"] and done["unfetched"] == [], done
    assert done["profiles"]["cross-check"]["sdist_fallback"] == ["antlr4-python3-runtime==4.9.3"]
    # PyYAML's wheel for the 910B's platform, not this machine's
    yaml_wheels = [f for f in files if f.lower().startswith("pyyaml-6.0.2-")]
    assert len(yaml_wheels) == 1 and "aarch64" in yaml_wheels[0] and "cp311" in yaml_wheels[0], files
    assert "antlr4-python3-runtime-4.9.3.tar.gz" in files
    assert any(f.startswith("setuptools-") and f.endswith("-py3-none-any.whl") for f in files), files
    assert any(f.startswith("wheel-") and f.endswith("-py3-none-any.whl") for f in files), files
