import json
import os

import pytest
from grpo_testkit import FIXTURES

from ascend_grpo.deps import pins

PROFILE = {
    "name": "t",
    "constraints": True,
    "pins": {"urllib3": "1.26.20", "requests": "2.31.0", "torch": "2.8.0"},
    "phases": [
        {"name": "verl", "editable": "{verl}"},
        {"name": "base", "requirements_files": ["{files}/base.txt"]},
        {"name": "drop", "remove": ["uvloop"]},
        {"name": "pins", "requirements": ["urllib3==1.26.20", "requests==2.31.0"],
         "index_url": {"aarch64": "https://mirror/a", "x86_64": "https://mirror/x"}},
        {"name": "torch", "requirements": ["torch==2.8.0"], "no_deps": True, "env": {"X": 1}},
    ],
}
FILES = {"/pkg/base.txt": "# comment\nrequests>=2  # inline\nurllib3<2\n-e .\nray[default]==2.46.0 ; python_version<'3.12'\n\n"}


def read(path):
    return FILES[path]


def fixture(name):
    with open(os.path.join(FIXTURES, "pip", name), encoding="utf-8") as handle:
        return handle.read()


def test_requirements_and_names():
    assert pins.read_requirements(FILES["/pkg/base.txt"]) == [
        "requests>=2", "urllib3<2", "ray[default]==2.46.0 ; python_version<'3.12'"]
    # read by packaging (PEP 508): the marker comes back in its normal form
    assert pins.split_requirement("ray[default]==2.46.0 ; python_version<'3.12'") == (
        "ray", "[default]", "==2.46.0", 'python_version < "3.12"')
    assert pins.split_requirement("verl @ file:///data/grpo/verl") == ("verl", "", "@ file:///data/grpo/verl", "")
    with pytest.raises(pins.ProfileError, match="cannot read requirement 'ray=2'"):
        pins.split_requirement("ray=2")
    assert pins.canonical("Torch_NPU") == pins.canonical("torch-npu") == "torch-npu"


@pytest.mark.parametrize("pin, installed, ok", [
    ("2.8.0", "2.8.0", True), ("2.8.0", "2.8.0+cpu", True), ("2.8.0+cpu", "2.8.0", False),
    ("2.8.0+cpu", "2.8.0+cpu", True), ("2.8", "2.8.0", True), ("2.8.0", "2.9.0", False),
    ("2.8.0", "2.8.0.post2", False), ("2.8.0", None, False),
])
def test_version_matches(pin, installed, ok):
    assert pins.version_matches(pin, installed) is ok


def test_validate_profile():
    assert pins.validate_profile(PROFILE) == []
    bad = {"name": "b", "pins": {"torch": ">=2"}, "phases": [{"name": "a"}, {"name": "a", "remove": ["x"],
                                                                                 "requirements": ["y"], "idx": 1}]}
    assert pins.validate_profile(bad) == [
        "pin torch: '>=2' is not an exact version",
        "phase 1 (a) has nothing to do: give requirements, requirements_files, remove or editable",
        "phase 2 (a): the name is used twice",
        "phase 2 (a): a removal phase removes only",
        "phase 2 (a): unknown field(s) idx",
    ]
    assert pins.validate_profile({"name": "x"}) == [
        "profile field 'pins' is missing", "profile field 'phases' is missing",
        "profile field 'phases' must be a non-empty list"]


def test_order_puts_removals_after_installs_and_verl_last():
    assert [p["name"] for p in pins.ordered_phases(PROFILE["phases"])] == ["base", "pins", "torch", "drop", "verl"]


def test_pins_override_requirement_files_and_are_listed():
    reqs, overrides = pins.phase_requirements(PROFILE["phases"][1], {"files": "/pkg"}, read, PROFILE["pins"])
    assert reqs == ["requests==2.31.0", "urllib3==1.26.20", "ray[default]==2.46.0 ; python_version<'3.12'"]
    assert overrides == [
        {"phase": "base", "source": "/pkg/base.txt", "asked": "requests>=2", "pinned": "requests==2.31.0"},
        {"phase": "base", "source": "/pkg/base.txt", "asked": "urllib3<2", "pinned": "urllib3==1.26.20"},
    ]


def test_plan_request_and_index_per_arch():
    site = {"extra_index_urls": ["https://extra"], "find_links": ["/wheels"]}
    request = pins.plan_request(PROFILE, {"files": "/pkg", "verl": "/ws/verl"}, read, "aarch64", site)
    assert request["requirements"] == ["requests==2.31.0", "urllib3==1.26.20",
                                       "ray[default]==2.46.0 ; python_version<'3.12'",
                                       "urllib3==1.26.20", "requests==2.31.0"]
    assert request["fixed"] == ["torch==2.8.0"]
    assert request["index_args"] == ["--extra-index-url", "https://extra", "--find-links", "/wheels",
                                     "--index-url", "https://mirror/a"]
    offline = pins.plan_request(PROFILE, {"files": "/pkg"}, read, "x86_64", {"wheelhouse": "/wh"})
    assert offline["index_args"] == ["--no-index", "--find-links", "/wh"]


