"""Host checks before an NPU container is made: device nodes, driver folders, npu-smi, free disk.

Plain Python (no Ansible import). Every check returns a list of problems; each problem says what is missing and
how to fix it, naming the input to change as ``{field}`` (an option of the ``npu_preflight`` module, which names the
setting its role maps it to: ``{cards}`` is npu_container_visible_devices in the container stage), so a user can act
on it without reading the role.
"""

import os
import shutil
import stat

from ..common import runner, workspace
from . import npu_smi
from ..common.errors import StageFailure

GIB = 1024 ** 3


def device_nodes(dev_dir, cards, shared_nodes):
    """Paths of the device nodes the cards need: one davinciN per card plus the shared nodes."""
    names = ["davinci%d" % card for card in cards] + list(shared_nodes)
    return [os.path.join(dev_dir, name) for name in names]


# How the CANN runtime numbers the cards a process sees: inside a container given only some /dev/davinciN nodes it
# numbers them from 0 in the order of their host numbers, and ASCEND_RT_VISIBLE_DEVICES takes those numbers (an id
# outside [0, n) fails: "set ASCEND_RT_VISIBLE_DEVICES:[4] error, input data rang[0-2)", gpustack issue 3352;
# vllm-ascend issue 6063, PR 12959); on the host itself (no container) the host's numbers hold. Either way the ids
# must ascend ("it must be configured in ascending order", gpustack issue 2527). docs/container.md.
RUNTIME_NUMBERING_SOURCES = "gpustack #3352, vllm-ascend #6063 and PR #12959"


def runtime_ids(cards, in_container):
    """The ids ``ASCEND_RT_VISIBLE_DEVICES`` must name for ``cards`` (the host's card numbers): 0..n-1 inside a
    container that maps exactly those cards, the host's own numbers outside one."""
    cards = [int(card) for card in cards]
    if len(set(cards)) != len(cards):
        raise ValueError("card numbers repeat: %s" % cards)
    return list(range(len(cards))) if in_container else sorted(cards)


def numbering_problems(visible, nodes, in_container):
    """What is wrong with ``visible`` (ASCEND_RT_VISIBLE_DEVICES's text, or None when unset) in an environment whose
    /dev holds the davinciN ``nodes`` (their host numbers). [] when every id names a card the runtime has there."""
    if visible is None or str(visible).strip() == "":
        return []
    nodes = sorted(int(node) for node in nodes)
    ids = [part.strip() for part in str(visible).split(",")]
    bad = [part for part in ids if not part.isdigit()]
    if bad:
        return ["ASCEND_RT_VISIBLE_DEVICES=%s: %s is not a card id" % (visible, ", ".join(bad))]
    numbers = [int(part) for part in ids]
    if numbers != sorted(set(numbers)):
        return ["ASCEND_RT_VISIBLE_DEVICES=%s: the CANN runtime takes the ids in ascending order, each once "
                "(gpustack #2527)" % visible]
    allowed = list(range(len(nodes))) if in_container else nodes
    outside = [part for part in ids if int(part) not in allowed]
    if not outside:
        return []
    if not nodes:
        return ["ASCEND_RT_VISIBLE_DEVICES=%s names %s, but no /dev/davinciN is here: the environment was given no "
                "card" % (visible, ", ".join(outside))]
    if in_container:
        return ["ASCEND_RT_VISIBLE_DEVICES=%s names %s, but this container has %d card(s) (%s), which the CANN "
                "runtime numbers 0 to %d whatever their host numbers (%s)" % (
                    visible, ", ".join(outside), len(nodes),
                    ", ".join("/dev/davinci%d" % n for n in nodes) or "no /dev/davinciN", len(nodes) - 1,
                    RUNTIME_NUMBERING_SOURCES)]
    return ["ASCEND_RT_VISIBLE_DEVICES=%s names %s, but this host has only the cards %s (/dev/davinciN)" % (
        visible, ", ".join(outside), ", ".join(str(n) for n in nodes) or "none")]


