"""Where a run's metrics go besides its log: verl's trackers (``trainer.logger``), placed in the workspace.

Standard library only. What verl@634bd935's ``verl/utils/tracking.py`` reads, per backend:

- ``tensorboard``: ``TENSORBOARD_DIR`` (default ``tensorboard_log/<project>/<experiment>`` under wherever the run
  starts). ``SummaryWriter`` opens a new event file per process, so a resumed run adds a file beside the earlier ones;
- ``swanlab``: ``SWANLAB_MODE`` (default ``cloud``: it uploads) and ``SWANLAB_LOG_DIR`` (default ``swanlog``);
- ``mlflow``: ``MLFLOW_TRACKING_URI`` (default ``sqlite:////tmp/mlruns.db``, lost with the container);
- ``wandb``: its own ``WANDB_*`` variables and a key (it needs the internet);
- ``file``: ``VERL_FILE_LOGGER_PATH``, opened with "w": one file per launch, or a resume would empty the history;
- ``console``: the log itself.

:func:`env` gives each chosen backend a place under one tracking folder of the workspace
(``<tracking>/<backend>/<project>/<experiment>``), offline where the backend has a mode for it; :func:`problems`
refuses what cannot work before anything starts; :func:`tensorboard_view` says how to see the TensorBoard events from
a laptop without opening a port to the world.

Messages name the inputs as ``{field}`` (:mod:`ascend_grpo.common.errors`): ``{loggers}``, ``{wandb_key}``,
``{user_env}`` and ``{host}``, the parameters' names; the train stage's filters render them as its settings
(``grpo_train_loggers``, ``grpo_train_wandb_api_key``, ``grpo_train_env``, ``grpo_train_tensorboard_host``).
"""

import difflib
import ipaddress
import shlex

# backend -> the Python module it imports (None: nothing beyond verl)
BACKENDS = {"console": None, "tensorboard": "tensorboard", "swanlab": "swanlab", "mlflow": "mlflow",
            "wandb": "wandb", "file": None}
ALL_INTERFACES = ("0.0.0.0", "::", "*", "")


def run_dir(tracking, backend, project, experiment):
    """The backend's folder for one run: ``<tracking>/<backend>/<project>/<experiment>``."""
    return "/".join((tracking.rstrip("/"), backend, project, experiment))


def problems(loggers, wandb_key="", user_env=None):
    """Why ``loggers`` (``grpo_train_loggers``) cannot work, as messages naming the input at fault as ``{field}``;
    [] when they can."""
    user_env = user_env or {}
    if not isinstance(loggers, (list, tuple)) or not loggers:
        return ["{loggers} is a non-empty list of verl's trackers (%s), e.g. [console, tensorboard]"
                % ", ".join(BACKENDS)]
    found = []
    for name in loggers:
        if name not in BACKENDS:
            close = difflib.get_close_matches(str(name), list(BACKENDS), n=1)
            found.append("{loggers}: %r is not one of verl's trackers here (%s)%s" % (
                name, ", ".join(BACKENDS), "; did you mean %s?" % close[0] if close else ""))
    if len(set(loggers)) != len(loggers):
        found.append("{loggers} names a tracker twice: %s" % ", ".join(loggers))
    if "wandb" in loggers and not wandb_key and str(user_env.get("WANDB_MODE", "")) not in ("offline", "disabled"):
        found.append("{loggers} has wandb, which uploads with a key: set {wandb_key} (it reaches "
                     "the run's process only), or WANDB_MODE: offline in {user_env}")
    return found


