"""The commands the package prints for a user to run (issue 43): each carries the inventory the user ran with, and
one place builds them (ascend_grpo.common.rerun, behind the grpo_rerun_command filter and the modules' inventory)."""

import glob
import os
import re
import shlex

from grpo_testkit import ROOT

from ascend_grpo.common import rerun
from ascend_grpo.train import triage

import common_filters as rerun_command  # noqa: E402


def test_a_path_inside_the_project_is_given_relative_to_it_as_the_command_runs_there():
    assert rerun.inventory_args(["/src/grpo/inventories/cloud910b"], "/src/grpo") == "-i inventories/cloud910b"
    assert rerun.inventory_args(["/src/grpo/inventories/sim", "/src/grpo/molecule/default/inventory"],
                                "/src/grpo/") == "-i inventories/sim -i molecule/default/inventory"


def test_a_path_outside_the_project_stays_absolute_and_odd_ones_are_quoted():
    assert rerun.inventory_args(["/etc/grpo/hosts.yml"], "/src/grpo") == "-i /etc/grpo/hosts.yml"
    # a sibling whose name starts like the project is not inside it
    assert rerun.inventory_args(["/src/grpo-old/hosts.yml"], "/src/grpo") == "-i /src/grpo-old/hosts.yml"
    assert rerun.inventory_args(["/srv/my hosts/inv.yml"], "/src/grpo") == "-i '/srv/my hosts/inv.yml'"
    assert rerun.inventory_args(["/srv/x;id"], None) == "-i '/srv/x;id'"
    # a host list is not a path
    assert rerun.inventory_args(["npu-a,npu-b,"], "/src/grpo") == "-i npu-a,npu-b,"


def test_without_an_inventory_the_line_says_what_to_fill_in():
    assert rerun.inventory_args([], "/src/grpo") == "-i <your inventory>"
    assert rerun.command("deps") == "ansible-playbook site.yml -i <your inventory> --tags deps"


def test_the_line():
    assert rerun.command("container", "-i inventories/cloud910b") == \
        "ansible-playbook site.yml -i inventories/cloud910b --tags container"
    assert rerun.command(["stop", "status"], "-i inventories/sim") == \
        "ansible-playbook site.yml -i inventories/sim --tags stop,status"
    line = rerun.command("eval", "-i inventories/cloud910b", ["-e", "grpo_eval_step=140"])
    assert shlex.split(line) == ["ansible-playbook", "site.yml", "-i", "inventories/cloud910b", "--tags", "eval",
                                 "-e", "grpo_eval_step=140"]


def test_the_filters_take_ansibles_inventory_sources():
    sources = [os.path.join(ROOT, "inventories", "cloud910b")]
    assert rerun_command.grpo_inventory_args(sources) == "-i inventories/cloud910b"
    assert rerun_command.grpo_rerun_command("doctor", sources) == \
        "ansible-playbook site.yml -i inventories/cloud910b --tags doctor"
    assert rerun_command.grpo_rerun_command("eval", sources, "-e", "grpo_eval_step=140").endswith(
        "--tags eval -e grpo_eval_step=140")


def test_a_catalogued_fix_names_the_command_with_the_users_inventory():
    entries = triage.validate([{"id": "x", "cause": "it broke", "fix": "stop the previous run ({rerun.stop})",
                                "setting": "grpo_train_action", "signatures": ["HCCL busy"]}])
    found = triage.diagnose("HCCL busy\n", entries, inventory="-i inventories/cloud910b")
    assert found["fix"] == "stop the previous run (ansible-playbook site.yml -i inventories/cloud910b --tags stop)"
    unknown = triage.diagnose("Error: something new\n", entries, inventory="-i inventories/cloud910b")
    assert "(ansible-playbook site.yml -i inventories/cloud910b --tags bundle)" in unknown["fix"]


# ---- the tree: no printed command without the inventory ------------------------------------------------------------

# where the package's printed text lives (docs, tests and molecule say what they mean in their own words)
SCANNED = ["roles", "python_plugins", "playbooks", "templates"]
BUILDER = os.path.join("python_plugins", "module_utils", "ascend_grpo", "common", "rerun.py")
# ``ansible-playbook ... --tags`` within one statement; a hint in a message wraps over lines
_FULL = re.compile(r"ansible-playbook\b(?P<between>[^\n]*(?:\n[^\n]*){0,2}?)--tags", re.S)
# the short form a message used to give, "(--tags deps)": a stage named without the command (C(...) is ansible-doc's)
_SHORT = re.compile(r"(?<![C\w])\(--tags [a-z,]+\)")


def _code_lines(path):
    """The file's text with comment lines blanked (a comment is for the reader of the file, never printed)."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    return "\n".join("" if line.lstrip().startswith("#") else line for line in lines)


def _files():
    for top in SCANNED:
        for path in glob.glob(os.path.join(ROOT, top, "**", "*"), recursive=True):
            rel = os.path.relpath(path, ROOT)
            if os.path.isfile(path) and rel != BUILDER and path.endswith((".py", ".yml", ".yaml", ".j2", ".jinja")):
                yield rel, path
    yield "site.yml", os.path.join(ROOT, "site.yml")


def test_no_printed_command_leaves_out_the_inventory():
    """Every ``ansible-playbook ... --tags`` the package prints goes through the helper (so carries -i) or names an
    inventory itself; no message names a stage by a bare ``(--tags X)`` any more."""
    bad = []
    for rel, path in _files():
        text = _code_lines(path)
        for match in _FULL.finditer(text):
            if not re.search(r"(^|\s)-i\s", match.group("between")):
                bad.append("%s:%d: %s" % (rel, text[:match.start()].count("\n") + 1, " ".join(match.group(0).split())))
        # a role's documentation may say "(--tags stop)" of an option; a message may not
        for match in _SHORT.finditer("" if rel.endswith("argument_specs.yml") else text):
            bad.append("%s:%d: %s" % (rel, text[:match.start()].count("\n") + 1, match.group(0)))
    assert bad == [], "build these with grpo_rerun_command / ascend_grpo.common.rerun.command:\n" + "\n".join(bad)


def test_the_scan_would_catch_what_it_is_for():
    # the two kinds it refuses, and what it lets by (a comment; a command with its -i)
    assert _FULL.search("msg: rerun it (ansible-playbook site.yml --tags deps)")
    assert _FULL.search('"(ansible-playbook site.yml\n      --tags deps)"')
    assert not re.search(r"(^|\s)-i\s", _FULL.search("ansible-playbook site.yml --tags x").group("between"))
    assert re.search(r"(^|\s)-i\s", _FULL.search("ansible-playbook site.yml -i inv --tags x").group("between"))
    assert _SHORT.search('"run the deps stage (--tags deps)"') and not _SHORT.search("C(--tags stop)")
