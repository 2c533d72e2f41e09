"""The reward function in the workspace: where it may go, put there keeping an edited copy, and proven to score.

- :func:`plan` (read-only, the assets stage's preflight): the destination's folder is writable, or can be made in
  the workspace; the file defines the function training will call. Each problem names the input to change as
  ``{field}`` (the reward_function module's option: ``dest`` is fed by assets_reward_path, ``name`` by
  assets_reward_name, ``content`` by the file assets_reward_src names).
- :func:`deploy`: scores a right and a wrong answer the way verl calls the function, in a fresh process of the
  training environment's Python, from a staging copy in the state folder; only a file that scores then replaces the
  workspace's (a copy that differs, someone's edit, is kept as ``<file>.bak-<time>``), so a new reward that fails
  leaves the one training uses as it was, byte for byte. The proof is kept (``<state_dir>/reward-check.json``, by
  the file's sha256, the Python and the installed stack's digest), so a rerun with nothing changed does not score
  again.
- The speed engine (``ENGINE_FILE``, the package's ``math_reward_engine.py``, which the rules file loads from its own
  folder) goes with it when given: into the destination's folder, into the staging copy's, and into the proof's
  digest, kept like the rules file when the copy there differs.

Standard library only.
"""

import hashlib
import json
import os
import shutil
import tempfile

from ..common import runner, workspace
from ..common.errors import StageFailure
from ..train.train_rules import defines

# Equal only symbolically, so math_verify itself must work: a string match cannot pass this.
ANSWER_TEXT = ("<think>\nStep 1: solve the equation by expanding.\nStep 2: therefore it is a square.\n</think>\n"
               "<answer>\n\\boxed{ANSWER}\n</answer>")
