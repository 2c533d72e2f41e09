"""How the controller reaches the training container on an NPU host (plain Python, no Ansible import).

The container's tasks run as ``docker exec -i <container> /bin/sh -c <command>``, with the docker CLI of the NPU
host itself, so they take the host's own login from the inventory:

- a host Ansible runs on itself (``ansible_connection: local``) runs docker here; without become that is
  community.docker's ``docker`` connection, as it always was;
- a host reached over SSH runs docker there, through the system ssh client with the inventory's address
  (``ansible_host``), port (``ansible_port``), user (``ansible_user``), key (``ansible_ssh_private_key_file``) and
  ssh arguments (``ansible_ssh_common_args``, ``ansible_ssh_extra_args``: a jump host as ``-J bastion`` or
  ``-o ProxyJump=bastion``), so nothing has to be repeated in ``~/.ssh/config``. Docker's own ``-H ssh://user@host``
  took none of them but the user and the address;
- with become on the host (a login that is not root), docker runs under ``sudo -n`` there, as the host's own tasks
  run under become; inside the container the tasks run as the container's user (its root), with no become.

``access(spec, through_host)`` turns the NPU host's connection settings into what the container's connection
needs; ``exec_argv`` is the command line one task runs (the ``grpo_container`` connection plugin calls it).

Messages name an input as ``{field}`` (the key of ``spec``, or the argument of :func:`owner_problem`): the container
stage's filters (python_plugins/filter_plugins/container_filters.py) name the setting each stands for
(``{docker_args}``: npu_container_docker_cli_args; ``{name}``: npu_container_name).
"""

import shlex

from ..common import rerun

LOCAL = ("local", "ansible.builtin.local")
SSH = ("ssh", "ansible.builtin.ssh")
# community.docker's docker connection: the docker CLI on the controller, the path a local host without become keeps
DOCKER_CLI = "community.docker.docker"
# Reused between the tasks of a run (one SSH handshake, not one per task); %C hashes host, port and user.
SSH_DEFAULTS = ["-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPersist=60s",
                "-o", "ControlPath=~/.ansible/cp/grpo-%C"]
# docker CLI arguments that would point it at another engine than the NPU host's own
_ENGINE_ARGS = ("-H", "--host", "-c", "--context")


def _split(text, name, problems):
    try:
        return shlex.split(text or "")
    except ValueError as err:
        problems.append("%s (%r) is not a valid command line: %s" % (name, text, err))
        return []


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "yes", "true", "on", "y", "t")
    return bool(value)


