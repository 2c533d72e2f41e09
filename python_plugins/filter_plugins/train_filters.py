"""The train stage's filters: overrides, the environment, the status, tracking and the disk a run writes.

Filters for the train stage: its override and environment layers, merged by the plain-Python override engine, and
whether to launch (run_plan: never a run at or past its total).

Filters: the disk a run writes, estimated from the model's size (the plain-Python engine ascend_grpo.train.run_size),
for the container stage's check before anything changes.
"""

from ascend_grpo.common import errors, rerun
from ascend_grpo.train import doctor, lease, overrides, run_plan, status_view, tracking
from ascend_grpo.train import run_size

# The train stage's setting for each input the engines below name as {field} (common.errors): the filters are this
# role's layer, so the words the user reads are chosen here, one table per engine.
TRACKING_SETTINGS = {"loggers": "grpo_train_loggers", "wandb_key": "grpo_train_wandb_api_key",
                     "user_env": "grpo_train_env", "host": "grpo_train_tensorboard_host"}
# what a user's override of a key the run script sets names instead (overrides.OWNED), and where it came from
OWNED_SETTINGS = {"overrides": "grpo_train_overrides", "profiles": "grpo_train_profiles",
                  "dashboard": "ray_cluster_dashboard", "dashboard_port": "ray_cluster_dashboard_port",
                  "cluster_head": "grpo_cluster_head", "interface": "ray_cluster_interface",
                  "head_address": "ray_cluster_head_address", "cluster_settings": "ray_cluster_*",
                  "checkpoint_dir": "grpo_train_checkpoint_dir", "loggers": "grpo_train_loggers",
                  "project": "grpo_train_project", "experiment": "grpo_train_experiment",
                  "trust_remote_code": "grpo_trust_remote_code", "visible_devices": "npu_container_visible_devices"}
# what would raise a run's total, and the switch that launches a finished run again (run_plan.launch_plan)
LAUNCH_SETTINGS = {"overrides": "grpo_train_overrides", "relaunch": "grpo_train_relaunch"}
# the instance's lease (train.lease): its settings, and the user's that would set what it sets
LEASE_SETTINGS = {"lease_end": "grpo_train_lease_end", "lease_margin": "grpo_train_lease_margin",
                  "env": "grpo_train_env", "overrides": "grpo_train_overrides"}


def _named(value, names):
    """``value`` with the engine's {field}s of ``names`` named as the train stage's settings."""
    return errors.name_fields(value, names)


def train_overrides(layers):
    """``{{ [reference, profile, paths, user] | train_overrides }}``: Hydra ``key=value`` strings, one per value."""
    return overrides.render_overrides(*layers)


def train_override_map(layers):
    """``{{ [reference, profile, paths, user] | train_override_map }}``: the same layers merged as data, ``{dotted
    key: value}`` (overrides.override_map), the mapping the words of :func:`train_overrides` are written from."""
    return overrides.override_map(*layers)


def train_env(layers):
    """``{{ [reference, profile, cards, user] | train_env }}``: one mapping of strings; a null value removes a key."""
    merged = overrides.deep_merge(*layers)
    nested = [key for key, value in merged.items() if isinstance(value, (dict, list))]
    if nested:
        raise ValueError("environment variables are strings, not mappings or lists: %s" % ", ".join(nested))
    return {key: ("" if value is None else str(value).lower() if isinstance(value, bool) else str(value))
            for key, value in merged.items()}


def train_tracking(loggers, tracking_dir, project, experiment):
    """``{{ grpo_train_loggers | train_tracking(dir, project, experiment) }}``: the trackers' environment, the folders
    the run script makes and the file tracker's folder (tracking.env)."""
    return tracking.env(loggers, tracking_dir, project, experiment)


def train_logger_problems(loggers, wandb_key, user_env, user_overrides):
    """What stops ``grpo_train_loggers`` from working, and a trainer.logger in the user's overrides (which would
    bypass the trackers' placement), as messages naming the settings."""
    found = _named(tracking.problems(loggers, wandb_key, user_env if isinstance(user_env, dict) else {}),
                   TRACKING_SETTINGS)
    trainer = (user_overrides or {}).get("trainer") if isinstance(user_overrides, dict) else None
    if isinstance(trainer, dict) and ("logger" in trainer or "+logger" in trainer):
        found.append("grpo_train_overrides sets trainer.logger: set grpo_train_loggers instead (it also places each "
                     "tracker's files in the workspace)")
    return found


def train_owned_overrides(user_overrides):
    """``{{ grpo_train_overrides | train_owned_overrides }}``: the user's overrides of what the run script sets itself
    (Ray's dashboard, the checkpoint folder, the trackers...), each naming the setting to use (overrides.OWNED)."""
    return _named(overrides.owned_problems(user_overrides), OWNED_SETTINGS)


