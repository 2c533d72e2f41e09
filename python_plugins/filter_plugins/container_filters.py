"""The container stage's filters: how the controller reaches the container, why it would be remade, npu-smi, the image
after a pull that ran out of time.

Filter: how the controller reaches the training container through the NPU host's own login (SSH with its port,
key and jump host; sudo with become), over the plain-Python engine.

Filter: why docker_container changed a container, from the diff it returns.

Filters: ``npu-smi info`` text -> parsed table, for tasks that read npu-smi from inside a container; the cards'
numbers as the CANN runtime of a training environment counts them.

Filter: what a look at the host's images says of the image after a pull (or a load) that ran out of time.

Filters: whether --tags teardown may remove the image, and what it did on a host (what it freed, the command that
brings it back), over the plain-Python engine ascend_grpo.container.teardown_plan.
"""

from ansible.errors import AnsibleFilterError

from ascend_grpo.common import errors
from ascend_grpo.container import container_access as _engine
from ascend_grpo.container import host_checks, npu_smi, teardown_plan

# This package's connection plugin (python_plugins/connection_plugins/grpo_container.py): docker through the NPU
# host's own login. Named here, not in the engine: a setting has the same name.
THROUGH_HOST = "grpo_container"

# The container stage's setting each engine input stands for, named in the engines' messages ({field}).
ACCESS_NAMES = {"docker_args": "npu_container_docker_cli_args"}
OWNER_NAMES = {"name": "npu_container_name"}
CARD_NAMES = {"cards": "npu_container_visible_devices"}
TEARDOWN_NAMES = {"remove_workspace": "npu_container_teardown_workspace",
                  "remove_image": "npu_container_teardown_image"}


def _named(value, names):
    """``value`` (engine text, or lists and dicts of it) with its ``{field}``s named by the stage's settings."""
    return errors.name_fields(value, names)


def container_access(spec):
    """``{{ {'host': inventory_hostname, 'connection': ..., 'port': ..., ...} | container_access }}`` ->
    {connection, docker_extra_args, ssh, docker, problems}: the container's connection plugin and its arguments."""
    reached = _engine.access(spec, THROUGH_HOST)
    reached["problems"] = _named(reached["problems"], ACCESS_NAMES)
    return reached


def container_labels(workspace_host):
    """``{{ npu_container_workspace_host | container_labels }}`` -> the labels that mark the container as this
    package's, for this workspace."""
    return _engine.container_labels(workspace_host)


def container_owner_problem(found, name, host, workspace_host, workspace, purpose="recreate", sources=()):
    """``{{ info.container | container_owner_problem(name, host, ws_host, ws, 'recreate'|'enter') }}`` -> why the
    stages must not recreate or enter that container ("" when they may). ``sources``: ansible_inventory_sources,
    for the command the message prints."""
    return _named(_engine.owner_problem(found, name, host, workspace_host, workspace, purpose, sources), OWNER_NAMES)


# Keys docker_container puts in its diff that are state, not configuration.
_STATE_KEYS = ("exists", "running", "paused", "restarted")
# Settings whose entries are KEY=VALUE: only the names are told (values may be tokens).
_NAMED_ENTRIES = ("env",)


def _entries(key, values):
    if key in _NAMED_ENTRIES:
        return {str(v).split("=", 1)[0]: str(v) for v in values}
    return {str(v): str(v) for v in values}


def _list_reason(key, before, after):
    old, new = _entries(key, before), _entries(key, after)
    parts = []
    gone = sorted(set(old) - set(new))
    added = sorted(set(new) - set(old))
    changed = sorted(k for k in set(old) & set(new) if old[k] != new[k])
    if gone:
        parts.append("%s left over on the container, removed" % ", ".join(gone))
    if added:
        parts.append("%s added" % ", ".join(added))
    if changed:
        parts.append("%s changed" % ", ".join(changed))
    return "%s: %s" % (key, "; ".join(parts) if parts else "order changed")


def container_change_reason(diff):
    """``{{ result.diff | container_change_reason }}`` -> "shm_size: 8589934592 -> 4294967296; ..." when the
    container was recreated for changed settings, "" when it was only created or started (or nothing changed).
    A list setting names its entries that went or came (environment variables by name only)."""
    before = (diff or {}).get("before") or {}
    after = (diff or {}).get("after") or {}
    if not before.get("exists", True) or not after.get("exists", True):
        return ""  # created from nothing, or removed
    keys = sorted(k for k in set(before) | set(after) if k not in _STATE_KEYS and before.get(k) != after.get(k))
    reasons = []
    for key in keys:
        old, new = before.get(key), after.get(key)
        if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
            reasons.append(_list_reason(key, old, new))
        elif key in _NAMED_ENTRIES:
            reasons.append("%s changed" % key)
        else:
            reasons.append("%s: %s -> %s" % (key, old, new))
    return "; ".join(reasons)


def npu_smi_info(text):
    """``{{ result.stdout | npu_smi_info }}`` -> {version, cards, processes, idle_npus}."""
    try:
        return npu_smi.parse(text)
    except npu_smi.NpuSmiParseError as err:
        raise AnsibleFilterError("npu_smi_info: %s" % err) from err


def npu_smi_problems(text, cards):
    """``{{ stdout | npu_smi_problems([0]) }}`` -> problems with those cards ([] when all are present and OK)."""
    return _named(npu_smi.check_cards(npu_smi_info(text), cards), CARD_NAMES)


def npu_runtime_ids(cards, mode="docker"):
    """``{{ npu_container_visible_devices | npu_runtime_ids(npu_container_mode) }}`` -> the ids
    ASCEND_RT_VISIBLE_DEVICES takes for those host cards: 0..n-1 in a container (mode docker), the host's numbers
    on the host itself (mode none)."""
    try:
        return host_checks.runtime_ids(cards, mode == "docker")
    except (TypeError, ValueError) as err:
        raise AnsibleFilterError("npu_runtime_ids: %s" % err) from err


def image_as_found(images, image, step="pull"):
    """``{{ _seen.images | image_as_found(npu_container_image) }}``: one sentence, whether the image is on the host
    after the ``step`` (``pull`` or ``load``) that was to bring it there ran out of time."""
    return host_checks.image_as_found(images or [], image, step)


def teardown_image_problem(image, users, container):
    """``{{ npu_container_image | teardown_image_problem(names of the containers made from it, npu_container_name) }}``
    -> why the teardown cannot remove the image ("" when it can)."""
    return _named(teardown_plan.image_problem(image, users, container), TEARDOWN_NAMES)


def teardown_report(seen, host, inventory=""):
    """``{{ seen | teardown_report(inventory_hostname, ansible_inventory_sources | grpo_inventory_args) }}`` -> what
    the teardown did on the host, one line each, and the command that brings it back."""
    return _named(teardown_plan.report(host, seen, inventory), TEARDOWN_NAMES)


class FilterModule:
    """The container stage's filters"""

    def filters(self):
        return {
            "container_access": container_access,
            "container_labels": container_labels,
            "container_owner_problem": container_owner_problem,
            "container_change_reason": container_change_reason,
            "npu_smi_info": npu_smi_info,
            "npu_smi_problems": npu_smi_problems,
            "npu_runtime_ids": npu_runtime_ids,
            "image_as_found": image_as_found,
            "teardown_image_problem": teardown_image_problem,
            "teardown_report": teardown_report,
        }
