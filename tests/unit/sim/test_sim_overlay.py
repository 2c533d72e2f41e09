"""The simulated host runs what a user writes: its inventories are the real inventory's settings file plus one named
overlay of what only a simulation needs, each value with its reason. Anything else a simulated inventory (or
molecule's) sets would make the simulated host kinder than a real one without saying so."""

import glob
import os
import re

import pytest
import yaml

from grpo_testkit import ROOT

INVENTORIES = os.path.join(ROOT, "inventories")
REAL = os.path.join(INVENTORIES, "cloud910b")
REAL_SETTINGS = os.path.join(REAL, "group_vars", "all.yml")
OVERLAY = os.path.join(INVENTORIES, "sim", "group_vars", "all", "10-sim-overlay.yml")
# the part of the overlay that is the connected simulated host's sources, which the offline one does without
SOURCES = os.path.join(INVENTORIES, "sim", "group_vars", "all", "15-sim-sources.yml")
MULTI_OVERLAY = os.path.join(INVENTORIES, "sim-multi", "group_vars", "all", "20-sim-multi-overlay.yml")
OFFLINE_OVERLAY = os.path.join(INVENTORIES, "sim-offline", "group_vars", "all", "30-sim-offline-overlay.yml")
# Each simulated inventory's group_vars/all: file name -> the file it is (a link to it, or the file itself).
LAYOUT = {
    "sim": {"00-cloud910b.yml": REAL_SETTINGS, "10-sim-overlay.yml": OVERLAY, "15-sim-sources.yml": SOURCES},
    "sim-multi": {"00-cloud910b.yml": REAL_SETTINGS, "10-sim-overlay.yml": OVERLAY, "15-sim-sources.yml": SOURCES,
                  "20-sim-multi-overlay.yml": MULTI_OVERLAY},
    "sim-offline": {"00-cloud910b.yml": REAL_SETTINGS, "10-sim-overlay.yml": OVERLAY,
                    "30-sim-offline-overlay.yml": OFFLINE_OVERLAY},
}
# The simulation's own names (no production role reads them): its stand-ins, and molecule's drills.
OWN_NAME = re.compile(r"^(sim|drill)_")
# What a real multi-host inventory sets per host (README, "Several hosts"): the head of the cluster.
PER_HOST_SETTINGS = {"grpo_cluster_head_node"}
MOLECULE_INVENTORIES = sorted(glob.glob(os.path.join(ROOT, "molecule", "*", "inventory")))


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def overlay_keys():
    return set(load(OVERLAY)) | set(load(SOURCES)) | set(load(MULTI_OVERLAY)) | set(load(OFFLINE_OVERLAY))


def host_vars(hosts_file):
    """{host: {var: value}} from an inventory's hosts.yml, whatever group the host is in."""
    found = {}

    def walk(group):
        for name, values in ((group or {}).get("hosts") or {}).items():
            found.setdefault(name, {}).update(values or {})
        for child in ((group or {}).get("children") or {}).values():
            walk(child)

    walk(load(hosts_file).get("all"))
    return found


def unreasoned(path):
    """Top-level keys of an overlay file without a `# reason:` comment in the comment block right above them."""
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    missing = []
    for number, line in enumerate(lines):
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):", line)
        if not match:
            continue
        block, above = [], number - 1
        while above >= 0 and lines[above].startswith("#"):
            block.append(lines[above])
            above -= 1
        if not any(text.startswith("# reason:") for text in block):
            missing.append(match.group(1))
    return missing


@pytest.mark.parametrize("inventory", sorted(LAYOUT))
def test_a_simulated_inventory_is_the_real_settings_and_the_overlay(inventory):
    folder = os.path.join(INVENTORIES, inventory, "group_vars")
    assert sorted(os.listdir(folder)) == ["all"], "only group_vars/all: %s" % os.listdir(folder)
    files = {name: os.path.realpath(os.path.join(folder, "all", name)) for name in os.listdir(os.path.join(folder, "all"))}
    assert files == LAYOUT[inventory]
    assert os.path.islink(os.path.join(folder, "all", "00-cloud910b.yml"))
    assert not os.path.exists(os.path.join(INVENTORIES, inventory, "host_vars"))


