"""How the controller reaches the training container (ascend_grpo.container.container_access and the grpo_container connection
plugin): with the NPU host's own docker, over the host's own SSH login from the inventory (its port, key and jump
host, which docker's `-H ssh://user@host` never took), under sudo -n there with become; on the host itself without
become as before, with community.docker's docker connection.

The plugin is run for real by ansible-playbook against fake `ssh`, `sudo` and `docker` commands that log their
arguments and run what they are given on this machine: no Docker, no SSH."""

import json
import os
import shlex
import stat
import subprocess
import sys

import pytest
from grpo_testkit import ROOT

from ascend_grpo.container import container_access
from container_filters import container_access as reach  # noqa: E402  (the filter the stage calls: the plugin's name)

SSH_HOST = {"host": "npu910b", "connection": "ssh", "address": "203.0.113.10", "port": 2222, "user": "ubuntu",
            "private_key_file": "/home/me/.ssh/npu_ed25519", "ssh_common_args": "-o ProxyJump=me@bastion.example:2200",
            "ssh_extra_args": "", "become": True, "become_method": "sudo", "become_user": "root", "docker_args": ""}


def test_over_ssh_the_inventorys_port_key_user_and_jump_host_reach_the_host():
    got = reach(SSH_HOST)
    assert got["problems"] == []
    assert got["connection"] == "grpo_container"
    ssh = got["ssh"]
    assert ssh[0] == "ssh" and ssh[-2:] == ["--", "203.0.113.10"]
    for pair in (["-p", "2222"], ["-i", "/home/me/.ssh/npu_ed25519"], ["-l", "ubuntu"],
                 ["-o", "ProxyJump=me@bastion.example:2200"], ["-o", "BatchMode=yes"]):
        assert any(ssh[i:i + 2] == pair for i in range(len(ssh))), (pair, ssh)
    # the inventory's own ssh arguments come before the package's defaults: ssh keeps the first value of an option
    assert ssh.index("ProxyJump=me@bastion.example:2200") < ssh.index("BatchMode=yes")
    # become on the host: docker runs under sudo there, never a password prompt
    assert got["docker"] == ["sudo", "-n", "-u", "root", "docker"]


def test_a_command_reaches_the_container_as_one_quoted_string_on_the_host():
    reached = reach(SSH_HOST)
    command = ["/bin/sh", "-c", "echo 'it''s' \"$HOME\" && python3 -c 'print(1)'; sleep 0"]
    argv = container_access.exec_argv(reached, "qwen-grpo", command)
    assert argv[:-1] == reached["ssh"]
    assert shlex.split(argv[-1]) == ["sudo", "-n", "-u", "root", "docker", "exec", "-i", "qwen-grpo"] + command


def test_jump_host_and_options_given_as_ansible_writes_them():
    got = reach(dict(SSH_HOST, ssh_common_args='-J jump -o ProxyCommand="ssh -W %h:%p -q gw"',
                                       ssh_extra_args="-o ServerAliveInterval=30", port=None, become=False))
    assert got["problems"] == []
    assert got["ssh"][1:6] == ["-J", "jump", "-o", "ProxyCommand=ssh -W %h:%p -q gw", "-o"]
    assert "-p" not in got["ssh"]
    assert got["docker"] == ["docker"]


def test_on_the_host_itself_without_become_the_docker_connection_stays():
    got = reach({"host": "sim910b", "connection": "local", "docker_args": "--config /etc/dk"})
    assert got == {"connection": "community.docker.docker", "docker_extra_args": "--config /etc/dk", "ssh": [],
                   "docker": ["docker", "--config", "/etc/dk"], "problems": []}


def test_on_the_host_itself_with_become_docker_runs_under_sudo_here():
    got = reach({"host": "npu910b", "connection": "local", "become": "true", "become_user": "root"})
    assert got["connection"] == "grpo_container" and got["ssh"] == []
    assert container_access.exec_argv(got, "c", ["id"]) == ["sudo", "-n", "-u", "root", "docker", "exec", "-i", "c",
                                                             "id"]


@pytest.mark.parametrize("change, needle", [
    ({"docker_args": "-H ssh://root@203.0.113.10"}, "points docker at another engine"),
    ({"docker_args": "--context=remote"}, "remove -H/--host/--context"),
    ({"docker_args": "--config 'unclosed"}, "npu_container_docker_cli_args ("),
    ({"connection": "paramiko"}, "which needs ssh (or local"),
    ({"become_method": "su"}, "ansible_become_method su"),
    ({"ssh_common_args": "-o 'ProxyJump=x"}, "ansible_ssh_common_args ("),
    ({"every_host": {"ansible_user": "ubuntu"}}, "ansible_user (ubuntu) is set for every host (group all)"),
    ({"every_host": {"ansible_become": True}}, "ansible_become is set for every host (group all)"),
])
def test_settings_that_cannot_reach_the_container_are_refused_naming_the_fix(change, needle):
    problems = reach(dict(SSH_HOST, **change))["problems"]
    assert len(problems) == 1 and needle in problems[0], problems


