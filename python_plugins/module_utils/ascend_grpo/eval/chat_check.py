"""The serve stage's chat check, in plain Python: a few MATH problems asked of the served model through its chat
endpoint, as training asked them, each answer scored by the workspace's reward function as training scores it.

- The problems are the first ``count`` of the assets stage's ``math.json`` (the eval stage's problems); each becomes
  the user message training's rows carry (:func:`ascend_grpo.assets.math_data.verl_row`: the problem and verl's
  instruction) and its ground truth the last ``\\boxed{}`` of the solution.
- ``/v1/chat/completions`` with greedy decoding (temperature 0) and ``max_tokens``: the server applies the model
  folder's chat template (the guide's, which the assets stage installed; :func:`serve_plan.template_sha256` tells).
- The reward: the file and function the assets stage deployed, loaded in a fresh process of the training
  environment's Python (``python``), the way verl's trainer loads it (``compute_score(data_source, solution_str,
  ground_truth, extra_info)``), one process for all the answers.

Standard library only: the ``grpo_chat_check`` module runs it in the training environment.
"""

import json
import os
import time
import urllib.error
import urllib.request

from ..assets import math_data
# the reward's per-answer deadline lifted, as the assets stage's proof does: a busy host must not turn a slow answer
# into a 0
from ..assets.reward_deploy import PROOF_ENV
from ..common import runner
from ..common.errors import FieldError, StageFailure

