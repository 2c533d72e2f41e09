"""vLLM's OpenAI-compatible server on a model of the workspace (``--tags serve``), in plain Python: which model it
serves, the command that serves it, and whether the stack can run that command as it is.

- :func:`pick`: the model named by the serve setting (``{model}``): empty, the newest trained step the eval stage
  evaluated (its report in the eval folder names the merged folder), else the base model; ``base``; or a step number,
  whose merged folder the eval stage must have made (``--tags eval -e grpo_eval_step=N`` makes it).
- :func:`command`: the server's argv: ``python -m vllm.entrypoints.openai.api_server`` with the model, the name it
  answers to, the address and port, the profile's arguments, then the user's (``{args}``), which may not take over
  what the stage decides (the model, the address, the port).
- :func:`needs_uvloop_stand_in`: the guide's stack uninstalls uvloop (it clashes with Ray's asyncio loop:
  DOMAIN.md), and vLLM 0.13's server module imports it only to run its event loop (``uvloop.run``); without it
  the server does not start, on a 910B as here. The server process then gets the package's stand-in first on its
  path (``roles/grpo_eval/files/serve/uvloop``: asyncio's ``run`` under uvloop's name), for it and the engine
  process it spawns, and nothing else in the training environment sees it.

Standard library only: the ``grpo_serve_info`` module runs it in the training environment.
"""

import json
import os
import re

from ..common import runner
from ..common.errors import FieldError, StageFailure

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# the report the eval stage writes per evaluated step: <project>-<experiment>-step_<N>.json (report.yml)
_REPORT = re.compile(r"-step_([0-9]+)\.json$")
# what the stage decides and a user's extra argument may not say again
TAKEN = ("--model", "--host", "--port", "--served-model-name", "--chat-template", "--uds")
MERGE_RECORD = ".grpo-merge.json"  # what the eval stage's merge leaves in a merged folder (checkpoint_merge)


class ServeError(StageFailure):
    """What cannot be served, naming the input to change as ``{field}``."""


def _newest_evaluated(reports_dir, prefix):
    """(step, merged folder) of the newest report ``<prefix>-step_N.json`` whose merged folder is still there."""
    found = []
    try:
        names = os.listdir(reports_dir)
    except OSError:
        return None
    for name in names:
        match = _REPORT.search(name)
        if not match or not name.startswith(prefix + "-step_"):
            continue
        try:
            with open(os.path.join(reports_dir, name), encoding="utf-8") as handle:
                report = json.load(handle)
            merged = report["checkpoint"]["merged"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if os.path.isfile(os.path.join(merged, MERGE_RECORD)):
            found.append((int(match.group(1)), merged))
    return max(found) if found else None


def pick(model, base_dir, merged_root, reports_dir, report_prefix, eval_command="--tags eval"):
    """The model to serve: ``{"kind": base|trained, "step", "model_dir", "name", "why"}``.

    ``model``: "" (the newest evaluated step, else the base model), "base", or a step number; ``base_dir`` the
    base model's folder; ``merged_root`` where the eval stage merges (``global_step_N``); ``reports_dir`` and
    ``report_prefix`` its reports (``<project>-<experiment>``); ``eval_command`` the line that merges and evaluates the step asked for."""
    model = str(model if model is not None else "").strip()
    base = {"kind": "base", "step": 0, "model_dir": base_dir, "name": "base"}
    if model == "base":
        return dict(base, why="the base model, as {model} asks")
    if model == "":
        newest = _newest_evaluated(reports_dir, report_prefix)
        if newest is None:
            return dict(base, why="the base model: no trained step was evaluated yet (%s evaluates one)"
                        % eval_command)
        step, merged = newest
        return {"kind": "trained", "step": step, "model_dir": merged, "name": "trained-step-%d" % step,
                "why": "the newest evaluated step, %d" % step}
    if not model.isdigit() or int(model) < 1:
        raise FieldError("model", "{model} is %r: leave it empty (the newest evaluated step, else the base model), "
                                  "or set base or a saved step's number" % model)
    step = int(model)
    merged = os.path.join(merged_root, "global_step_%d" % step)
    if not os.path.isfile(os.path.join(merged, MERGE_RECORD)):
        raise FieldError("model", "{model} asks for step %d, which is not merged into %s: run %s first (it merges "
                                  "and evaluates that step), or leave {model} empty for the newest evaluated step"
                                  % (step, merged, eval_command))
    return {"kind": "trained", "step": step, "model_dir": merged, "name": "trained-step-%d" % step,
            "why": "step %d, as {model} asks" % step}


def arg_problems(args):
    """What is wrong with the user's extra server arguments (``{args}``): each must be a string; none may say again
    what the stage decides (:data:`TAKEN`)."""
    problems = []
    for arg in args or []:
        if not isinstance(arg, str):
            problems.append("{args}: %r is not a string" % (arg,))
            continue
        flag = arg.split("=", 1)[0]
        if flag in TAKEN:
            problems.append("{args}: %s is decided by the stage (the model by the serve setting, the address and "
                            "port by their own settings); remove it" % flag)
    return problems


def command(python, picked, address, port, profile_args=(), args=()):
    """The server's argv (no shell)."""
    problems = arg_problems(args)
    if problems:
        raise FieldError("args", "; ".join(problems))
    return ([python, "-m", SERVER_MODULE, "--model", picked["model_dir"], "--served-model-name", picked["name"],
             "--host", str(address), "--port", str(int(port))]
            + [str(a) for a in profile_args or []] + [str(a) for a in args or []])


def needs_uvloop_stand_in(python, run=runner.run_command):
    """True when the stack's Python cannot import uvloop (the guide uninstalls it), which vLLM's server module
    imports at its top."""
    try:
        code, _out, _err = run([python, "-c", "import uvloop"], timeout=120)
    except (OSError, runner.TimeoutExpired) as err:
        raise ServeError("the training environment's Python (%s) does not run: %s; run the deps stage first"
                         % (python, err)) from err
    return code != 0


def template_sha256(model_dir):
    """The sha256 of the chat template the model folder's tokenizer carries (``chat_template.jinja``, else
    ``tokenizer_config.json``'s ``chat_template``; UTF-8 text), or None: vLLM's server applies that one."""
    import hashlib
    jinja = os.path.join(model_dir, "chat_template.jinja")
    text = None
    try:
        with open(jinja, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        try:
            with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as handle:
                text = json.load(handle).get("chat_template")
        except (OSError, ValueError, AttributeError):
            text = None
    if not isinstance(text, str):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def info(p, run=runner.run_command):
    """The ``grpo_serve_info`` module's work: the pick, the argv, whether the stand-in is needed, the template."""
    if p.get("model_dir"):  # the eval stage's own model (its vllm-server backend): served as it names it
        picked = {"kind": "given", "step": None, "model_dir": p["model_dir"], "name": p.get("name") or "model",
                  "why": "the model the eval stage evaluates"}
    else:
        picked = pick(p["model"], p["base_dir"], p["merged_root"], p["reports_dir"], p["report_prefix"],
                      p.get("eval_command") or "--tags eval")
    if not os.path.isfile(os.path.join(picked["model_dir"], "config.json")):
        raise ServeError("%s has no config.json: not a model folder to serve (%s)" % (picked["model_dir"],
                                                                                     picked["why"]))
    argv = command(p["python"], picked, p["address"], p["port"], p.get("profile_args") or [], p.get("args") or [])
    return {"changed": False, "model": picked, "command": argv,
            "uvloop_stand_in": needs_uvloop_stand_in(p["python"], run=run),
            "template_sha256": template_sha256(picked["model_dir"])}
