# -*- coding: utf-8 -*-
"""The eval stage's results, in plain Python: whether a kept OpenCompass result answers the question again, what
OpenCompass's own result files say, and the report (the base model against the trained one, and the run that
trained it).

Nothing here runs OpenCompass; the role runs it and this module reads what it wrote. Which checkpoint, and its
merge, are :mod:`checkpoint_pick`'s.
"""

import csv
import glob
import hashlib
import json
import os
import re

from ..common import rerun, secrets, workspace
from .checkpoint_pick import EvalError  # the eval stage's one refusal, raised here too

_TIMESTAMP_DIR = re.compile(r"^\d{8}_\d{6}$")


def sha256_text(text):
    return hashlib.sha256(text.encode()).hexdigest()


def eval_key(model_fingerprint, data_sha256, settings):
    """Names a result by everything that decides it: the model's files, the problems and the settings."""
    blob = json.dumps({"model": model_fingerprint, "data": data_sha256, "settings": settings}, sort_keys=True)
    return sha256_text(blob)[:16]


def _results_files(work_dir, dataset):
    """OpenCompass's per-model result files for ``dataset`` in its newest run folder (an older run's files do not
    stand in for a newer run that wrote none)."""
    runs = sorted((d for d in os.listdir(work_dir) if _TIMESTAMP_DIR.match(d)), reverse=True) \
        if os.path.isdir(work_dir) else []
    if not runs:
        return None, []
    return runs[0], sorted(glob.glob(os.path.join(work_dir, runs[0], "results", "*", dataset + ".json")))


