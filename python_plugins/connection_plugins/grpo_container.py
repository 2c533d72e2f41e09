# -*- coding: utf-8 -*-
"""Connection plugin: run a task in the training container with the NPU host's own docker, reached with the host's
own login (the logic is in ascend_grpo.container.container_access; this file only runs what it computes)."""

DOCUMENTATION = r"""
name: grpo_container
short_description: Run tasks in the training container through the NPU host's own login (SSH, port, key, jump host, sudo)
description:
  - Each command runs as C(docker exec -i <container> /bin/sh -c <command>) with the docker CLI of the NPU host. A
    host reached over SSH is reached with the system ssh client and the inventory's own address, port, user, key
    and ssh arguments (a jump host in C(ansible_ssh_common_args)); with become on the host, docker runs under
    C(sudo -n) there. Inside the container the task runs as the container's user, with no become.
  - Files go in and out through the same command's standard input and output, so nothing is copied to the host.
  - The container stage sets this connection and its options on each training environment it adds to C(npu_envs)
    (from the NPU host's settings, with the C(container_access) filter); they are not settings to write by hand.
author:
  - GRPO on Ascend maintainers
options:
  remote_addr:
    description: The container's name on the NPU host.
    default: inventory_hostname
    type: str
    vars:
      - name: inventory_hostname
      - name: ansible_host
  access:
    description:
      - How the NPU host's docker is reached, as the C(container_access) filter computes it, C(ssh) (the ssh command
        line up to the host, empty on the host itself) and C(docker) (the docker command there).
    type: dict
    required: true
    vars:
      - name: ansible_grpo_container_access
"""

import os
import subprocess
import tempfile

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

from ascend_grpo.container import container_access

display = Display()


class Connection(ConnectionBase):
    """docker exec in the container, on the NPU host, through its own login."""

    transport = "grpo_container"
    has_pipelining = True

    def _connect(self):
        if not self._connected:
            # ssh's ControlPath (container_access.SSH_DEFAULTS) is in this folder, as Ansible's own ssh keeps it
            os.makedirs(os.path.expanduser("~/.ansible/cp"), mode=0o700, exist_ok=True)
            self._connected = True
        return self

    def _run(self, command, in_data=None, interactive=True):
        argv = container_access.exec_argv(self.get_option("access"), self.get_option("remote_addr"), command,
                                          interactive=interactive)
        display.vvv("EXEC %s" % " ".join(argv), host=self.get_option("remote_addr"))
        # stderr goes to a file, not a pipe: the ssh master ControlPersist leaves in the background keeps the
        # stderr it was started with open for its whole life, and reading a pipe to its end would wait for it
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
            except OSError as err:
                raise AnsibleConnectionFailure("cannot run %s: %s" % (argv[0], to_native(err))) from err
            out, _ = proc.communicate(in_data)
            errors.seek(0)
            return proc.returncode, out, errors.read()

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        self._connect()
        return self._run([self._play_context.executable or "/bin/sh", "-c", cmd], in_data=in_data)

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        self._connect()
        if not os.path.isfile(to_bytes(in_path, errors="surrogate_or_strict")):
            raise AnsibleError("file or module does not exist: %s" % in_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as handle:
            data = handle.read()
        # the path is the script's $1, never part of its text
        rc, _out, err = self._run(["/bin/sh", "-c", 'cat > "$1"', "sh", out_path], in_data=data)
        if rc != 0:
            raise AnsibleError("failed to put %s into the container as %s: %s" % (in_path, out_path, to_native(err)))

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        self._connect()
        rc, out, err = self._run(["cat", in_path], interactive=False)
        if rc != 0:
            raise AnsibleError("failed to fetch %s from the container: %s" % (in_path, to_native(err)))
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as handle:
            handle.write(out)

    def close(self):
        self._connected = False