def test_install_steps():
    steps = pins.install_steps(PROFILE, {"files": "/pkg", "verl": "/ws/verl"}, read, "x86_64", {}, "python3",
                               constraints_path="/ws/.grpo/constraints.txt")
    # pip's byte-compilation off: Python compiles what it imports
    install = ["install", "--disable-pip-version-check", "--no-compile"]
    assert [(s["phase"], s["argv"][3:]) for s in steps] == [
        ("base", install + ["-c", "/ws/.grpo/constraints.txt", "requests==2.31.0", "urllib3==1.26.20",
                            "ray[default]==2.46.0 ; python_version<'3.12'"]),
        ("pins", install + ["--index-url", "https://mirror/x", "-c", "/ws/.grpo/constraints.txt", "urllib3==1.26.20",
                            "requests==2.31.0"]),
        ("torch", install + ["-c", "/ws/.grpo/constraints.txt", "--no-deps", "torch==2.8.0"]),
        ("drop", ["uninstall", "-y", "uvloop"]),
        ("verl", install + ["-c", "/ws/.grpo/constraints.txt", "--no-deps", "-e", "/ws/verl"]),
    ]
    assert steps[2]["env"] == {"X": "1"}
    assert pins.constraints_text(PROFILE["pins"]) == "requests==2.31.0\ntorch==2.8.0\nurllib3==1.26.20\n"


def test_report_analysis_ok_and_drift():
    resolved = pins.parse_report(fixture("report_requests.json"))
    assert resolved["requests"]["version"] == "2.31.0" and resolved["urllib3"]["version"].startswith("1.26.")
    urllib3 = resolved["urllib3"]["version"]
    plan = pins.analyze_plan({"requests": "2.31.0", "urllib3": urllib3, "torch": "2.8.0"}, resolved,
                             fixed=["torch==2.8.0"])
    assert [(r["package"], r["planned"], r["status"]) for r in plan["rows"]] == [
        ("requests", "2.31.0", "ok"), ("torch", "2.8.0", "ok"), ("urllib3", urllib3, "ok")]
    assert plan["blocking"] == []
    drift = pins.analyze_plan({"urllib3": "2.2.0", "idna": "9.9"}, resolved)
    rows = {r["package"]: r for r in drift["rows"]}
    assert rows["urllib3"]["status"] == "drift"
    assert rows["urllib3"]["pulled_by"] == ["requests 2.31.0: urllib3 (<3,>=1.21.1)"]
    assert drift["blocking"] == ["idna", "urllib3"]
    assert pins.analyze_plan({"nothere": "1.0"}, resolved)["rows"][0]["status"] == "missing"


def test_conflict_parsing_and_acceptance():
    conflicts = pins.parse_conflict(fixture("conflict_urllib3.txt"))
    assert conflicts == [{"package": "urllib3", "wants": [
        {"by": "you (profile or constraints)", "spec": "urllib3==2.0.7"},
        {"by": "botocore 1.29.0", "spec": "urllib3<1.27 and >=1.25.4"}], "unavailable": True}]
    plan = pins.analyze_plan({"urllib3": "2.0.7", "botocore": "1.29.0"}, conflicts=conflicts)
    assert [(r["package"], r["status"]) for r in plan["rows"]] == [("botocore", "unresolved"), ("urllib3", "conflict")]
    assert plan["rows"][1]["pulled_by"] == ["you (profile or constraints) wants urllib3==2.0.7",
                                            "botocore 1.29.0 wants urllib3<1.27 and >=1.25.4"]
    assert plan["blocking"] == ["urllib3"]
    accepted = pins.analyze_plan({"urllib3": "2.0.7"}, conflicts=conflicts, accept=["URLLIB3"])
    assert accepted["blocking"] == [] and accepted["accepted"] == ["urllib3"]


def test_vllm_conflict_text():
    text = ("ERROR: Cannot install vllm-ascend==0.13.0 and vllm==0.13.0 because these package versions have "
            "conflicting dependencies.\n\nThe conflict is caused by:\n    vllm 0.13.0 depends on torch==2.9.0\n"
            "    vllm-ascend 0.13.0 depends on torch==2.8.0\n\nTo fix this you could try to:\n")
    assert pins.parse_conflict(text) == [{"package": "torch", "wants": [
        {"by": "vllm 0.13.0", "spec": "torch==2.9.0"}, {"by": "vllm-ascend 0.13.0", "spec": "torch==2.8.0"}],
        "unavailable": False}]


def test_drift_report_and_table():
    report = pins.check_installed({"torch": "2.8.0", "ray": "2.41.0", "sympy": "1.13.3"},
                                  {"torch": "2.8.0+cpu", "ray": "2.48.0", "sympy": None}, accept=["sympy"])
    assert [(r["package"], r["status"]) for r in report["rows"]] == [
        ("ray", "drift"), ("sympy", "missing"), ("torch", "ok")]
    assert report["drift"] == ["ray"] and not report["ok"]
    text = pins.table(report["rows"], ["package", "expected", "installed", "status"])
    assert text.splitlines() == [
        "package  expected  installed  status",
        "-------  --------  ---------  -------",
        "ray      2.41.0    2.48.0     drift",
        "sympy    1.13.3    -          missing",
        "torch    2.8.0     2.8.0+cpu  ok",
    ]
    json.dumps(report)


def test_plan_text():
    plan = {"rows": [{"package": "ray", "pinned": "2.41.0", "planned": "2.48.0", "status": "drift",
                      "pulled_by": ["vllm 0.13.0: ray[cgraph]>=2.48.0"]}],
            "overrides": [{"phase": "p", "source": "/v/requirements-npu.txt", "asked": "ray==2.46.0",
                           "pinned": "ray==2.41.0"}],
            "unplanned": ["pylatexenc"]}
    assert pins.plan_text(plan) == [
        "package  pinned  planned  status  pulled_by",
        "-------  ------  -------  ------  --------------------------------",
        "ray      2.41.0  2.48.0   drift   vllm 0.13.0: ray[cgraph]>=2.48.0",
        "replaced ray==2.46.0 by ray==2.41.0 (/v/requirements-npu.txt)",
        "not planned here (no wheel for the target): pylatexenc",
    ]
