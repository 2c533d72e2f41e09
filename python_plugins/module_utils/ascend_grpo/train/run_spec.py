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

Standard library only (plus :mod:`ascend_grpo.common`): building takes the composed configuration as a plain dict.
"""

import os

from ..common import rerun, workspace

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


def path(state_dir):
    return os.path.join(state_dir, FILE)


def lookup(config, dotted):
    """The value at ``dotted`` in the plain (nested dict/list) ``config``; None when a part is missing."""
    node = config
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


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