def check_device_nodes(dev_dir, cards, shared_nodes):
    problems = []
    for path in device_nodes(dev_dir, cards, shared_nodes):
        name = os.path.basename(path)
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            if name.startswith("davinci") and name[len("davinci"):].isdigit():
                fix = ("card %s is not on this host (ls %s/davinci*): remove it from {cards}, "
                       "or install/reload the NPU driver" % (name[len("davinci"):], dev_dir))
            else:
                fix = "the NPU driver is not loaded: install the Ascend driver and reboot, or check {dev_dir}"
            problems.append("device node %s is missing; %s" % (path, fix))
            continue
        except OSError as err:
            problems.append("device node %s cannot be read (%s)" % (path, err.strerror))
            continue
        if not stat.S_ISCHR(mode):
            problems.append("%s exists but is not a character device; the driver did not create it: reinstall the "
                            "Ascend driver" % path)
    return problems


def check_dirs(dirs):
    """``dirs``: list of (path, the input it comes from as ``{field}``, what it is)."""
    problems = []
    for path, variable, what in dirs:
        if not os.path.isdir(path):
            problems.append("%s %s does not exist: install the Ascend driver (it creates it) or set %s to where it "
                            "is" % (what, path, variable))
    return problems


nearest_existing = workspace.nearest_existing


def tree_bytes(path):
    """Bytes the files under ``path`` take (not following links); 0 when it does not exist."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def check_disk(path, min_free_gib, why=""):
    """Free space where ``path`` is (or will be), against ``min_free_gib``: the GiB the run writes there in all,
    of which what the workspace already holds (a rerun: its venvs, weights, checkpoints) is written already. The
    workspace is measured only when the free space alone falls short. ``why``: how the figure was reached, for the
    message. Returns (free GiB, problems)."""
    where = nearest_existing(path)
    free = shutil.disk_usage(where).free / GIB
    problems = []
    if free < min_free_gib:
        held = tree_bytes(path) / GIB if os.path.isdir(path) else 0.0
        if free + held < min_free_gib:
            problems.append(
                "only %.1f GiB free at %s for the workspace %s%s, %.1f GiB needed ({min_free_gib}%s): "
                "free space, point {workspace} at a larger disk, keep fewer checkpoints "
                "({max_ckpt_to_keep}), or set {min_free_gib} to what your run needs"
                % (free, where, path, " (which already holds %.1f GiB of it)" % held if held >= 0.05 else "",
                   min_free_gib, "; " + why if why else ""))
    return round(free, 1), problems


def check_image_room(docker_root, image_gib, workspace, workspace_gib):
    """Room in Docker's data root (``docker info``'s DockerRootDir) for an image about to be pulled; when the
    workspace is on the same filesystem, for both. Returns problems."""
    if not docker_root:
        return []
    where = nearest_existing(docker_root)
    free = shutil.disk_usage(where).free / GIB
    shared = os.stat(where).st_dev == os.stat(nearest_existing(workspace)).st_dev
    need = image_gib + (workspace_gib if shared else 0)
    if free >= need:
        return []
    if shared and os.path.isdir(workspace):  # what the workspace holds is written already
        workspace_gib = max(0.0, workspace_gib - tree_bytes(workspace) / GIB)
        need = image_gib + workspace_gib
        if free >= need:
            return []
    return ["only %.1f GiB free in Docker's data root %s for the image ({image_gib}: %s GiB)%s: free "
            "space there (docker system prune removes unused images), move Docker's data-root to a larger disk, or "
            "load the image from a file (docker load -i cann.tar) where there is room"
            % (free, docker_root, image_gib, ", which shares its disk with the workspace (%.1f GiB more)"
               % workspace_gib if shared else "")]


def image_as_found(images, image, step="pull"):
    """What a look at the host's images (docker_image_info's ``images``) says of ``image`` after the ``step`` that
    was to bring it there (``pull``, or ``load`` from a file) stopped short, its time run out: one sentence."""
    if images:
        found = images[0] if isinstance(images[0], dict) else {}
        return "As found after it, image %s is on the host (id %s): a rerun uses it" % (
            image, found.get("Id") or "unknown")
    kept = ("; the layers Docker pulled in full are kept, so the next pull goes on from them" if step == "pull"
            else "")
    return "As found after it, image %s is not on the host%s" % (image, kept)


def run_npu_smi(command, cards, timeout=60, run=runner.run_command):
    """Run ``<command> info``, parse it and check the cards. Returns (parsed or None, problems).

    ``run``: :func:`runner.run_command` or one of its shape; it takes ``timeout`` (a hung driver never answers),
    which ``module.run_command`` does not."""
    try:
        rc, out, err = run([command, "info"], timeout=timeout)
    except FileNotFoundError:
        return None, ["%s not found: install the Ascend driver's npu-smi or set {npu_smi} to its path "
                      "(usually /usr/local/sbin/npu-smi)" % command]
    except PermissionError:
        return None, ["%s is not executable: chmod +x it or set {npu_smi}" % command]
    except runner.TimeoutExpired:
        return None, ["'%s info' did not answer in %d s: the driver is hung; check dmesg and reset the card" %
                      (command, timeout)]
    if rc != 0:
        return None, ["'%s info' failed with exit code %d: %s. Check the driver (dmesg, "
                      "/var/log/npu/) and that this user may read the device nodes" %
                      (command, rc, (err or out).strip()[:400])]
    try:
        parsed = npu_smi.parse(out)
    except npu_smi.NpuSmiParseError as err:
        return None, ["cannot read the table that '%s info' printed (%s); please report it with the output" %
                      (command, err)]
    return parsed, npu_smi.check_cards(parsed, cards)


def card_summary(parsed, cards):
    """The requested cards' health and load, for the fact and the log."""
    by_id = {card["npu"]: card for card in (parsed or {}).get("cards", [])}
    summary = []
    for npu in cards:
        card = by_id.get(npu)
        if card:
            summary.append({key: card.get(key) for key in ("npu", "name", "health", "aicore_pct", "hbm_mb_used",
                                                             "hbm_mb_total", "temp_c", "power_w")})
    return summary


