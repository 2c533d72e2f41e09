# -*- coding: utf-8 -*-
"""The eval stage's merge of a checkpoint's shards into a Hugging Face folder, in plain Python: the plan of
:mod:`checkpoint_pick` checked for remote code, verl's merger run into ``<target>.partial``, its output checked, a
folder in the way kept aside, the merge put in place with its record.

The ``grpo_checkpoint`` and ``grpo_checkpoint_info`` modules are this file's arguments and a call; the merger runs
through the ``run_command`` the caller passes.
"""

import glob
import json
import os
import shutil

from ..assets import weights
from ..common import workspace
from . import checkpoint_pick
from .checkpoint_pick import EvalError


def chat_template_of(folder):
    """The chat template a tokenizer folder carries (chat_template.jinja wins, as in transformers)."""
    path = os.path.join(folder, "chat_template.jinja")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    config = workspace.read_json(os.path.join(folder, "tokenizer_config.json")) or {}
    return config.get("chat_template")


def _checked_plan(p):
    """The checkpoint plan, refused (EvalError) where the step is not saved or its config asks for remote code."""
    plan = checkpoint_pick.checkpoint_plan(p["checkpoint_dir"], p["step"], p["target_root"], p["launches"],
                                           p["inventory"])
    # the merger reads the config and tokenizer training saved beside the shards: refused before it runs
    problem = weights.remote_code_problem(os.path.join(plan["actor_dir"], "huggingface"),
                                          "step %d's saved model config" % plan["step"], p["trust_remote_code"])
    if problem:
        raise EvalError(problem)
    return plan


def checkpoint_info(p):
    """What ``grpo_checkpoint_info`` returns: which step, where its merge goes, whether a merge is needed."""
    plan = _checked_plan(p)
    for private in ("backup", "source_fingerprint"):
        plan.pop(private)
    return dict(changed=False, **plan)


def merge_checkpoint(p, check_mode, run_command):
    """What ``grpo_checkpoint`` returns: the plan, merged when it says so (not in check mode)."""
    plan = _checked_plan(p)
    backup, source_fingerprint = plan.pop("backup"), plan.pop("source_fingerprint")
    result = dict(changed=False, **plan)
    if plan["merge"] == "none":
        return result
    return merge(p, result, backup, source_fingerprint, check_mode, run_command)


def _refuse(partial, msg, result):
    shutil.rmtree(partial, ignore_errors=True)
    raise EvalError(msg, result)


def merge(p, result, backup, source_fingerprint, check_mode, run_command):
    """Merge into ``<target>.partial``, check it, keep a folder in the way aside, put the merge in place."""
    step, actor_dir, target = result["step"], result["actor_dir"], result["target"]
    before = workspace.read_json(os.path.join(target, checkpoint_pick.MERGE_MANIFEST)) or {}
    result["changed"] = True
    result["diff"] = {"before": "merged from step %s\n" % before.get("step") if before else
                      ("(a folder without a merge record)\n" if backup else "(absent)\n"),
                      "after": "merged from step %d of %s\n" % (step, p["checkpoint_dir"]),
                      "before_header": target, "after_header": target}
    if check_mode:
        return result

    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # not from the workspace root: a verl/ source folder there would shadow the installed package
    rc, out, err = run_command(
        [p["python"], "-m", "verl.model_merger", "merge", "--backend", "fsdp", "--local_dir", actor_dir,
         "--target_dir", partial] + (["--trust-remote-code"] if p["trust_remote_code"] else []),
        cwd=os.path.dirname(target))
    if rc != 0:
        _refuse(partial, "verl's model merger failed on step %d (rc %d): %s" % (
            step, rc, "\n".join((err or out).strip().splitlines()[-15:])), result)
    if not glob.glob(os.path.join(partial, "*.safetensors")) or not os.path.isfile(
            os.path.join(partial, "config.json")):
        _refuse(partial, "verl's model merger wrote no safetensors or config.json for step %d" % step, result)
    trained_template = chat_template_of(os.path.join(actor_dir, "huggingface"))
    if trained_template is not None and chat_template_of(partial) != trained_template:
        _refuse(partial, "the merged folder's chat template differs from the one training saved in %s" % (
            os.path.join(actor_dir, "huggingface")), result)
    if backup:
        result["backup"] = workspace.backup_path(target)
        os.rename(target, result["backup"])
    elif os.path.isdir(target):
        os.rmdir(target)  # empty
    os.rename(partial, target)
    record = checkpoint_pick.merge_record(target, step, actor_dir, source_fingerprint, workspace.now_iso())
    with open(os.path.join(target, checkpoint_pick.MERGE_MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    return result