def access(spec, through_host):
    """What the container's connection needs, from the NPU host's settings.

    spec: ``host`` (the inventory name), ``connection``, ``address``, ``port``, ``user``, ``private_key_file``,
    ``ssh_common_args``, ``ssh_extra_args``, ``ssh_executable``, ``become``, ``become_method``, ``become_user``,
    ``docker_args`` (npu_container_docker_cli_args), and ``every_host``: ``ansible_user``/``ansible_become`` set for
    every host (the group ``all``, as the controller's own localhost sees them), which would reach the container
    and the controller's own tasks too. ``through_host``: the name of the connection plugin that runs docker
    through the host's own login (this package's grpo_container, which the filter passes: the engine does not spell
    it, as a setting of the same name says which container a host's tasks run in).

    Returns ``{connection, docker_extra_args, ssh, docker, problems}``: the connection plugin for the container,
    the docker CLI arguments community.docker's connection takes, the ssh command line up to the host (empty on
    the host itself), the docker command there (``sudo -n -u <user> docker ...`` with become), and what is wrong
    with the settings, each naming the fix (the inputs as ``{field}``).
    """
    spec = dict(spec or {})
    name = spec.get("host") or "the NPU host"
    problems = []
    connection = str(spec.get("connection") or "ssh")
    become = _truthy(spec.get("become"))
    method = str(spec.get("become_method") or "sudo")
    docker_args = _split(spec.get("docker_args"), "{docker_args}", problems)
    if any(arg in _ENGINE_ARGS or arg.split("=", 1)[0] in _ENGINE_ARGS or "://" in arg for arg in docker_args):
        problems.append(
            "{docker_args} (%r) points docker at another engine: the container is reached with the "
            "docker CLI of %s itself (over its own SSH login from the inventory), so remove -H/--host/--context "
            "from it" % (spec.get("docker_args"), name))
    if connection not in LOCAL + SSH:
        problems.append(
            "%s is reached with ansible_connection %s: the training container is reached through the host's own "
            "login, which needs ssh (or local, running Ansible on the host itself)" % (name, connection))
    if become and method != "sudo":
        problems.append(
            "%s uses become with ansible_become_method %s: docker in the container's tasks runs under sudo -n on "
            "the host, so use sudo (with no password asked for docker), or a login in the docker group without "
            "become" % (name, method))
    every = spec.get("every_host") or {}
    if every.get("ansible_user") not in (None, ""):
        problems.append(
            "ansible_user (%s) is set for every host (group all): it would also be the user inside the training "
            "container and on the controller; set it on the NPU hosts instead (each host's line in hosts.yml, or "
            "npu_hosts: vars:)" % every["ansible_user"])
    if _truthy(every.get("ansible_become")):
        problems.append(
            "ansible_become is set for every host (group all): the controller's own tasks (the eval report, the "
            "status file) would run under sudo too; set it on the NPU hosts instead (each host's line in "
            "hosts.yml, or npu_hosts: vars:)")
    docker = (["sudo", "-n", "-u", str(spec.get("become_user") or "root")] if become else []) + ["docker"] + docker_args
    ssh = []
    if connection in SSH:
        ssh = [str(spec.get("ssh_executable") or "ssh")]
        # the inventory's own arguments first: ssh keeps the first value it reads for an option, so theirs win
        ssh += _split(spec.get("ssh_common_args"), "ansible_ssh_common_args", problems)
        ssh += _split(spec.get("ssh_extra_args"), "ansible_ssh_extra_args", problems)
        if spec.get("port") not in (None, ""):
            ssh += ["-p", str(spec["port"])]
        if spec.get("private_key_file"):
            ssh += ["-i", str(spec["private_key_file"])]
        if spec.get("user"):
            ssh += ["-l", str(spec["user"])]
        ssh += SSH_DEFAULTS + ["--", str(spec.get("address") or spec.get("host"))]
    plugin = DOCKER_CLI if connection in LOCAL and not become else through_host
    return {"connection": plugin, "docker_extra_args": " ".join(docker_args), "ssh": ssh, "docker": docker,
            "problems": problems}


def exec_argv(reached, container, command, interactive=True):
    """The command line that runs ``command`` (a list of words) in ``container``: ``docker exec`` on the NPU host,
    through ssh when the host is reached over SSH (the remote side gets one shell-quoted string)."""
    inner = list(reached["docker"]) + ["exec"] + (["-i"] if interactive else []) + [container] + list(command)
    if reached.get("ssh"):
        return list(reached["ssh"]) + [shlex.join(inner)]
    return inner


# Every container the container stage makes carries these labels: which package made it and for which workspace
# (its path on the host). Two users of one host who pick one name, or two checkouts with two workspaces, would
# otherwise find, recreate or enter each other's container by its name alone.
LABEL_PROJECT = "io.ascend-grpo.project"
PROJECT = "ascend-grpo"
LABEL_WORKSPACE = "io.ascend-grpo.workspace"


def _norm(path):
    text = str(path or "")
    while len(text) > 1 and text.endswith("/"):
        text = text[:-1]
    return text


def container_labels(workspace_host):
    """The labels the container stage gives its container (docker_container's ``labels``)."""
    return {LABEL_PROJECT: PROJECT, LABEL_WORKSPACE: _norm(workspace_host)}


def _workspace_mounted(found, workspace_host, workspace):
    """Whether ``found`` (docker inspect) binds ``workspace_host`` at ``workspace``, as the container stage does."""
    for mount in (found or {}).get("Mounts") or []:
        if (mount.get("Type") == "bind" and _norm(mount.get("Source")) == _norm(workspace_host)
                and _norm(mount.get("Destination")) == _norm(workspace)):
            return True
    return False


