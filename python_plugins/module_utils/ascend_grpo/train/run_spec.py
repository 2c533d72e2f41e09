"""The run's spec: what a verl run IS, written once by the train stage's check and read by everything after it.

The check (module ``verl_config_check``) composes verl's configuration with the run's overrides; :func:`build` keeps
the result as data in ``<state_dir>/run-spec.json`` (:func:`write`):

- ``overrides``: the merged overrides as a mapping, ``{dotted key: value}`` (a ``+`` kept in front of a key verl's
  configuration does not have), the values as Hydra reads them (numbers, booleans, lists, None);
- ``argv``: the override words verl is launched with, in order (the run script passes exactly these);
- ``summary``: the composed values the readers use (:data:`SUMMARY`), verl's own defaults filled in by the
  composition itself: the doctor, the status's triage, the eval stage's comparison with the reference run and the
  support bundle read them here instead of parsing override strings or the run script back.

A reader calls :func:`read`; a spec that is missing (a run launched by an older version) or of another version
raises :class:`MissingSpec`, whose message names the command that writes it (``--tags train``, with the user's
inventory: :mod:`ascend_grpo.common.rerun`).

Standard library only (plus :mod:`ascend_grpo.common`) to build, write and read: building takes the composed
configuration as a plain dict. :func:`check_run`, the check that writes it, composes verl's configuration with
Hydra and OmegaConf, in the training environment.
"""

import os

from ..common import rerun, workspace
from ..common.errors import StageFailure
from . import overrides as ov
from . import train_rules

VERSION = 1
FILE = "run-spec.json"

# The composed values the readers need (dotted keys of verl's configuration).
SUMMARY = (
    "algorithm.adv_estimator",
    "data.train_batch_size", "data.val_batch_size", "data.max_prompt_length", "data.max_response_length",
    "actor_rollout_ref.model.path",
    "actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.mode", "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.gpu_memory_utilization", "actor_rollout_ref.rollout.free_cache_engine",
    "actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.rollout.max_num_batched_tokens",
    "custom_reward_function.path", "custom_reward_function.name",
    "trainer.device", "trainer.nnodes", "trainer.n_gpus_per_node", "trainer.total_epochs",
    "trainer.total_training_steps", "trainer.save_freq", "trainer.test_freq", "trainer.val_before_train",
    "trainer.resume_mode", "trainer.project_name", "trainer.experiment_name", "trainer.logger",
    "trainer.default_local_dir", "trainer.max_actor_ckpt_to_keep",
)


class MissingSpec(Exception):
    """No usable run spec: the message says what is wrong and the command that writes it."""


class CheckFailed(StageFailure):
    """The check refused the run: the message names what to change (the module's inputs as ``{field}``: ``{verl_dir}``,
    and the disk check's ``{max_actor_ckpt_to_keep}`` and ``{checkpoint_dir}``); ``errors`` each problem ({key,
    message}), returned with it."""

    def __init__(self, message, errors=()):
        super().__init__(message, {"errors": list(errors)})
        self.errors = list(errors)


def path(state_dir):
    return os.path.join(state_dir, FILE)


def lookup(config, dotted):
    """The value at ``dotted`` in the plain (nested dict/list) ``config``; None when a part is missing."""
    return ov.value_at(config, dotted, missing=None)


def build(config, argv, overrides, run_dir="", verl_dir="", config_name="ppo_trainer"):
    """The spec of a run: ``config`` verl's configuration composed with the overrides (a plain, resolved dict),
    ``argv`` the override words, ``overrides`` the same as ``{dotted key: value}``."""
    return {"version": VERSION, "run_dir": run_dir, "verl_dir": verl_dir, "config_name": config_name,
            "argv": list(argv), "overrides": dict(overrides),
            "summary": {key: lookup(config, key) for key in SUMMARY}}


def write(state_dir, spec, check_mode=False):
    """Put ``spec`` in ``<state_dir>/run-spec.json`` (no link followed, below the workspace); returns
    ``(changed, diff)``, the diff as Ansible shows one. Nothing is written in check mode."""
    target = path(state_dir)
    before = workspace.read_json(target)
    root = os.path.dirname(os.path.abspath(state_dir))
    if check_mode:
        workspace.refuse_links(root, target)
        changed = before != spec
    else:
        changed = workspace.write_json(target, spec, root=root)
    diff = {"before": before if isinstance(before, dict) else {}, "after": spec,
            "before_header": target, "after_header": target}
    return changed, diff


