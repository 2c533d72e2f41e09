# -*- coding: utf-8 -*-
"""The eval stage's kept scores, in plain Python: one model's OpenCompass score looked up, checked and kept under a
key of the model, the problems and the settings, and the report files written.

The ``grpo_eval_result`` module is this file's arguments and a call. What OpenCompass's result files say is
:mod:`result_report`'s; which model folder is which is :mod:`checkpoint_pick`'s.
"""

import os
import stat

from ..assets import weights
from ..common import rerun, workspace
from . import checkpoint_pick, result_report
from .checkpoint_pick import EvalError


def _report_text(text):
    return text if text.endswith("\n") else text + "\n"


def write_reports(p, check_mode):
    """Write each report file that differs; in check mode say which would change."""
    folder = p["report_dir"] or os.path.join(p["eval_dir"], "reports")
    paths, changed = {}, False
    for ext, text in sorted(p["reports"].items()):
        path = paths[ext] = os.path.join(folder, "%s.%s" % (p["report_name"], ext))
        did, _ = workspace.write_text(path, _report_text(text), check_mode=check_mode)
        changed = changed or did
    return dict(changed=changed, paths=paths)


def reports_to_write(folder, name, reports):
    """The extensions of ``reports`` (``{ext: text}``) whose file ``<folder>/<name>.<ext>`` does not hold that text
    as :func:`write_reports` writes it: missing, different, or not a regular file (a link is left to the writer,
    which refuses it). Read where the files are (the eval stage asks on the controller before calling there)."""
    differ = []
    for ext, text in sorted(reports.items()):
        path = os.path.join(folder, "%s.%s" % (name, ext))
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise OSError("not a regular file")
            with open(path, encoding="utf-8") as handle:
                same = handle.read() == _report_text(text)
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            differ.append(ext)
    return differ


def _checked_inputs(p):
    """Refuse (EvalError) a missing model folder or problems file, or a model asking for remote code. The base
    model's folder is named as ``{model_dir}`` (the eval stage's grpo_eval_base_model_dir)."""
    for what, path in (("model folder", os.path.join(p["model_dir"], "config.json")), ("problems", p["data_file"])):
        if not os.path.isfile(path):
            raise EvalError("the %s model's %s %s is missing: run the assets stage (%s)%s." % (
                p["name"], what, path, rerun.command("assets", p["inventory"]),
                ", or set {model_dir} to a Hugging Face model folder"
                if p["name"] == "base" and what == "model folder" else ""))
    # the folder may have changed since the assets stage or the merge looked at it: looked at again, right before
    # OpenCompass would load it
    problem = weights.remote_code_problem(p["model_dir"], "the %s model" % p["name"], p["trust_remote_code"])
    if problem:
        raise EvalError(problem)


def _checked_read(work_dir, dataset, result):
    """OpenCompass's result for ``work_dir``, refused (EvalError carrying ``result``) where it does not add up."""
    try:
        read = result_report.read_result(work_dir, dataset)
    except EvalError as err:
        raise EvalError(str(err), result) from err
    if read["problems"] == 0:
        raise EvalError("OpenCompass scored no problem in %s" % read["result_file"], result)
    if read["summary_accuracy"] is not None and abs(read["summary_accuracy"] - read["accuracy"]) > 0.006:
        raise EvalError("OpenCompass's summary says %.2f but its result file %s says %.4f" % (
            read["summary_accuracy"], read["result_file"], read["accuracy"]), result)
    if abs(100.0 * read["correct"] / read["problems"] - read["accuracy"]) > 0.006:
        raise EvalError("%s: accuracy %.4f does not match its details (%d of %d correct)" % (
            read["result_file"], read["accuracy"], read["correct"], read["problems"]), result)
    return read


def eval_result(p, check_mode):
    """What ``grpo_eval_result`` returns for its ``state``: reported, query or collected."""
    if p["state"] == "reported":
        return write_reports(p, check_mode)
    _checked_inputs(p)
    data_sha = workspace.sha256_file(p["data_file"])
    key = result_report.eval_key(checkpoint_pick.model_fingerprint(p["model_dir"]), data_sha, p["settings"])
    label = "%s-%s" % (p["name"], key)
    kept = os.path.join(p["eval_dir"], "results", label + ".json")
    work_dir = os.path.join(p["eval_dir"], "opencompass", label)
    result = dict(changed=False, key=key, kept=kept, work_dir=work_dir, found=False)
    if p["state"] == "query":
        record = workspace.read_json(kept)
        if isinstance(record, dict) and "accuracy" in record:
            result.update(found=True, result=record)
        return result

    read = _checked_read(work_dir, p["dataset"], result)
    record = dict(read, name=p["name"], model=p["model"], model_dir=p["model_dir"], key=key,
                  data_file=p["data_file"], data_sha256=data_sha, settings=p["settings"],
                  evaluated_at=read["run"])
    result.update(result=record, changed=True)
    if not check_mode:
        workspace.write_json(kept, record)
    return result