class HostNotReady(StageFailure):
    """The host fails the checks and the caller asked to fail: ``msg`` lists the problems; ``result`` is the rest."""


def preflight(p, which):
    """One call of the ``npu_preflight`` module (``p``: its arguments): the result for ``exit_json``, or
    HostNotReady when there are problems and ``p["fail_on_problems"]``. ``which``: ``module.get_bin_path`` or one
    of its shape, to find a bare npu-smi name on the PATH or in /usr/local/sbin, /usr/local/bin. The problems name
    the module's options as ``{field}`` (the module names its role's settings)."""
    if not p["cards"]:
        msg = "no card requested: set {cards}, e.g. [0]"
        if p["fail_on_problems"]:
            raise HostNotReady(msg, {"problems": []})
        return dict(changed=False, problems=[msg], cards=[], docker_devices=[])

    problems = check_device_nodes(p["dev_dir"], p["cards"], p["shared_nodes"])
    problems += check_dirs([
        (p["driver_dir"], "{driver_dir}", "the driver folder"),
        (p["addons_dir"], "{addons_dir}", "the add-ons folder"),
    ])
    npu_smi_cmd = p["npu_smi"]
    if "/" not in npu_smi_cmd:
        npu_smi_cmd = which(npu_smi_cmd, opt_dirs=["/usr/local/sbin", "/usr/local/bin"]) or npu_smi_cmd
    parsed, smi_problems = run_npu_smi(npu_smi_cmd, p["cards"])
    problems += smi_problems
    free, disk_problems = check_disk(p["workspace"], p["min_free_gib"], p["min_free_why"])
    problems += disk_problems
    if not disk_problems:  # a workspace short of room already says so; the image's room only counts beside it
        problems += check_image_room(p["docker_root"], p["image_gib"], p["workspace"], p["min_free_gib"])

    nodes = device_nodes(p["dev_dir"], p["cards"], p["shared_nodes"])
    result = dict(changed=False, npu_smi=parsed, npu_smi_path=npu_smi_cmd,
                  docker_devices=["%s:/dev/%s" % (node, node.rsplit("/", 1)[-1]) for node in nodes],
                  cards=card_summary(parsed, p["cards"]), disk_free_gib=free, problems=problems)
    if problems and p["fail_on_problems"]:
        raise HostNotReady("NPU host not ready:\n- " + "\n- ".join(problems), result)
    return result