def test_the_real_inventory_has_one_settings_file():
    assert sorted(os.listdir(os.path.join(REAL, "group_vars"))) == ["all.yml"]
    assert not os.path.exists(os.path.join(REAL, "host_vars"))


@pytest.mark.parametrize("path", [OVERLAY, SOURCES, MULTI_OVERLAY, OFFLINE_OVERLAY],
                         ids=["sim", "sim-sources", "sim-multi", "sim-offline"])
def test_every_overlay_value_says_why(path):
    assert load(path), path
    assert unreasoned(path) == []


def test_the_reason_check_finds_a_value_without_one(tmp_path):
    sample = tmp_path / "overlay.yml"
    sample.write_text("---\n# reason: the sim's own image\nnpu_container_image: x\n# a comment, no reason\n"
                      "npu_container_pull: false\ngrpo_stack: cpu-sim\n")
    assert unreasoned(str(sample)) == ["npu_container_pull", "grpo_stack"]


@pytest.mark.parametrize("inventory", sorted(LAYOUT))
def test_the_simulated_hosts_set_what_a_real_host_entry_sets(inventory):
    real = set().union(*host_vars(os.path.join(REAL, "hosts.yml")).values())
    for host, values in host_vars(os.path.join(INVENTORIES, inventory, "hosts.yml")).items():
        extra = sorted(k for k in values if k not in real and k not in PER_HOST_SETTINGS and not OWN_NAME.match(k))
        assert extra == [], "%s sets %s outside the overlay" % (host, extra)


@pytest.mark.parametrize("inventory", MOLECULE_INVENTORIES, ids=lambda p: p.split(os.sep)[-2])
def test_molecule_sets_only_what_the_overlay_names(inventory):
    allowed = overlay_keys()
    outside = []
    for path in sorted(glob.glob(os.path.join(inventory, "group_vars", "*"))):
        outside += ["%s: %s" % (os.path.basename(path), key) for key in load(path)
                    if key not in allowed and not OWN_NAME.match(key)]
    for host, values in host_vars(os.path.join(inventory, "hosts.yml")).items():
        outside += ["hosts.yml %s: %s" % (host, key) for key in values
                    if key not in allowed and not OWN_NAME.match(key)]
    assert outside == []
    assert not os.path.exists(os.path.join(inventory, "host_vars"))


def test_no_production_file_reads_a_simulation_name():
    production = (glob.glob(os.path.join(ROOT, "roles", "**", "*"), recursive=True)
                  + glob.glob(os.path.join(ROOT, "python_plugins", "**", "*.py"), recursive=True)
                  + [os.path.join(ROOT, "site.yml")]
                  + [p for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))
                     if not os.path.basename(p).startswith("sim_")])
    readers = []
    for path in production:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        names = set(re.findall(r"\b((?:sim|drill)_[a-z0-9_]+)\b", text))
        names -= {"sim_reward"}  # the sim reward file's name in comments about the simulated host
        if names:
            readers.append("%s: %s" % (os.path.relpath(path, ROOT), ", ".join(sorted(names))))
    assert readers == []


def test_the_default_scenario_trains_on_a_card_that_is_not_0_of_eight():
    overlay = load(OVERLAY)
    assert overlay["sim_host_cards"] == list(range(8))
    assert overlay["npu_container_visible_devices"] != [0]
    assert not set(overlay["npu_container_visible_devices"]) & set(overlay["sim_host_busy_cards"])
    multi = load(MULTI_OVERLAY)
    assert multi["npu_container_visible_devices"] not in ([0], overlay["npu_container_visible_devices"])


def test_the_offline_simulated_host_has_none_of_the_connected_ones_sources():
    # nothing it could install or copy from instead of its bundle: no mount of this machine's folders, no source
    # setting of the connected simulated host, and no network
    offline = load(OFFLINE_OVERLAY)
    assert offline["npu_container_extra_volumes"] == []
    assert offline["npu_container_network"] == "none"
    assert offline["grpo_offline_bundle"]
    assert not set(load(SOURCES)) - {"npu_container_extra_volumes"} & set(offline)
