# -*- coding: utf-8 -*-
"""A merged and evaluated step uploaded to the Hugging Face hub (or a mirror), with a model card written from the
eval stage's report: the ``grpo_publish`` module's work as plain Python.

Which step: the eval stage's reports (``<eval_dir>/reports/<run>-step_N.json``) name each evaluated step and its
merged folder (with the merge's record, ``.grpo-merge.json``); a step without a report, or whose folder changed
since its merge, is refused naming the stage to run first. What to upload: every file of the merged folder, the
card (``README.md``) and our marker (``.grpo-publish.json``), each compared with what the repository holds (LFS
sha256, else git blob id), so a second run uploads nothing. A repository that exists without our marker is not
ours: refused unless ``allow_foreign``. The marker goes up alone first, so an upload cut off later is resumed by
the next run (huggingface_hub's LFS batch call skips the objects the server holds already).

huggingface_hub is imported when an upload is planned, not at import: the engine's other parts (the card, the
step) need nothing but the standard library. The token reaches huggingface_hub's client in this process (the
module's option, never logged), never a command line.
"""

import glob
import hashlib
import json
import os
import re

from ..common import errors, rerun, secrets, workspace
from ..eval import checkpoint_pick

MARKER = ".grpo-publish.json"
CARD = "README.md"
PUBLISHER = "ascend_grpo grpo_publish"
_STEP_REPORT = re.compile(r"-step_(\d+)\.json$")


class PublishError(errors.StageFailure):
    """A refusal or failure of the publish stage."""


class PublishFieldError(errors.FieldError):
    """A refusal of one input of the publish stage."""


# --- which step -----------------------------------------------------------------------------------------------------

def evaluated_steps(eval_dir, run_name):
    """``{step: report}`` of the eval stage's reports of the run ``run_name`` (``<project>-<experiment>``)."""
    found = {}
    prefix = os.path.join(eval_dir, "reports", run_name + "-step_")
    for path in glob.glob(glob.escape(prefix) + "*.json"):
        match = _STEP_REPORT.search(path)
        report = workspace.read_json(path)
        if match and path[:match.start()] + "-step_" == prefix and isinstance(report, dict):
            found[int(match.group(1))] = report
    return found


def _eval_command(inventory, step):
    """The command that merges and evaluates ``step`` (the eval stage's step setting is the option ``eval_step``,
    there only to be named)."""
    return "%s -e {eval_step}=%d" % (rerun.command("eval", inventory), step)


def pick_step(eval_dir, run_name, step=0, inventory=""):
    """The step to publish, its report and its merged folder: ``step`` (0: the newest evaluated one). Refused
    (PublishFieldError on ``step``) when it was not evaluated, or when its merged folder is not the one evaluated."""
    reports = evaluated_steps(eval_dir, run_name)
    if not reports:
        raise PublishFieldError("step", "no evaluated step of the run %s: the eval stage's reports (%s) hold none. "
                                "Run the eval stage first: %s" % (run_name, os.path.join(eval_dir, "reports"),
                                                                   rerun.command("eval", inventory)))
    chosen = step or max(reports)
    if chosen not in reports:
        raise PublishFieldError("step", "step %d of the run %s was not evaluated (evaluated: %s). Set {step} to one "
                                "of those, or evaluate it first: %s" % (
                                    chosen, run_name, ", ".join(map(str, sorted(reports))),
                                    _eval_command(inventory, chosen)))
    report = reports[chosen]
    merged = (report.get("checkpoint") or {}).get("merged") or ""
    record = workspace.read_json(os.path.join(merged, checkpoint_pick.MERGE_MANIFEST)) if merged else None
    fix = _eval_command(inventory, chosen)
    if not isinstance(record, dict) or int(record.get("step", -1)) != chosen:
        raise PublishFieldError("step", "step %d's merged folder %s is missing or holds another merge: merge and "
                                "evaluate it again: %s" % (chosen, merged or "(none in its report)", fix))
    if record.get("merged_fingerprint") != checkpoint_pick.fingerprint(
            merged, exclude=(checkpoint_pick.MERGE_MANIFEST,)):
        raise PublishFieldError("step", "step %d's merged folder %s changed since it was merged and evaluated: "
                                "merge and evaluate it again: %s" % (chosen, merged, fix))
    return chosen, report, merged


# --- the model card -------------------------------------------------------------------------------------------------

def _fmt(value):
    return "-" if value is None else "%.2f" % value


def _yaml_str(value):
    return json.dumps(str(value))  # a JSON string is a YAML string


def run_settings(run_spec, report):
    """The run's settings the card shows: the composed values of the train stage's run spec (when it is this
    run's), else the launch's overrides from the report."""
    spec = run_spec if isinstance(run_spec, dict) else {}
    run_dir = (report.get("training") or {}).get("run_dir")
    if spec.get("version") == 1 and isinstance(spec.get("summary"), dict) and not (
            run_dir and spec.get("run_dir") and os.path.normpath(spec["run_dir"]) != os.path.normpath(run_dir)):
        return ["%s: %s" % (k, json.dumps(spec["summary"][k], sort_keys=True)) for k in sorted(spec["summary"])]
    return list((report.get("training") or {}).get("overrides") or [])


