# -*- coding: utf-8 -*-
"""The eval stage's checkpoints, in plain Python: which checkpoint to evaluate, whether its merge is current, and
which launch of the run wrote it.

Nothing here runs the merger; the role runs it and this module reads what it wrote. What OpenCompass's result
files say, and the report, are :mod:`result_report`'s.
"""

import datetime
import glob
import hashlib
import json
import os
import re
import tempfile

from ..common import rerun, workspace
from ..common.errors import StageFailure

MERGE_MANIFEST = ".grpo-merge.json"
LATEST = "latest_checkpointed_iteration.txt"
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


class EvalError(StageFailure):
    """A refusal whose message names the input to change as ``{field}`` (the calling module's option, which the
    module names by its role's setting); ``result``: what was found before it (may be empty)."""


def _step_of(name):
    match = _STEP_DIR.match(name)
    return int(match.group(1)) if match else None


_SHARD = re.compile(r"^model_world_size_(\d+)_rank_(\d+)\.pt$")


def _shards_whole(actor_dir):
    """Every rank's model shard is there: model_world_size_W_rank_0 .. W-1 (what the merger reads)."""
    try:
        names = os.listdir(actor_dir)
    except OSError:
        return False
    ranks = {}
    for name in names:
        match = _SHARD.match(name)
        if match:
            ranks.setdefault(int(match.group(1)), set()).add(int(match.group(2)))
    return any(found == set(range(world)) for world, found in ranks.items())


def checkpoint_steps(ckpt_dir):
    """The step folders of a run's checkpoint folder, split into whole saves and cut ones, by the order verl's
    trainer saves in (RayPPOTrainer._save_checkpoint at 634bd935): every rank's actor (and critic) shards, then the
    dataloader's ``data.pt`` in the step folder, then ``latest_checkpointed_iteration.txt`` ("for atomic usage").
    A step is whole when its actor shards of every rank and its ``data.pt`` are there and it is not beyond the step
    the record names; anything else was cut during its save (or is being saved now): verl's resume skips it (it
    loads the recorded step), and nothing here merges it.

    Returns ``{"saved": [...], "incomplete": [...], "latest": N or None}``, steps ascending."""
    latest = read_int(os.path.join(ckpt_dir, LATEST))
    saved, incomplete = [], []
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        names = []
    for name in names:
        step = _step_of(name)
        if step is None:
            continue
        folder = os.path.join(ckpt_dir, name)
        whole = (_shards_whole(os.path.join(folder, "actor")) and os.path.isfile(os.path.join(folder, "data.pt"))
                 and (latest is None or step <= latest))
        (saved if whole else incomplete).append(step)
    return {"saved": sorted(saved), "incomplete": sorted(incomplete), "latest": latest}


def saved_steps(ckpt_dir):
    """Steps whose save finished (:func:`checkpoint_steps`), ascending."""
    return checkpoint_steps(ckpt_dir)["saved"]