def train_profile_owned(profiles, builtin_dir):
    """``{{ grpo_train_profiles | grpo_profiles(...) | train_profile_owned(role_path ~ '/files/profiles') }}``: the
    same refusal for a run profile file of the user's own (overrides.owned_in_profiles)."""
    return _named(overrides.owned_in_profiles(profiles, builtin_dir), OWNED_SETTINGS)


def train_wait_minutes(override_map, wait_minutes, validation_minutes):
    """``{{ grpo_train_override_map | train_wait_minutes(wait, validation) }}``: the first step's wait in minutes,
    with the validation before training's allowance when the run validates first (overrides.first_step_wait_minutes,
    from the merged overrides as data)."""
    return overrides.first_step_wait_minutes(_plain(override_map), wait_minutes, validation_minutes)


def tensorboard_bind(asked, network, container_address):
    """``{{ grpo_train_tensorboard_host | tensorboard_bind(network, address) }}``: {"address", "reason"} or
    {"problem"} (tracking.tensorboard_bind), naming grpo_train_tensorboard_host."""
    address, why = tracking.tensorboard_bind(asked, network, container_address)
    why = _named(why, TRACKING_SETTINGS)
    return {"address": address, "reason": why} if address else {"problem": why}


def tensorboard_view(logdir, address, port, host, container, python, inventory=""):
    """The commands that serve a run's TensorBoard events and reach them from a laptop (tracking.tensorboard_view),
    and ``rerun``, the --tags tensorboard line with ``inventory`` (grpo_common_inventory_args)."""
    note = (" (fill in the address your laptop reaches the NPU host at: Ansible runs on the host itself, so the "
            "inventory has none; set ansible_host there and this line names it)"
            if host == tracking.SSH_HOST_PLACEHOLDER else "")
    return dict(tracking.tensorboard_view(logdir, address, port, host, container, python),
                rerun=rerun.command("tensorboard", inventory), ssh_note=note)


def tensorboard_ssh_target(name, connection="ssh", host="", user=""):
    """``{{ grpo_npu_host | tensorboard_ssh_target(connection, ansible_host, ansible_user) }}``: the NPU host as a
    laptop's ssh reaches it, or a placeholder to fill in (tracking.ssh_target)."""
    return tracking.ssh_target(name, connection, host, user)


def _cards(cards):
    return "; ".join("%s: HBM %s/%s MB, AICore %s%%" % (
        c.get("npu"), c.get("hbm_mb_used", c.get("memory_mb_used", "?")),
        c.get("hbm_mb_total", c.get("memory_mb_total", "?")),
        "%g" % c["aicore_pct"] if c.get("aicore_pct") is not None else "?") for c in cards or [])


def cluster_node_view(view, ip):
    """``{{ ray_cluster_view | cluster_node_view(ip) }}``: one node in Ray's view, "10.0.0.12 alive, NPU 8"."""
    for node in (view or {}).get("nodes") or []:
        if node.get("ip") == ip and node.get("alive"):
            wanted = {k: v for k, v in (node.get("resources") or {}).items()
                      if k in ("NPU", "GPU", "CPU", "cpu")}
            return "%s alive, %s" % (ip, ", ".join("%s %g" % kv for kv in sorted(wanted.items())) or "no resources")
    if (view or {}).get("error"):
        return "%s: cluster not answering" % ip
    return "%s not in Ray's view" % ip


def train_status_table(reports):
    """``{{ reports | train_status_table }}``: the status view's table for people, one row per training run.

    Each report is what grpo_train_status returned, plus ``host`` and the host's ``cards`` (npu-smi's parse).
    """
    rows = []
    for report in reports:
        row = dict(report.get("summary") or {}, host=report.get("host"), state=report.get("state"))
        if report.get("error"):
            row["error"] = report["error"]
        if report.get("triage"):
            row["why"] = report["triage"]["cause"]
            row["fix"] = "%s (%s)" % (report["triage"]["fix"], report["triage"]["setting"]) \
                if report["triage"].get("setting") else report["triage"]["fix"]
        if report.get("cards"):
            row["npu"] = _cards(report["cards"])
        if report.get("ray"):
            row["ray"] = report["ray"]
        row["tensorboard"] = _tensorboard_line(report)
        row["auto_resume"] = (report.get("auto_resume") or {}).get("line", "")
        if (report.get("lease") or {}).get("line"):
            row["lease"] = report["lease"]
        rows.append(row)
    return status_view.render_table(rows)


def _tensorboard_line(report):
    """ "2 event files in DIR; serve them with --tags tensorboard (ADDRESS:PORT), then from a laptop: ssh ..., open
    URL", or why TensorBoard has no address here; "" without TensorBoard."""
    board, view = report.get("tensorboard") or {}, report.get("tensorboard_view") or {}
    if not board:
        return ""
    count = board.get("event_files", 0)
    where = "%d event file%s in %s" % (count, "" if count == 1 else "s", board.get("dir"))
    if not view:
        problem = (report.get("tensorboard_bind") or {}).get("problem")
        return "%s; %s" % (where, problem) if problem else where
    return ("%s; serve them: %s (listens on %s:%d), then from a laptop: %s and open %s"
            % (where, view.get("rerun") or rerun.command("tensorboard"), view["address"], view["port"], view["ssh"],
               view["open"]))