def read(state_dir, inventory="", run_dir=None):
    """The spec the train stage's check wrote, or raise :class:`MissingSpec` naming ``--tags train`` (with
    ``inventory``, the user's -i words) to write it. With ``run_dir``, a spec of another run (the workspace keeps the
    last checked run's) is refused too."""
    target = path(state_dir)
    spec = workspace.read_json(target)
    if not isinstance(spec, dict):
        raise MissingSpec("%s is %s: the run's spec is written by the train stage's check (a run launched by an older "
                          "version has none); write it with %s" % (
                              target, "missing" if not os.path.exists(target) else "not a JSON object",
                              rerun.command("train", inventory)))
    if spec.get("version") != VERSION:
        raise MissingSpec("%s is version %r, this version reads %d: write it again with %s" % (
            target, spec.get("version"), VERSION, rerun.command("train", inventory)))
    if run_dir and spec.get("run_dir") and os.path.normpath(spec["run_dir"]) != os.path.normpath(run_dir):
        raise MissingSpec("%s describes another run (%s), not %s: write this run's with %s" % (
            target, spec["run_dir"], run_dir, rerun.command("train", inventory)))
    return spec


def values(spec):
    """``{dotted key: value}`` of what the run is: the composed summary, with the overrides (their keys without
    ``+``) over it. What a triage fix names as a setting's value now."""
    out = dict((spec or {}).get("summary") or {})
    for key, value in ((spec or {}).get("overrides") or {}).items():
        out[key.lstrip("+~")] = value
    return out


def check_run(p, check_mode=False):
    """The train stage's check (module ``verl_config_check``; ``p`` its parameters): verl's configuration composed
    once with the overrides, the rules verl would trip over late (:mod:`train_rules`), and the spec written.
    Returns ``(result, warnings)``; raises :class:`CheckFailed` (with ``enforce``, on any problem; always when the
    verl tree or Hydra is missing)."""
    try:
        verl_dir = workspace.verl_dir(p["state_dir"], p["verl_dir"], p["inventory"])
    except workspace.MissingRecord as err:
        raise CheckFailed("%s Or set {verl_dir} to the folder that holds verl/." % err) from err
    config_dir = os.path.join(verl_dir, "verl", "trainer", "config")
    if not os.path.isfile(os.path.join(config_dir, p["config_name"] + ".yaml")):
        raise CheckFailed("%s has no %s.yaml: run the deps stage (%s) or set {verl_dir}"
                          % (config_dir, p["config_name"], rerun.command("deps", p["inventory"])))
    try:
        from omegaconf import OmegaConf
        composed, errors = ov.check(config_dir, p["overrides"], p["config_name"])
        cfg = OmegaConf.to_container(composed, resolve=True) if composed is not None else None
        mapping = ov.as_mapping(p["overrides"]) if cfg is not None else None
    except ImportError as err:
        raise CheckFailed("hydra and omegaconf are needed in the training environment: %s" % err) from err
    if cfg is not None:
        errors = train_rules.check(cfg, train_rules.facts(cfg, p["cards"]), inventory=p["inventory"])
    errors = [{"key": e["key"], "message": e["message"]} for e in errors]
    if errors and p.get("enforce", True):
        raise CheckFailed("The run would fail; change: " + "; ".join(
            e["message"] if e["message"].startswith(e["key"]) else "%s: %s" % (e["key"], e["message"])
            for e in errors), errors)
    warnings = ["%s: %s" % (e["key"], e["message"]) for e in errors]
    if cfg is None:  # nothing composed (problems only warned): no spec to write
        return dict(changed=False, errors=errors, summary={}, verl_dir=verl_dir, spec="", diff=None), warnings
    spec = build(cfg, p["overrides"], mapping, run_dir=p.get("run_dir") or "", verl_dir=verl_dir,
                 config_name=p["config_name"])
    changed, diff, where = False, None, ""
    if p["state_dir"]:
        where = path(p["state_dir"])
        changed, diff = write(p["state_dir"], spec, check_mode=check_mode)
    return dict(changed=changed, errors=errors, summary=spec["summary"], verl_dir=verl_dir, spec=where,
                diff=diff), warnings