def model_card(report, repo_id, base_model="", datasets=(), run_spec=None):
    """The model card (README.md): YAML front matter (base_model, datasets, metrics, the scores as model-index),
    then the scores of the base and the trained model, the reference figures with their source, and the run's
    settings. Everything from the eval stage's report and the run's spec; no secret (masked)."""
    base, trained, ck = report.get("base") or {}, report.get("trained") or {}, report.get("checkpoint") or {}
    step, dataset = ck.get("step"), report.get("dataset", "math_gen_a58d9d")
    front = ["---", "library_name: transformers", "pipeline_tag: text-generation", "tags:", "- grpo", "- verl",
             "- ascend"]
    if base_model:
        front.append("base_model: %s" % _yaml_str(base_model))
    if datasets:
        front += ["datasets:"] + ["- %s" % _yaml_str(d) for d in datasets]
    front += ["metrics:", "- accuracy", "model-index:", "- name: %s" % _yaml_str(repo_id.split("/")[-1]),
              "  results:", "  - task:", "      type: text-generation",
              "    dataset:", "      name: %s" % _yaml_str("MATH (OpenCompass %s)" % dataset),
              "      type: %s" % _yaml_str(datasets[0] if datasets else dataset),
              "    metrics:",
              "    - type: accuracy", "      name: %s" % _yaml_str("accuracy, trained (step %s)" % step),
              "      value: %s" % _fmt(trained.get("accuracy")),
              "    - type: accuracy", "      name: %s" % _yaml_str("accuracy, base model"),
              "      value: %s" % _fmt(base.get("accuracy")), "---", ""]
    lines = ["# %s" % repo_id.split("/")[-1], "",
             "%s trained with GRPO (verl) on MATH, step %s, published from the eval stage's report." % (
                 "`%s`" % base_model if base_model else "A model", step), "",
             "## Scores (OpenCompass, %s, %s problems)" % (dataset, report.get("problems")), ""]
    ref = report.get("reference")
    header, rule = "| model | accuracy (%) | correct / problems |", "|---|---|---|"
    if ref:
        header, rule = header + " the guide's (%) |", rule + "---|"
    lines += [header, rule]
    for name, res, sample in (("base", base, ref and ref.get("base")),
                              ("trained, step %s" % step, trained, ref and ref.get("trained"))):
        line = "| %s | %s | %s / %s |" % (name, _fmt(res.get("accuracy")), res.get("correct"), res.get("problems"))
        lines.append(line + (" %s |" % _fmt(sample) if ref else ""))
    lines.append("| difference | %+.2f | |%s" % (report.get("difference") or 0.0, " |" if ref else ""))
    lines.append("")
    if ref:
        lines += ["The guide's figures are from %s%s." % (ref.get("source"), "; " + ref["note"] if ref.get("note")
                                                           else ""), ""]
        if ref.get("differences"):
            lines += ["This run differs from the guide's: %s." % "; ".join(ref["differences"]), ""]
    else:
        lines += ["No reference figures: the base model or the data are not the guide's.", ""]
    for note in report.get("notes") or []:
        lines += ["Note: %s" % note, ""]
    settings = report.get("settings") or {}
    if settings:
        lines += ["## Evaluation settings", ""] + ["- %s: `%s`" % (k, json.dumps(settings[k], sort_keys=True))
                                                   for k in sorted(settings)] + [""]
    training = run_settings(run_spec, report)
    lines += ["## Training settings", ""]
    lines += (["```"] + training + ["```"]) if training else ["Not on record (the run has no spec)."]
    text = "\n".join(front + lines).rstrip("\n") + "\n"
    return secrets.mask_tokens(secrets.mask_url(text))[0]


def marker_text(repo_id):
    """The marker that says the repository was made by this package (stable, so a rerun uploads nothing)."""
    return json.dumps({"publisher": PUBLISHER, "repo_id": repo_id}, indent=2, sort_keys=True) + "\n"


# --- what to upload ----------------------------------------------------------------------------------------------

def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _local_files(merged):
    out = {}
    for root, dirs, files in os.walk(merged):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), merged).replace(os.sep, "/")
            if rel not in (checkpoint_pick.MERGE_MANIFEST, CARD, MARKER):
                out[rel] = os.path.join(root, name)
    return out


def _same(remote, source):
    """Whether the remote entry (huggingface_hub's RepoFile, or None) holds ``source`` (a path or bytes)."""
    if remote is None:
        return False
    data = source if isinstance(source, bytes) else None
    size = len(data) if data is not None else os.path.getsize(source)
    if getattr(remote, "size", None) not in (None, size):
        return False
    lfs = getattr(remote, "lfs", None)
    if lfs:
        sha = lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)
        local = hashlib.sha256(data).hexdigest() if data is not None else workspace.sha256_file(source)
        return sha == local
    if data is None:
        with open(source, "rb") as handle:
            data = handle.read()
    return getattr(remote, "blob_id", None) == git_blob_id(data)


