"""Host keys are checked on real hosts: a host impersonated over SSH would otherwise receive the hub token, the
registry password and the Ray token. Only the simulation's hosts, which no SSH reaches, go without."""

import configparser
import glob
import os

import yaml
from grpo_testkit import ROOT


def test_ansible_cfg_leaves_host_key_checking_on():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "ansible.cfg"))
    assert config.get("defaults", "host_key_checking", fallback="True").lower() not in ("false", "no", "0")


def _hosts(node):
    if isinstance(node, dict):
        for name, value in (node.get("hosts") or {}).items():
            yield name, value or {}
        for child in (node.get("children") or {}).values():
            yield from _hosts(child or {})


def test_the_simulations_hosts_are_reached_without_ssh():
    books = glob.glob(os.path.join(ROOT, "inventories", "sim*", "hosts.yml"))
    assert len(books) >= 2
    for book in books:
        with open(book, encoding="utf-8") as handle:
            for name, host in _hosts(yaml.safe_load(handle)["all"]):
                assert host.get("ansible_connection") == "local", (book, name)