def read_int(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def pick(ckpt_dir, step=0, inventory=""):
    """The checkpoint to evaluate: ``step`` when given (>0), else the newest recorded by verl. ``inventory``: the -i
    words the command to train first carries (:mod:`rerun`). A refusal names the folder as ``{checkpoint_dir}`` and
    the step as ``{step}`` (the grpo_checkpoint modules' options; the eval stage's grpo_eval_checkpoint_dir and
    grpo_eval_step).

    Returns step, actor_dir, saved (all saved steps) and latest (what verl's record names)."""
    if not os.path.isdir(ckpt_dir):
        raise EvalError("{checkpoint_dir}: %s does not exist. Train first (%s), or point "
                        "{checkpoint_dir} at a run's checkpoint folder."
                        % (ckpt_dir, rerun.command("train", inventory)))
    steps = checkpoint_steps(ckpt_dir)
    saved, latest = steps["saved"], steps["latest"]
    if not saved:
        raise EvalError("{checkpoint_dir}: %s holds no saved step (no global_step_N whose save finished: "
                        "every rank's actor shards and data.pt). Let the run reach trainer.save_freq or its last "
                        "step first." % ckpt_dir)
    if step:
        if step in steps["incomplete"]:
            raise EvalError("{step}: step %d in %s was cut during its save (a shard or data.pt is missing, "
                            "or verl's record names step %s): it is not merged; saved steps: %s. Set {step} "
                            "to one of them (or 0 for the newest)." % (step, ckpt_dir, latest,
                                                                       ", ".join(map(str, saved))))
        if step not in saved:
            raise EvalError("{step}: step %d was not saved in %s; saved steps: %s. Set {step} to "
                            "one of them (or 0 for the newest)." % (step, ckpt_dir, ", ".join(map(str, saved))))
        chosen = step
    elif latest in saved:
        chosen = latest
    else:
        # verl writes the record after the folder; a record naming a missing step means a cut save
        chosen = saved[-1]
    return {"step": chosen, "actor_dir": os.path.join(ckpt_dir, "global_step_%d" % chosen, "actor"),
            "saved": saved, "incomplete": steps["incomplete"], "latest": latest}


def _files(root, exclude=()):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel in exclude or not os.path.isfile(path):
                continue
            out.append(rel)
    return out


def fingerprint(root, files=None, exclude=()):
    """sha256 over (name, size, mtime) of the files: equal when nothing was written since, without reading
    gigabytes of shards on every rerun."""
    digest = hashlib.sha256()
    for rel in files if files is not None else _files(root, exclude):
        stat = os.stat(os.path.join(root, rel))
        digest.update(("%s\0%d\0%d\n" % (rel, stat.st_size, stat.st_mtime_ns)).encode())
    return digest.hexdigest()


def checkpoint_fingerprint(actor_dir):
    """What the merged model is made of: the model shards and the Hugging Face config/tokenizer beside them
    (the optimizer state does not reach the merged folder)."""
    files = sorted(os.path.relpath(p, actor_dir)
                   for p in glob.glob(os.path.join(actor_dir, "model_world_size_*_rank_*.pt")))
    hf_dir = os.path.join(actor_dir, "huggingface")
    if os.path.isdir(hf_dir):
        files += [os.path.join("huggingface", rel) for rel in _files(hf_dir)]
    return fingerprint(actor_dir, files)


def writable_problem(path):
    """None when ``path`` (or the folder that would hold it) can be written, else why not. Probes with a real
    file, which root on a read-only mount cannot make either."""
    probe_dir = workspace.nearest_existing(path)
    if not os.path.isdir(probe_dir):
        return "%s exists and is not a folder" % probe_dir
    try:
        handle, name = tempfile.mkstemp(prefix=".grpo-probe-", dir=probe_dir)
    except OSError as err:
        return "%s cannot be written (%s)" % (probe_dir, err.strerror or err)
    os.close(handle)
    os.unlink(name)
    return None


def merge_plan(actor_dir, target, step):
    """Whether ``target`` must be (re)made from the checkpoint in ``actor_dir``.

    action is none (the merged folder matches this checkpoint and nobody changed it since) or merge; backup is
    true when a folder is there that must be kept aside first (not ours, another checkpoint's, or edited)."""
    source = checkpoint_fingerprint(actor_dir)
    plan = {"action": "merge", "backup": False, "step": step, "source_fingerprint": source, "target": target}
    if not os.path.isdir(target):
        plan["reason"] = "no merged folder yet"
        return plan
    if not os.listdir(target):
        plan["reason"] = "the merged folder is empty"
        return plan
    manifest = workspace.read_json(os.path.join(target, MERGE_MANIFEST))
    plan["backup"] = True
    if not isinstance(manifest, dict):
        plan["reason"] = "the folder holds no merge record (kept aside, then merged)"
    elif manifest.get("source_fingerprint") != source or manifest.get("step") != step:
        plan["reason"] = "it was merged from another checkpoint (step %s) or the checkpoint was written since" % (
            manifest.get("step"),)
    elif manifest.get("merged_fingerprint") != fingerprint(target, exclude=(MERGE_MANIFEST,)):
        plan["reason"] = "its files changed since the merge (kept aside, then merged again)"
    else:
        plan.update(action="none", backup=False, reason="it matches step %d's checkpoint" % step)
    return plan


def merge_record(target, step, actor_dir, source_fingerprint, when):
    """The record written into a merged folder (after the merge)."""
    return {"step": step, "checkpoint": actor_dir, "source_fingerprint": source_fingerprint,
            "merged_fingerprint": fingerprint(target, exclude=(MERGE_MANIFEST,)), "merged_at": when}


def model_fingerprint(model_dir):
    """The model files that decide its answers (weights, config, tokenizer, chat template)."""
    keep = re.compile(r"(\.safetensors|\.bin|\.json|\.txt|\.model|\.jinja|\.tiktoken)$")
    files = [rel for rel in _files(model_dir, exclude=(MERGE_MANIFEST,))
             if keep.search(rel) and not os.path.basename(rel).startswith(".")]
    return fingerprint(model_dir, files)


def _epoch(value):
    """Seconds since the epoch from a number or the jobs' ISO time (2026-12-02T22:20:01+0000); None if neither."""
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None


def checkpoint_plan(checkpoint_dir, step, target_root, launches=None, inventory=""):
    """The checkpoint to evaluate and what its merge needs, read-only: {step, saved, latest, actor_dir, target,
    merge (none or merge), reason, written_at, launch (when the history has it), backup, source_fingerprint}.
    Raises EvalError for a step that was not saved (:func:`pick`) or a merge target that cannot be written (named
    ``{target_root}``)."""
    import glob

    picked = pick(checkpoint_dir, step, inventory)
    step, actor_dir = picked["step"], picked["actor_dir"]
    target = os.path.join(target_root, "global_step_%d" % step)
    problem = writable_problem(target)
    if problem:
        raise EvalError("{target_root}: the merged model cannot be written: %s. Point {target_root} "
                        "at a writable folder (the workspace's models/merged by default)." % problem)
    shards = glob.glob(os.path.join(actor_dir, "model_world_size_*_rank_*.pt"))
    written_at = max(os.stat(s).st_mtime for s in shards)
    plan = merge_plan(actor_dir, target, step)
    out = dict(step=step, saved=picked["saved"], latest=picked["latest"], actor_dir=actor_dir, target=target,
               merge=plan["action"], reason=plan["reason"], written_at=written_at, backup=plan["backup"],
               source_fingerprint=plan["source_fingerprint"])
    if launches:
        launch = launch_for(read_launches(launches), written_at)
        if launch:
            out["launch"] = launch
    return out


def launch_for(launches, written_at):
    """The launch that wrote a checkpoint: the last one started before the checkpoint was written."""
    before = [(t, l) for t, l in ((_epoch(l.get("started_at")), l) for l in launches)
              if t is not None and t <= written_at]
    return max(before, key=lambda pair: pair[0])[1] if before else None


def read_launches(path):
    """The run's launch history (one JSON object a line; unreadable lines are skipped)."""
    out = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict):
                    out.append(item)
    except OSError:
        pass
    return out
