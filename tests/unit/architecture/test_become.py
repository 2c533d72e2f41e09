"""A login that is not root (issue 43): `ansible_user: ubuntu` with `ansible_become: true` on the NPU hosts.

Become is the NPU host's own setting, so it reaches every task on the host without a task asking for it: the
container stage's Docker modules and its writes to the host, and the later stages' tasks delegated to the host
(npu-smi, Ray's firewall and routes). No task turns it off or picks a user of its own, and nothing checks for
root. Inside the container tasks run as the container's own user (its root), with no become: the container stage
gives each container it adds to npu_envs `ansible_become: false`, and its docker runs under sudo on the host.

Read from the roles' YAML, and from a real run of the container stage's inventory step (no Docker, no SSH: the host
is never contacted)."""

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from grpo_testkit import ROOT

# keywords that would take a task off the host's become, or run it as someone else
OVERRIDES = ("become", "become_user", "become_method", "become_flags", "become_exe", "remote_user")
BOOKS = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
               + [p for p in glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))
                  if not os.path.basename(p).startswith("sim_")] + [os.path.join(ROOT, "site.yml")])


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            if key in node:
                yield from _tasks(node[key])


@pytest.mark.parametrize("path", BOOKS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_task_overrides_the_hosts_become_or_user(path):
    with open(path, encoding="utf-8") as handle:
        found = [(task.get("name"), key) for task in _tasks(yaml.safe_load(handle) or [])
                 for key in OVERRIDES if key in task]
    assert found == [], "the host's become/ansible_user decide who runs a task, not the task"


# Callbacks run on the controller, never on a host: grpo_module_cache compares its cache folder's owner with the
# user running Ansible (whoever that is), which is no check for root.
CONTROLLER_ONLY = os.path.join(ROOT, "python_plugins", "callback_plugins")


def test_nothing_checks_for_root_on_the_host():
    sources = [path for path in glob.glob(os.path.join(ROOT, "python_plugins", "**", "*.py"), recursive=True)
               if not path.startswith(CONTROLLER_ONLY + os.sep)] + BOOKS
    hits = []
    for path in sources:
        text = open(path, encoding="utf-8").read()
        for needle in ("geteuid", "getuid()", "owner: root", "group: root", "id -u"):
            if needle in text:
                hits.append((os.path.relpath(path, ROOT), needle))
    assert hits == []


def test_the_controllers_callbacks_compare_owners_and_never_require_root():
    for path in glob.glob(os.path.join(CONTROLLER_ONLY, "*.py")):
        text = open(path, encoding="utf-8").read()
        for needle in ("geteuid() == 0", "geteuid() != 0", "getuid() == 0", "owner: root", "id -u"):
            assert needle not in text, (path, needle)


INVENTORY = {"all": {"children": {
    "npu_hosts": {"hosts": {
        "npu910b": {"ansible_host": "203.0.113.10", "ansible_port": 2222, "ansible_user": "ubuntu",
                    "ansible_become": True, "ansible_ssh_private_key_file": "/home/me/.ssh/npu_ed25519",
                    "ansible_ssh_common_args": "-o ProxyJump=me@bastion.example"},
        "npu-none": {"ansible_connection": "local", "ansible_become": True, "npu_container_mode": "none",
                     "ansible_python_interpreter": sys.executable}}},
    "npu_envs": {"hosts": {}}}}}

PLAY = """
- name: The container stage's inventory step, as it runs after the container (here described, not made)
  hosts: npu_hosts
  gather_facts: false
  tasks:
    - name: Add the training environments
      ansible.builtin.include_role:
        name: npu_container
        tasks_from: inventory

- name: What each training environment is reached with
  hosts: npu_envs
  gather_facts: false
  tasks:
    - name: Show it
      ansible.builtin.debug:
        msg: "REACHED {{ {'env': inventory_hostname, 'connection': ansible_connection | default(''),
                          'become': ansible_become | default(false),
                          'access': ansible_grpo_container_access | default({})} | to_json }}"
"""


def test_the_container_gets_no_become_and_its_docker_runs_under_sudo_on_the_host(tmp_path):
    (tmp_path / "hosts.json").write_text(json.dumps(INVENTORY))
    (tmp_path / "play.yml").write_text(PLAY)
    # the container as docker_container reports it (the stage's own result), so nothing asks an engine
    described = {"npu_container_result": {"changed": False, "container": {"State": {"Running": True}}}}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"))
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp_path / "hosts.json"), str(tmp_path / "play.yml"), "-e", json.dumps(described)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    reached = {}
    for line in done.stdout.splitlines():
        if '"msg": "REACHED ' in line:
            value = json.loads(json.loads(line.split('"msg": ', 1)[1])[len("REACHED "):])
            reached[value["env"]] = value
    assert sorted(reached) == ["npu-none", "qwen-grpo@npu910b"], done.stdout[-3000:]
    container = reached["qwen-grpo@npu910b"]
    assert container["connection"] == "grpo_container" and container["become"] is False
    assert container["access"]["docker"] == ["sudo", "-n", "-u", "root", "docker"]
    ssh = container["access"]["ssh"]
    assert ssh[-2:] == ["--", "203.0.113.10"] and "ProxyJump=me@bastion.example" in ssh
    assert " ".join(ssh).count("-p 2222 -i /home/me/.ssh/npu_ed25519 -l ubuntu") == 1
    # with npu_container_mode none the environment is the host itself, which keeps its own become
    assert reached["npu-none"]["become"] is True and reached["npu-none"]["connection"] == "local"