def env(loggers, tracking, project, experiment):
    """{"env": variables for the run, "folders": folders the run script makes first, "file_dir": where the file
    backend writes one JSONL per launch (or None)} for the chosen ``loggers``."""
    variables, folders, file_dir = {}, [], None
    if "tensorboard" in loggers:
        variables["TENSORBOARD_DIR"] = run_dir(tracking, "tensorboard", project, experiment)
        folders.append(variables["TENSORBOARD_DIR"])
    if "swanlab" in loggers:
        variables["SWANLAB_MODE"] = "offline"  # the files only; `swanlab sync` uploads them later if wanted
        variables["SWANLAB_LOG_DIR"] = run_dir(tracking, "swanlab", project, experiment)
        folders.append(variables["SWANLAB_LOG_DIR"])
    if "mlflow" in loggers:
        store = "%s/mlflow" % tracking.rstrip("/")
        variables["MLFLOW_TRACKING_URI"] = "sqlite:///%s/mlflow.db" % store  # an absolute path: four slashes
        folders.append(store)
    if "wandb" in loggers:
        variables["WANDB_DIR"] = run_dir(tracking, "wandb", project, experiment)
        folders.append(variables["WANDB_DIR"])
    if "file" in loggers:
        file_dir = run_dir(tracking, "file", project, experiment)
        folders.append(file_dir)
    return {"env": variables, "folders": folders, "file_dir": file_dir}


def tensorboard_bind(host, network, container_address, service="TensorBoard"):
    """The address TensorBoard (or another ``service`` without a login: vLLM's server) listens on, and why:
    (address, reason) or (None, problem).

    ``host``: ``grpo_train_tensorboard_host`` ("" to choose; ``{host}`` in a problem); ``network``: the container's network as the container
    stage recorded it ("host" when it shares the host's); ``container_address``: the container's own address.
    Never all interfaces: TensorBoard has no login, and whoever reaches it reads the run."""
    if host:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return None, "{host}: %r is not an IP address" % host
        if address.is_unspecified:
            return None, ("{host}: %s listens on every interface, and %s has no login; leave it empty (loopback, "
                          "or the container's own address) and use the ssh tunnel" % (host, service))
        return str(address), "as {host} asks"
    if network == "host":
        return "127.0.0.1", "the container shares the host's network: loopback, reached through ssh"
    if not container_address:
        return None, ("the container's own address is unknown: set {host} to an address of the "
                      "container that only this host reaches")
    return container_address, ("the container's own address on Docker's bridge: this host reaches it, other machines "
                               "do not (no port is published)")


# What the tunnel line says when the 910B host's address is not known to the inventory: for the user to fill in.
SSH_HOST_PLACEHOLDER = "<the 910B host's address>"
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def ssh_target(name, connection="ssh", host="", user=""):
    """Who a laptop's ssh reaches for the NPU host ``name`` (its inventory name): ``[user@]ansible_host`` when the
    inventory gives an address; the inventory name when Ansible itself reaches the host by that name over ssh;
    :data:`SSH_HOST_PLACEHOLDER` when Ansible runs on the host itself (connection local), whose inventory name
    (npu910b, sim910b) no laptop can resolve, or when the address is a loopback one."""
    host = str(host or "").strip()
    if host:
        try:
            loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
        except ValueError:
            loopback = host.lower() in _LOOPBACK_NAMES
        if loopback:
            return SSH_HOST_PLACEHOLDER
        return ("%s@%s" % (user, host)) if user else host
    if str(connection or "ssh").rsplit(".", 1)[-1] == "local":
        return SSH_HOST_PLACEHOLDER
    return ("%s@%s" % (user, name)) if user else str(name)


def tensorboard_view(logdir, address, port, host, container, python):
    """The lines that show the events: the command that serves them (inside the container) and the tunnel from a
    laptop. ``host``: the machine's name as the user reaches it by ssh."""
    serve = " ".join(shlex.quote(str(word)) for word in (
        "docker", "exec", "-d", container, python, "-m", "tensorboard.main", "--logdir", logdir, "--host", address,
        "--port", int(port)))
    return {"logdir": logdir, "address": address, "port": int(port), "url": "http://%s:%d" % (address, int(port)),
            "serve": serve, "ssh": "ssh -N -L %d:%s:%d %s" % (int(port), address, int(port), host),
            "open": "http://localhost:%d" % int(port)}