def train_launch_plan(before, override_map, script_sha1, relaunch=False):
    """``{{ grpo_train_before | train_launch_plan(grpo_train_override_map, sha1, grpo_train_relaunch) }}``: whether
    the stage launches (run_plan.launch_plan: not while one goes, not a finished run with the same script, and never a
    run whose newest whole checkpoint is at or past its total), with the message that says why not. The overrides
    are the merged mapping (train_override_map), never the words."""
    plan = run_plan.launch_plan(_plain(before), _plain(override_map or {}), str(script_sha1), bool(relaunch))
    return dict(plan, message=_named(plan["message"], LAUNCH_SETTINGS))


def train_lease(setting, margin, last=None, now=None):
    """``{{ grpo_train_lease_end | train_lease(grpo_train_lease_margin, last_launch.lease) }}``: the lease this pass
    uses (lease.resolve: a duration keeps the last launch's end while it is the same and not passed), {} without."""
    try:
        return lease.resolve(setting, int(margin),
                             _plain(last or {}), now)
    except lease.LeaseError as err:
        raise ValueError(_named(str(err), LEASE_SETTINGS))


def train_lease_layers(resolved, cluster=False):
    """``{{ grpo_train_lease | train_lease_layers(grpo_common_cluster_enabled) }}``: ``{env, overrides}``, the layers
    the lease adds to the run's (lease.layers); the end stays a string, as Ray wants an environment variable."""
    return lease.layers(_plain(resolved or {}), bool(cluster))


def train_lease_problems(resolved, user_env, user_overrides, override_map, now=None):
    """``{{ grpo_train_lease | train_lease_problems(grpo_train_env, grpo_train_overrides, grpo_train_override_map) }}``:
    why the run cannot take the lease (lease.problems), each naming the settings."""
    user_map = overrides.override_map(_plain(user_overrides or {})) if user_overrides else {}
    return [_named(problem, LEASE_SETTINGS) for problem in
            lease.problems(_plain(resolved or {}), _plain(user_env or {}), user_map, _plain(override_map or {}), now)]


def train_lease_doctor(resolved, before=None, total=None, now=None):
    """``{{ grpo_train_lease | train_lease_doctor(status, total) }}``: the doctor's lines for the lease (a warn row when
    it ends before the run can finish, a pass row otherwise; none without a lease): lease.doctor_row_of."""
    row = lease.doctor_row_of(_plain(resolved or {}), _plain(before or {}), total, now)
    if row is None:
        return []
    return doctor.lines([dict(row, fix=_named(row["fix"], LEASE_SETTINGS))])


def _plain(value):
    """Ansible's wrapped values as plain Python ones."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return str(value)


def run_disk_gib(params_b, max_to_keep):
    """``{{ npu_container_model_params_b | run_disk_gib(grpo_max_actor_ckpt_to_keep) }}``: GiB the run writes in
    the workspace (checkpoints kept, the merged model, the venvs, the weights, the data)."""
    return run_size.workspace_gib(params_b, int(max_to_keep))


def run_disk_why(params_b, max_to_keep):
    """The same estimate, part by part, in words (for the message when there is too little room)."""
    checkpoints = int(max_to_keep) if int(max_to_keep) > 0 else run_size.REFERENCE_SAVES
    return "by default the run's estimate for a model of %s B parameters with %s: %s" % (
        params_b, "grpo_max_actor_ckpt_to_keep %d" % int(max_to_keep) if int(max_to_keep) > 0
        else "every save kept (grpo_max_actor_ckpt_to_keep 0; the reference run's %d)" % checkpoints,
        run_size.describe(run_size.estimate(int(float(params_b) * 1e9), checkpoints)))


class FilterModule:
    """The train stage's filters"""

    def filters(self):
        return {
            "train_overrides": train_overrides,
            "train_override_map": train_override_map,
            "train_env": train_env,
            "train_status_table": train_status_table,
            "cluster_node_view": cluster_node_view,
            "train_tracking": train_tracking,
            "train_logger_problems": train_logger_problems,
            "tensorboard_bind": tensorboard_bind,
            "tensorboard_view": tensorboard_view,
            "train_launch_plan": train_launch_plan,
            "train_wait_minutes": train_wait_minutes,
            "tensorboard_ssh_target": tensorboard_ssh_target,
            "train_owned_overrides": train_owned_overrides,
            "train_profile_owned": train_profile_owned,
            "run_disk_gib": run_disk_gib,
            "run_disk_why": run_disk_why,
            "train_lease": train_lease,
            "train_lease_layers": train_lease_layers,
            "train_lease_problems": train_lease_problems,
            "train_lease_doctor": train_lease_doctor,
        }