def _hub_error(err, what):
    first = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
    return PublishError("%s: %s" % (what, secrets.mask_tokens(secrets.mask_url(first))[0]))


def publish(p, check_mode=False, api=None):
    """What ``grpo_publish`` returns: the step, the repository, the files uploaded (or, in check mode, that
    would be), and the record to hand on. ``api``: an ``HfApi`` (tests); by default one for ``endpoint``."""
    step, report, merged = pick_step(p["eval_dir"], p["run_name"], p.get("step") or 0, p.get("inventory", ""))
    repo_id = p["repo_id"]
    run_spec = workspace.read_json(p["run_spec"]) if p.get("run_spec") else None
    card = model_card(report, repo_id, p.get("base_model") or "", p.get("datasets") or [], run_spec).encode()
    sources = dict(_local_files(merged))
    sources[CARD] = card
    sources[MARKER] = marker_text(repo_id).encode()
    if api is None:
        from huggingface_hub import HfApi  # pylint: disable=import-outside-toplevel
        api = HfApi(endpoint=p["endpoint"].rstrip("/"), token=p.get("token") or None)
    from huggingface_hub.errors import RepositoryNotFoundError  # pylint: disable=import-outside-toplevel
    from huggingface_hub.hf_api import RepoFile  # pylint: disable=import-outside-toplevel
    endpoint = secrets.mask_url(p["endpoint"])
    result = {"changed": False, "step": step, "merged_dir": merged, "repo_id": repo_id, "endpoint": endpoint,
              "created": False, "uploaded": [], "unchanged": []}
    try:
        try:
            api.repo_info(repo_id)
            exists = True
        except RepositoryNotFoundError:
            exists = False
        remote = {}
        if exists:
            remote = {e.path: e for e in api.list_repo_tree(repo_id, recursive=True) if isinstance(e, RepoFile)}
    except Exception as err:  # huggingface_hub's HTTP errors, a refused connection
        raise _hub_error(err, "cannot read %s on %s" % (repo_id, endpoint))
    if exists and MARKER not in remote and not p.get("allow_foreign"):
        raise PublishFieldError("repo_id", "%s exists on %s and was not made by this package (it has no %s): set "
                                "{repo_id} to another repository, or {allow_foreign} to true to publish into it "
                                "(files of the same name there are replaced)" % (repo_id, endpoint, MARKER), result)
    todo = [path for path in sorted(sources) if not _same(remote.get(path), sources[path])]
    result["unchanged"] = [path for path in sorted(sources) if path not in todo]
    result["uploaded"] = todo
    result["created"] = not exists
    result["changed"] = bool(todo) or not exists
    result["diff"] = {"before": "".join("%s\n" % f for f in sorted(remote)) if exists else "(no repository)\n",
                      "after": "".join("%s%s\n" % (f, "  (upload)" if f in todo else "") for f in sorted(sources)),
                      "before_header": "%s on %s" % (repo_id, endpoint), "after_header": "%s on %s" % (
                          repo_id, endpoint)}
    if check_mode or not result["changed"]:
        result["record"] = _record(result, p, api, repo_id) if not check_mode else {}
        return result
    from huggingface_hub import CommitOperationAdd  # pylint: disable=import-outside-toplevel
    try:
        if not exists:
            api.create_repo(repo_id, private=bool(p.get("private")), exist_ok=True)
        # the marker first, alone: an upload cut off later leaves a repository the next run knows as ours
        if MARKER in todo:
            api.create_commit(repo_id, [CommitOperationAdd(MARKER, sources[MARKER])],
                              commit_message="Mark the repository as published by grpo_publish")
        rest = [path for path in todo if path != MARKER]
        if rest:
            api.create_commit(repo_id, [CommitOperationAdd(path, sources[path]) for path in rest],
                              commit_message="Publish step %d of %s" % (step, p["run_name"]),
                              num_threads=int(p.get("threads") or 1))
    except Exception as err:  # an upload cut off: the next run resumes it
        failure = _hub_error(err, "uploading to %s on %s stopped (run the stage again to resume it)" % (
            repo_id, endpoint))
        raise PublishError(failure.msg, result)
    result["record"] = _record(result, p, api, repo_id)
    return result


def _record(result, p, api, repo_id):
    """What the stage hands on (no token): where the step went and the commit the repository is at."""
    try:
        sha = api.repo_info(repo_id).sha
    except Exception:  # pylint: disable=broad-except
        sha = None
    return {"repo_id": repo_id, "endpoint": result["endpoint"], "step": result["step"],
            "merged_dir": result["merged_dir"], "commit": sha, "private": bool(p.get("private")),
            "files": len(result["uploaded"]) + len(result["unchanged"])}