def owner_problem(found, name, host, workspace_host, workspace, purpose="recreate", sources=()):
    """Why the stages must not touch the container ``found`` (docker inspect's object, as community.docker's
    docker_container_info returns it; None or {} when no container has the name), "" when they may.

    ``purpose``: ``recreate`` (the container stage, which may remove and recreate it), ``remove`` (the teardown,
    which removes it) or ``enter`` (the later stages, which run their tasks in it with docker exec). A container carrying this package's labels for this
    workspace may be both. One with another workspace's label, or another project's, neither. One with no label of
    this package (made by its earlier versions, or by someone else): the container stage refuses it, since
    recreating it would end what runs in it, and says how to remove it once it is known to be the user's; the
    later stages enter it only when it binds this very workspace (``workspace_host`` at ``workspace``), as an
    earlier version's container does, so a run started before an upgrade can still be watched and stopped.
    The message names the container's name as ``{name}`` (the filter names its setting)."""
    if not found:
        return ""
    labels = ((found.get("Config") or {}).get("Labels")) or {}
    ws_host = _norm(workspace_host)
    verb = {"recreate": "recreate it", "remove": "remove it"}.get(purpose, "run its tasks in it (docker exec)")
    project, owner = labels.get(LABEL_PROJECT), labels.get(LABEL_WORKSPACE)
    if project == PROJECT and _norm(owner) == ws_host:
        return ""
    keep = "Nothing was changed."
    if project is not None or owner is not None:
        return ("{name}: the container %s on %s is another workspace's (labels %s=%s, %s=%s; this "
                "workspace is %s), and the stages would %s. Set {name} to a name of its own for this "
                "workspace; or, once you know that workspace is done with, remove the container yourself (docker "
                "rm -f %s: the workspace on the host stays). %s"
                % (name, host, LABEL_PROJECT, project, LABEL_WORKSPACE, owner, ws_host, verb, name, keep))
    if purpose == "enter" and _workspace_mounted(found, workspace_host, workspace):
        return ""
    mounts = ", ".join("%s:%s" % (m.get("Source"), m.get("Destination"))
                       for m in (found.get("Mounts") or []) if m.get("Type") == "bind") or "none"
    if purpose == "recreate":
        return ("{name}: a container named %s already exists on %s without the label %s=%s this "
                "package gives its containers (made by an earlier version of it, or by someone else; its bind "
                "mounts: %s). The container stage recreates only a container it can prove is this workspace's, "
                "since recreating ends whatever runs in it. If it is yours (docker inspect %s shows %s mounted at "
                "%s), remove it when no run is in it, docker rm -f %s (the workspace on the host stays), and run "
                "the stage again; if it is not, set {name} to another name. %s"
                % (name, host, LABEL_WORKSPACE, ws_host, mounts, name, ws_host, _norm(workspace), name, keep))
    if purpose == "remove":
        return ("{name}: the container %s on %s carries no label %s=%s this package gives its containers (made by "
                "an earlier version of it, or by someone else; its bind mounts: %s), so the teardown does not "
                "remove it. If it is yours (docker inspect %s shows %s mounted at %s), remove it yourself, docker "
                "rm -f %s; if it is not, set {name} to this workspace's container. %s"
                % (name, host, LABEL_WORKSPACE, ws_host, mounts, name, ws_host, _norm(workspace), name, keep))
    return ("{name}: the container %s on %s carries no label %s=%s and does not mount this workspace "
            "(%s at %s; its bind mounts: %s), so the stages will not run their tasks in it: it is not this "
            "workspace's training environment. Set {name} to this workspace's container, or run the "
            "container stage (%s), which says what to do with this one. %s"
            % (name, host, LABEL_WORKSPACE, ws_host, ws_host, _norm(workspace), mounts, rerun.command("container", rerun.inventory_args(sources)),
               keep))