RIGHT, WRONG, TRUTH = "(x+1)^2", "(x+2)^2", "x^2+2x+1"
ENGINE_FILE = "math_reward_engine.py"  # the name the rules file loads its engine by, from its own folder
ORDER = ("none", "create", "replace")
# The proof asks whether the file scores right, not how fast: the reward's per-response deadline (1 s by default,
# a protection for training's steps) is lifted for it, so a busy host (another stage, a run, a drill beside it)
# cannot fail a correct reward. The whole check still ends within score()'s ``timeout``.
PROOF_ENV = {"GRPO_REWARD_TIMEOUT_S": "60"}
SCORE_SCRIPT = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("custom_module", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
score = getattr(module, sys.argv[2])
text, right, wrong, truth = json.loads(sys.argv[3])
print(json.dumps({"right": score(data_source="check", solution_str=text.replace("ANSWER", right),
                                 ground_truth=truth, extra_info=None),
                  "wrong": score(data_source="check", solution_str=text.replace("ANSWER", wrong),
                                 ground_truth=truth, extra_info=None)}))
"""


class RewardError(StageFailure):
    """What is wrong, naming the input to change as ``{field}``."""


def engine_path(dest):
    """Where the engine goes: beside the rules file."""
    return os.path.join(os.path.dirname(dest), ENGINE_FILE)


def _action(path, text):
    try:
        with open(path, encoding="utf-8") as handle:
            return "none" if handle.read() == text else "replace"
    except OSError:
        return "create"


def plan(text, dest, name, workspace_dir, engine=None):
    """What deploying would do (``none``, ``create`` or ``replace``; with ``engine``, the larger of the two files'),
    or :class:`RewardError`."""
    if engine is not None and os.path.basename(dest) == ENGINE_FILE:
        raise RewardError("{dest}: %s is the name of the reward's engine, which goes beside it: give "
                          "the reward file another name." % dest)
    if not defines(text, name):
        raise RewardError("{name}: the reward file ({content}) defines no %s at module level "
                          "(or does not parse): set {name} to its scoring function." % name)
    folder = os.path.dirname(dest)
    if os.path.isdir(folder):
        ok = os.access(folder, os.W_OK)
    else:
        inside = os.path.abspath(dest).startswith(os.path.abspath(workspace_dir).rstrip("/") + "/")
        ok = not os.path.exists(folder) and inside and os.access(workspace_dir, os.W_OK)
    if not ok:
        raise RewardError("{dest}: %s is not a writable folder (nor one this stage can make in the "
                          "workspace): set {dest} to a path under %s." % (folder, workspace_dir))
    action = _action(dest, text)
    if engine is None:
        return action
    return max(action, _action(engine_path(dest), engine), key=ORDER.index)


def stack_digest(state_dir):
    """What the installed stack is, as the deps stage recorded it (a reinstall changes it)."""
    installed = workspace.read_json(os.path.join(state_dir, "deps-installed.json")) or {}
    deps = workspace.read_json(workspace.record_path(state_dir, "deps")) or {}
    return {"profile_sha256": installed.get("profile_sha256"), "python": deps.get("python"),
            "python_version": deps.get("python_version")}


def score(python, dest, name, timeout=300, shown=None, run=runner.run_command):
    """Score a right and a wrong answer with the file ``dest``, as verl's trainer loads it; ``shown`` names it in the
    problems (a staging copy is named for the file it would become). ``run``: :func:`runner.run_command` or one of
    its shape (it takes ``timeout``: a reward file that never returns must not hold the stage)."""
    argv = [python, "-c", SCORE_SCRIPT, dest, name, json.dumps([ANSWER_TEXT, RIGHT, WRONG, TRUTH])]
    try:
        returncode, stdout, stderr = run(argv, environ_update=PROOF_ENV, timeout=timeout)
    except (OSError, runner.TimeoutExpired) as err:
        raise RewardError("%s: the reward check could not run with %s: %s" % (shown or dest, python, err)) from err
    if returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-12:])
        raise RewardError("%s failed to score an answer with %s ({content} / {name}):\n%s"
                          % (shown or dest, python, tail))
    try:
        scores = json.loads(stdout.strip().splitlines()[-1])
        right, wrong = float(scores["right"]), float(scores["wrong"])
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise RewardError("%s printed no scores (%r): fix the file ({content})"
                          % (shown or dest, stdout[-300:])) from err
    if not (right > 0.9 and wrong == 0.0):
        raise RewardError("%s scored %.3f for a right and %.3f for a wrong answer (want > 0.9 and 0): fix the file "
                          "({content}) or {name}." % (shown or dest, right, wrong))
    return {"right": right, "wrong": wrong}


def score_staged(text, dest, name, python, state_dir, engine=None):
    """Score ``text`` from a staging copy in ``state_dir`` (named as ``dest``, which is not touched; ``engine``
    beside it), then remove the copy: a reward that fails to score never replaces the one there."""
    os.makedirs(state_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix="reward-staging-", dir=state_dir)
    try:
        path = os.path.join(staging, os.path.basename(dest))
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        if engine is not None:
            with open(os.path.join(staging, ENGINE_FILE), "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(engine)
        try:
            return score(python, path, name, shown="the new %s (not put in place: the one there is kept as it was)"
                         % dest)
        except RewardError as err:
            raise RewardError(str(err).replace(path, dest)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def deploy(text, dest, name, python, workspace_dir, state_dir, check_mode=False, engine=None):
    """Prove the file scores (from a staging copy, with ``engine`` beside it), then put them in place (keeping a
    differing copy of each); returns what happened."""
    action = plan(text, dest, name, workspace_dir, engine)
    result = {"deploy": action, "backup": None, "scored": False, "scores": None, "engine_backup": None}
    if check_mode:
        return result
    stamp_path = os.path.join(state_dir, "reward-check.json")
    stamp = {"file": dest, "sha256": hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest(),
             "name": name, "python": python, "stack": stack_digest(state_dir)}
    if engine is not None:
        stamp["engine_sha256"] = hashlib.sha256(engine.encode("utf-8", "surrogateescape")).hexdigest()
    kept = workspace.read_json(stamp_path) or {}
    if {k: kept.get(k) for k in stamp} == stamp and kept.get("scores"):
        result["scores"] = kept["scores"]
    else:
        result["scores"] = score_staged(text, dest, name, python, state_dir, engine)
        result["scored"] = True
    if action != "none":
        if engine is not None:  # first: a rules file asks an engine for an interface every newer one keeps
            _, result["engine_backup"] = workspace.write_text(engine_path(dest), engine, backup=True)
        _, result["backup"] = workspace.write_text(dest, text, backup=True)
    if result["scored"]:
        workspace.write_json(stamp_path, dict(stamp, scores=result["scores"], checked_at=workspace.now_iso()))
    return result


def _read(path):
    """The file's text, or "" when there is none."""
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def module_deploy(p, check_mode, diff=False):
    """What the reward_function module returns for its arguments: the plan (``state: planned``) or the deploy, with
    each file that changes as a diff when ``diff``."""
    files = [(p["dest"], p["content"])]
    if p["engine_content"] is not None:
        files.append((engine_path(p["dest"]), p["engine_content"]))
    before = {path: _read(path) for path, _ in files} if diff else {}
    if p["state"] == "planned":
        return dict(changed=False, backup=None, engine_backup=None,
                    deploy=plan(p["content"], p["dest"], p["name"], p["workspace"], p["engine_content"]))
    result = deploy(p["content"], p["dest"], p["name"], p["python"], p["workspace"], p["state_dir"],
                    check_mode=check_mode, engine=p["engine_content"])
    changed = result["deploy"] != "none"
    if changed and diff:
        result["diff"] = [{"before_header": path, "after_header": path, "before": before[path], "after": text}
                          for path, text in files if before[path] != text]
    return dict(result, changed=changed)