def test_the_engine_names_the_docker_arguments_as_its_field_and_takes_the_plugins_name():
    """The engine knows neither the setting nor the plugin's name (a setting is called grpo_container too): the
    filter gives both."""
    got = container_access.access(dict(SSH_HOST, docker_args="-H ssh://root@203.0.113.10"), "through-the-host")
    assert got["connection"] == "through-the-host"
    (problem,) = got["problems"]
    assert problem.startswith("{docker_args} ('-H ssh://root@203.0.113.10') points docker at another engine"), problem


FAKE_SSH = r"""#!/bin/sh
# ssh [options] -- host command: log, then run the command here. Like the master ControlPersist leaves behind,
# a background process keeps the stderr it was given open for a while (stdin and stdout it sets to /dev/null).
printf '%s\n' "ssh $*" >> "$GRPO_FAKE_LOG"
sleep 30 </dev/null >/dev/null &
while [ "$1" != "--" ]; do shift; done
shift 2
exec /bin/sh -c "$1"
"""
FAKE_SUDO = r"""#!/bin/sh
printf '%s\n' "sudo $*" >> "$GRPO_FAKE_LOG"
[ "$1" = "-n" ] && shift
[ "$1" = "-u" ] && shift 2
exec "$@"
"""
FAKE_DOCKER = r"""#!/bin/sh
# docker exec [-i] NAME COMMAND...: log, then run the command here
printf '%s\n' "docker $*" >> "$GRPO_FAKE_LOG"
[ "$1" = "exec" ] || exit 64
shift
[ "$1" = "-i" ] && shift
shift
exec "$@"
"""

PLAY = """
- name: Tasks in the training container, reached through the NPU host's login
  hosts: envs
  gather_facts: false
  tasks:
    - name: Run a command (pipelined, the module on standard input)
      ansible.builtin.command: echo in the container
      register: said
    - name: Copy a file in (put_file)
      ansible.builtin.copy:
        dest: "{{ where }}/copied.txt"
        content: "hello from the controller\\n"
        mode: "0644"
    - name: Fetch it back (fetch_file)
      ansible.builtin.fetch:
        src: "{{ where }}/copied.txt"
        dest: "{{ where }}/fetched/"
        flat: true
    - name: Show what the command said
      ansible.builtin.debug:
        msg: "said: {{ said.stdout }}"
"""


def _fake_bin(folder):
    folder.mkdir()
    for name, text in (("ssh", FAKE_SSH), ("sudo", FAKE_SUDO), ("docker", FAKE_DOCKER)):
        path = folder / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


@pytest.mark.parametrize("spec", [SSH_HOST, {"host": "npu910b", "connection": "local", "become": True}],
                         ids=["ssh-become", "local-become"])
def test_the_connection_plugin_runs_modules_and_moves_files_through_the_hosts_login(tmp_path, spec):
    fake = _fake_bin(tmp_path / "bin")
    log = tmp_path / "calls.log"
    reached = reach(spec)
    inventory = {"all": {"children": {"envs": {"hosts": {"qwen-grpo@npu910b": {
        "ansible_connection": reached["connection"], "ansible_host": "qwen-grpo", "ansible_pipelining": True,
        "ansible_grpo_container_access": reached, "ansible_become": False,
        "ansible_python_interpreter": sys.executable, "where": str(tmp_path)}}}}}}
    (tmp_path / "hosts.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, PATH=str(fake) + os.pathsep + os.path.dirname(sys.executable) + os.pathsep
               + os.environ["PATH"], GRPO_FAKE_LOG=str(log), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
               ANSIBLE_NOCOLOR="1", HOME=str(tmp_path))
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           str(tmp_path / "hosts.json"), str(tmp_path / "play.yml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "said: in the container" in done.stdout
    assert (tmp_path / "copied.txt").read_text() == "hello from the controller\n"
    assert (tmp_path / "fetched" / "copied.txt").read_text() == "hello from the controller\n"
    calls = log.read_text().splitlines()
    dockers = [c for c in calls if c.startswith("docker ")]
    assert dockers and all(c.startswith("docker exec -i qwen-grpo ") or c.startswith("docker exec qwen-grpo cat ")
                           for c in dockers), dockers
    # every docker ran under sudo on the host (become there), and over ssh every one went through the login
    assert len([c for c in calls if c.startswith("sudo -n -u root docker exec")]) == len(dockers)
    if spec["connection"] == "ssh":
        sshs = [c for c in calls if c.startswith("ssh ")]
        assert len(sshs) == len(dockers)
        assert all(" -p 2222 -i /home/me/.ssh/npu_ed25519 -l ubuntu " in c and "ProxyJump=me@bastion.example:2200"
                   in c and c.split(" -- ")[1].startswith("203.0.113.10 ") for c in sshs), sshs
    else:
        assert not [c for c in calls if c.startswith("ssh ")]


def test_the_container_stage_refuses_them_before_it_looks_at_the_host(tmp_path):
    """The old way's setting (docker -H ssh://... from the controller) now points the host's docker elsewhere."""
    from grpo_testkit import run_role

    done = run_role(tmp_path, "npu_container", {"npu_container_docker_cli_args": "-H ssh://root@203.0.113.10",
                                                "npu_container_workspace_host": str(tmp_path / "ws")})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Preflight | Check how the controller reaches the host's Docker (login, become, docker arguments)"
    assert "npu_container_docker_cli_args ('-H ssh://root@203.0.113.10') points docker at another engine" in msg
    assert os.listdir(tmp_path) == ["npu_container.yml"]  # nothing made