SCORE_MANY = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("custom_module", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
score = getattr(module, sys.argv[2])
rows = json.loads(sys.argv[3])
out = []
for row in rows:
    value = score(data_source=row["data_source"], solution_str=row["answer"], ground_truth=row["truth"],
                  extra_info=row["extra_info"])
    out.append(float(value["score"] if isinstance(value, dict) else value))
print(json.dumps(out))
"""


class ChatCheckError(StageFailure):
    """The check could not run, or the server did not answer: what and the fix."""


def problems(math_json, count, instruction=math_data.INSTRUCTION):
    """The first ``count`` problems of ``math_json`` that have a boxed answer, as training's rows."""
    try:
        with open(math_json, encoding="utf-8") as handle:
            records = json.load(handle)
    except (OSError, ValueError) as err:
        raise FieldError("math_json", "{math_json} (%s) cannot be read: %s; run the assets stage first"
                         % (math_json, err)) from err
    rows = []
    for index, (key, record) in enumerate(records.items()):
        if len(rows) >= count:
            break
        if math_data.last_boxed(record.get("solution") or "") is None:
            continue
        row = math_data.verl_row(record, "test", index, instruction=instruction)
        row["id"] = key
        rows.append(row)
    if not rows:
        raise FieldError("math_json", "{math_json} (%s) holds no problem with a boxed answer" % math_json)
    return rows


def ask(url, model, messages, max_tokens, timeout=600, opener=urllib.request.urlopen):
    """One chat completion: (text, seconds, completion tokens)."""
    body = json.dumps({"model": model, "messages": messages, "temperature": 0, "max_tokens": int(max_tokens)})
    request = urllib.request.Request(url.rstrip("/") + "/v1/chat/completions", data=body.encode("utf-8"),
                                     headers={"Content-Type": "application/json"})
    started = time.monotonic()
    try:
        with opener(request, timeout=timeout) as response:
            answer = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        detail = err.read().decode("utf-8", "replace")[:500]
        raise ChatCheckError("the server at %s refused the chat request (HTTP %s): %s" % (url, err.code, detail)) \
            from err
    except (OSError, ValueError) as err:
        raise ChatCheckError("the server at %s did not answer the chat request: %s; see its log (the serve job's)"
                             % (url, err)) from err
    seconds = time.monotonic() - started
    try:
        text = answer["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError) as err:
        raise ChatCheckError("the server at %s answered without a message: %r" % (url, str(answer)[:300])) from err
    tokens = (answer.get("usage") or {}).get("completion_tokens")
    return text, seconds, tokens


def score(python, reward_path, reward_name, rows, timeout=600, run=runner.run_command):
    """The reward of each answer, from one fresh process of the training environment's Python."""
    payload = json.dumps([{"data_source": r["data_source"], "answer": r["answer"], "truth": r["truth"],
                           "extra_info": r["extra_info"]} for r in rows])
    argv = [python, "-c", SCORE_MANY, reward_path, reward_name, payload]
    try:
        code, out, err = run(argv, environ_update=PROOF_ENV, timeout=timeout)
    except (OSError, runner.TimeoutExpired) as exc:
        raise ChatCheckError("the reward (%s) could not run with %s: %s" % (reward_path, python, exc)) from exc
    if code != 0:
        raise ChatCheckError("the reward (%s, %s) failed with %s:\n%s" % (
            reward_path, reward_name, python, "\n".join(err.strip().splitlines()[-10:])))
    try:
        scores = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise ChatCheckError("the reward printed no scores: %r" % out[-300:]) from exc
    return [float(s) for s in scores]


def _tail(path, lines=15):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "\n".join(handle.read().splitlines()[-lines:])
    except OSError:
        return "(no log at %s)" % path


def wait_ready(url, seconds, job_dir=None, opener=urllib.request.urlopen, clock=time.monotonic, sleep=time.sleep):
    """Wait until the server answers ``/v1/models`` (its weights are loaded), up to ``seconds``: (the seconds it
    took, the longest context it serves: vLLM's ``max_model_len`` of its first model, or None). A server whose job
    ended (``<job_dir>/exit``, written by the job's wrapper) fails at once with its log's end."""
    started = clock()
    while True:
        try:
            with opener(url.rstrip("/") + "/v1/models", timeout=10) as response:
                if response.status == 200:
                    try:
                        length = (json.loads(response.read().decode("utf-8")).get("data") or [{}])[0] \
                            .get("max_model_len")
                    except (ValueError, AttributeError, IndexError):
                        length = None
                    return round(clock() - started, 1), length
        except (OSError, ValueError):
            pass
        if job_dir and os.path.exists(os.path.join(job_dir, "exit")):
            with open(os.path.join(job_dir, "exit"), encoding="utf-8") as handle:
                status = handle.read().strip()
            raise ChatCheckError("the server's job ended (exit status %s) before it answered at %s; the end of its "
                                 "log (%s):\n%s" % (status, url, os.path.join(job_dir, "serve.log"),
                                                    _tail(os.path.join(job_dir, "serve.log"))))
        if clock() - started >= seconds:
            raise ChatCheckError("the server did not answer at %s within %d s ({wait_seconds}); it goes on loading: "
                                 "see its log (%s), and raise {wait_seconds} if it is only slow"
                                 % (url, seconds, os.path.join(job_dir or ".", "serve.log")))
        sleep(3)


def check(p, run=runner.run_command, opener=urllib.request.urlopen):
    """The ``grpo_chat_check`` module's work: wait for the server, ask, score, and the lines a person reads."""
    ready_s, max_model_len = wait_ready(p["url"], p.get("wait_seconds") or 0, p.get("job_dir"), opener=opener)
    if not p["count"]:
        return {"changed": False, "answers": [], "lines": [],
                "summary": {"problems": 0, "ready_seconds": ready_s, "max_model_len": max_model_len}}
    rows = problems(p["math_json"], p["count"], p.get("instruction") or math_data.INSTRUCTION)
    asked = []
    for row in rows:
        text, seconds, tokens = ask(p["url"], p["model"], row["prompt"], p["max_tokens"], opener=opener)
        asked.append({"id": row["id"], "problem": row["problem"], "truth": row["reward_model"]["ground_truth"],
                      "answer": text, "seconds": round(seconds, 3), "completion_tokens": tokens,
                      "data_source": row["data_source"], "extra_info": row["extra_info"]})
    scores = score(p["python"], p["reward_path"], p["reward_name"], asked, run=run)
    lines = []
    for item, value in zip(asked, scores):
        item["score"] = value
        del item["extra_info"]
        answer = " ".join(item["answer"].split())
        lines.append("%s: %.1f s, %s tokens, score %s (truth %s): %s" % (
            item["id"], item["seconds"], item["completion_tokens"] if item["completion_tokens"] is not None else "?",
            "%g" % value, item["truth"], (answer[:160] + " ...") if len(answer) > 160 else answer))
    total = sum(i["seconds"] for i in asked)
    tokens = sum(i["completion_tokens"] or 0 for i in asked)
    summary = {"ready_seconds": ready_s, "max_model_len": max_model_len, "problems": len(asked), "score_sum": sum(scores), "seconds": round(total, 3),
               "tokens_per_second": round(tokens / total, 1) if total > 0 else None}
    return {"changed": False, "answers": asked, "summary": summary, "lines": lines}