def _summary_value(run_dir, dataset, abbr):
    """The figure OpenCompass's own summary CSV gives for ``dataset`` and ``abbr`` (None without one)."""
    for path in sorted(glob.glob(os.path.join(run_dir, "summary", "summary_*.csv"))):
        with open(path, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("dataset") == dataset and abbr in row:
                    try:
                        return float(row[abbr])
                    except (TypeError, ValueError):
                        return None
    return None


def _is_correct(value):
    """A detail's verdict: OpenCompass stores it as a bool, or as a list of one bool per sample."""
    if isinstance(value, list):
        return bool(value) and all(v is True for v in value)
    return value is True


def read_result(work_dir, dataset="math"):
    """What OpenCompass wrote for one model in ``work_dir``: accuracy (0-100), problems, correct answers, the
    result file and the summary's figure. Raises EvalError when the run left no result."""
    run, files = _results_files(work_dir, dataset)
    if not files:
        raise EvalError("OpenCompass wrote no %s result under %s (see its log)" % (dataset, work_dir))
    if len(files) > 1:
        raise EvalError("OpenCompass wrote results for several models under %s: %s" % (work_dir, files))
    path = files[0]
    data = workspace.read_json(path)
    if not isinstance(data, dict) or "accuracy" not in data:
        raise EvalError("%s holds no accuracy (OpenCompass failed to score: %s)" % (
            path, (data or {}).get("error", "unreadable") if isinstance(data, dict) or data is None else data))
    details = data.get("details")
    details = list(details.values()) if isinstance(details, dict) else (details or [])
    correct = sum(1 for d in details if isinstance(d, dict) and _is_correct(d.get("correct")))
    abbr = os.path.basename(os.path.dirname(path))
    sha = workspace.sha256_file(path)
    predictions = os.path.join(work_dir, run, "predictions", abbr, dataset + ".json")
    return {"accuracy": float(data["accuracy"]), "problems": len(details), "correct": correct, "abbr": abbr,
            "run": run, "result_file": path, "result_sha256": sha,
            "predictions_file": predictions if os.path.isfile(predictions) else None,
            "summary_accuracy": _summary_value(os.path.join(work_dir, run), dataset, abbr)}


def _sourced(reference):
    """The reference's figures that name a public source (repository, commit and file), each with that source;
    a figure without one is dropped, so it is never printed."""
    sources = reference.get("sources") or {}
    out = []
    for figure in reference.get("figures") or []:
        source = sources.get(figure.get("source")) if isinstance(figure, dict) else None
        if not isinstance(source, dict) or not all(source.get(k) for k in ("repository", "commit", "path")):
            continue
        if not isinstance(figure.get("accuracy"), (int, float)) or isinstance(figure.get("accuracy"), bool):
            continue
        out.append(dict(figure, source=source))
    return out


def source_text(source):
    """A figure's source in one line: repository@commit, file, where in it."""
    return "%s@%s, %s%s" % (source["repository"], str(source["commit"])[:8], source["path"],
                            " (%s)" % source["where"] if source.get("where") else "")


def _run_values(meta):
    """What the run behind the checkpoint is: the composed values of its spec (``meta["run_spec"]``, the train
    stage's ``run-spec.json``: ascend_grpo.train.run_spec), or None when there is none of this version or it is
    another run's than ``meta["run_dir"]``."""
    spec = meta.get("run_spec") or {}
    if spec.get("version") != 1 or not isinstance(spec.get("summary"), dict):
        return None
    if meta.get("run_dir") and spec.get("run_dir") and \
            os.path.normpath(spec["run_dir"]) != os.path.normpath(meta["run_dir"]):
        return None  # the workspace's spec is another run's (the last one checked)
    return spec["summary"]


def _int(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def run_differences(run, meta, trained_steps):
    """How the run behind the checkpoint differs from the reference run (``run`` of the reference data), each as a
    sentence (the run from its spec, ``meta["run_spec"]``, never from its launch's override strings): the cards, the rollout's tensor parallel size, the train batch size, how far the run goes (a
    reference step beyond its last step is out of reach), the chat template and the instruction. Unknowns are said
    as such, never taken as equal."""
    found = []
    template = meta.get("chat_template") or {}
    if not template.get("sha256"):
        found.append("its chat template is not on record (the assets stage's record has none)")
    elif template["sha256"] != run.get("chat_template_sha256"):
        found.append("its chat template is not the sample's (%s: %s), so its prompts are not the sample's"
                     % (template.get("source", "?"), template.get("origin") or "?"))
    instruction = meta.get("instruction")
    if not instruction:
        found.append("the instruction its prompts end with is not on record")
    elif instruction != run.get("instruction"):
        found.append("its prompts end with another instruction (%r)" % instruction)
    values = _run_values(meta)
    if values is None:
        found.append("its training configuration is not on record, so its cards, batch size and steps cannot be "
                     "compared with the sample's (the run's spec is written by the train stage's check: %s)"
                     % rerun.command("train", meta.get("inventory") or ""))
        return found
    nnodes = _int(values.get("trainer.nnodes")) or 1
    per_node = _int(values.get("trainer.n_gpus_per_node")) or 1
    cards, ref_cards = nnodes * per_node, run.get("nnodes", 1) * run.get("n_gpus_per_node", 1)
    if cards != ref_cards:
        found.append("%d card%s, the sample's run %d" % (cards, "" if cards == 1 else "s", ref_cards))
    tp = _int(values.get("actor_rollout_ref.rollout.tensor_model_parallel_size"))
    if tp is not None and tp != run.get("rollout_tp"):
        found.append("rollout tensor parallel size %d, the sample's %s" % (tp, run.get("rollout_tp")))
    batch = _int(values.get("data.train_batch_size"))
    if batch is not None and batch != run.get("train_batch_size"):
        found.append("train batch size %d, the sample's %s" % (batch, run.get("train_batch_size")))
    last, how = _int(values.get("trainer.total_training_steps")), "trainer.total_training_steps"
    epochs, rows = _int(values.get("trainer.total_epochs")), _int(meta.get("train_rows"))
    if last is None and epochs and batch and rows:
        last, how = epochs * (rows // batch), "%d epochs of %d steps, %d problems at %d a batch" % (
            epochs, rows // batch, rows, batch)
    beyond = [s for s in trained_steps if last is not None and s > last]
    if beyond:
        found.append("it ends near step %d (%s), so the sample's step %s is out of its reach"
                     % (last, how, ", ".join(map(str, beyond))))
    elif last is None:
        found.append("how many steps it runs is not on record")
    return found


def reference_for(reference, meta, step):
    """The reference figures (``reference``: the data of roles/grpo_eval/files/reference.yml) when the model and
    the data are the reference ones, each with its source, and how the run differs from the reference run; else
    None. Only figures with a public source are there."""
    if not isinstance(reference, dict):
        return None
    if ((meta.get("model") or "").rstrip("/") != reference.get("model")
            or (meta.get("data") or "").rstrip("/") != reference.get("data")):
        return None
    figures = _sourced(reference)
    base = next((f for f in figures if f.get("model") == "base"), None)
    trained = {f["step"]: f for f in figures if f.get("model") == "trained" and isinstance(f.get("step"), int)}
    if base is None and not trained:
        return None
    steps = sorted(trained)
    step = _int(step)
    pick = trained.get(step)
    sources = []
    for figure in ([base] if base else []) + [trained[s] for s in steps]:
        if figure["source"] not in sources:
            sources.append(figure["source"])
    run = reference.get("run") or {}
    return {"base": base["accuracy"] if base else None, "trained": pick["accuracy"] if pick else None,
            "trained_steps": steps, "source": "; ".join(source_text(s) for s in sources), "sources": sources,
            "run": run, "differences": run_differences(run, meta, steps) if run else [],
            "note": None if pick or not steps else "the sample reports step%s %s, not step %s" % (
                "s" if len(steps) > 1 else "", ", ".join(map(str, steps)), step)}


def reference_run_text(run):
    """The reference run in one line, for the report."""
    if not run:
        return ""
    return ("the sample's run (%s: %d card%s, rollout tensor parallel size %s, train batch size %s, save_freq %s, "
            "%s epochs) with the sample's chat template and instruction" % (
                (run.get("script") or "?").rsplit("/", 1)[-1], run.get("nnodes", 1) * run.get("n_gpus_per_node", 1),
                "" if run.get("nnodes", 1) * run.get("n_gpus_per_node", 1) == 1 else "s", run.get("rollout_tp"),
                run.get("train_batch_size"), run.get("save_freq"), run.get("total_epochs")))


def build_report(base, trained, meta):
    """The report: base vs trained accuracy, their difference, the models evaluated, the checkpoint, the settings,
    the training configuration, and notes on what the figures can and cannot say.

    ``meta``: ``dataset``; ``model`` (where the base weights came from: a hub id or a folder) and ``base_dir`` (the
    folder evaluated); ``data``; ``checkpoint`` (``step``, ``dir``, ``saved``, ``merged``: the trained folder
    evaluated); ``settings``; ``training`` (the launch behind the checkpoint); ``note`` (a sentence the inventory
    adds, e.g. the simulated host's); ``reference`` (the reference figures and run, roles/grpo_eval/files/
    reference.yml), with what the run is compared to it by: ``chat_template`` and ``instruction`` (the assets
    stage's record) and ``train_rows``.
    """
    diff = round(trained["accuracy"] - base["accuracy"], 2)
    checkpoint = meta.get("checkpoint", {})
    keep = ("accuracy", "correct", "problems", "result_file", "result_sha256", "evaluated_at")
    report = {
        "dataset": meta.get("dataset", "math_gen_a58d9d"),
        "problems": trained["problems"],
        "base": dict({k: base[k] for k in keep if k in base}, model=meta.get("base_dir") or base.get("model"),
                     source=meta.get("model") or base.get("model")),
        "trained": dict({k: trained[k] for k in keep if k in trained},
                        model=checkpoint.get("merged") or trained.get("model"), step=checkpoint.get("step")),
        "difference": diff,
        "checkpoint": checkpoint,
        "settings": meta.get("settings", {}),
        "training": meta.get("training", {}),
        "reference": reference_for(meta.get("reference"), meta, checkpoint.get("step")),
    }
    report["notes"] = report_notes(report, meta.get("note"))
    return report


def report_notes(report, note=None):
    """What the figures can say: the weight of one problem, a warning when neither model solved any, and the
    inventory's own ``note``."""
    notes = []
    problems = report["problems"]
    if problems:
        notes.append("%d problems: one problem is %.2f points of accuracy." % (problems, 100.0 / problems))
    if report["base"].get("correct") == 0 and report["trained"].get("correct") == 0:
        cut = report["settings"].get("max_out_len")
        notes.append("Neither model solved a problem, so the difference says nothing about the training%s." % (
            " (answers are cut at max_out_len = %s tokens)" % cut if cut else ""))
    if note:
        notes.append(str(note).strip())
    return notes


def _fmt(value):
    return "-" if value is None else "%.2f" % value


def render_markdown(report, brief=False):
    """The report as markdown (what a person reads first). ``brief`` leaves out the training configuration and
    OpenCompass's result files (the console shows the rest and names the file that has them)."""
    ck = report["checkpoint"]
    ref = report["reference"]
    lines = ["# GRPO evaluation: %s" % report["dataset"], "",
             "Checkpoint: step %s of %s" % (ck.get("step"), secrets.table_cell(ck.get("dir", "?"))), ""]
    header = "| model | accuracy (%) | correct / problems |"
    rule = "|---|---|---|"
    if ref:
        header += " sample (%) |"
        rule += "---|"
    lines += [header, rule]
    rows = [("base", report["base"], ref and ref["base"]),
            ("trained: step %s" % ck.get("step"), report["trained"], ref and ref["trained"])]
    for name, res, sample in rows:
        line = "| %s | %s | %d / %d |" % (name, _fmt(res["accuracy"]), res["correct"], res["problems"])
        if ref:
            line += " %s |" % _fmt(sample)
        lines.append(line)
    line = "| difference | %+.2f | |" % report["difference"]
    if ref:
        sample_diff = None if ref["trained"] is None else ref["trained"] - ref["base"]
        line += " %s |" % ("-" if sample_diff is None else "%+.2f" % sample_diff)
    lines.append(line)
    if ref:
        made = reference_run_text(ref.get("run"))
        lines += ["", "Sample figures: %s%s%s." % (ref["source"], ", made by " + made if made else "",
                                                   "; " + ref["note"] if ref["note"] else "")]
        if ref.get("differences"):
            lines += ["", "This run differs from the sample's: %s." % "; ".join(ref["differences"])]
    base, trained = report["base"], report["trained"]
    source = base.get("source")
    # folders' and runs' names escaped: a newline or "|" in one cannot add a line or a row to the report
    cell = secrets.table_cell
    lines += ["", "Models evaluated:", "",
              "- base: `%s`%s" % (cell(base.get("model")), ", the weights from `%s`" % cell(secrets.mask_url(source))
                                  if source and source != base.get("model") else ""),
              "- trained: `%s`, step %s of `%s` merged to Hugging Face format" % (
                  cell(trained.get("model")), ck.get("step"), cell(ck.get("dir", "?")))]
    if report.get("notes"):
        lines += [""] + ["Note: %s" % note for note in report["notes"]]
    settings = report["settings"]
    if settings:
        lines += ["", "## Evaluation settings", ""]
        lines += ["- %s: `%s`" % (k, json.dumps(settings[k], sort_keys=True)) for k in sorted(settings)]
    if brief:
        return "\n".join(lines) + "\n"
    training = report["training"]
    if not training:
        lines += ["", "Training configuration: not on record (the run's launches.jsonl has no launch before this "
                      "checkpoint was written)."]
    else:
        lines += ["", "## Training configuration (the launch that wrote this checkpoint)", ""]
        for key in ("run_dir", "profile", "started_at", "script_sha1"):
            if training.get(key) is not None:
                lines.append("- %s: `%s`" % (key, training[key]))
        if training.get("overrides"):
            lines += ["", "```"] + list(training["overrides"]) + ["```"]
    lines += ["", "Figures from OpenCompass's result files:", "",
              "- base: `%s` (sha256 %s)" % (report["base"].get("result_file"),
                                            (report["base"].get("result_sha256") or "")[:12]),
              "- trained: `%s` (sha256 %s)" % (report["trained"].get("result_file"),
                                               (report["trained"].get("result_sha256") or "")[:12])]
    return "\n".join(lines) + "\n"
