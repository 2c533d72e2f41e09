"""GRPO reward for MATH answers: the rules, scoring exactly as the guide's sample (``new_math_reward.py``) does.

This is the file to edit. verl loads it with ``custom_reward_function.path`` (name ``compute_score``; the batch
reward manager can use ``compute_score_batch``). Whether an answer is correct (math_verify, made fast, with a
deadline, in helper processes) is decided by the engine beside it, ``math_reward_engine.py``, which this file loads
from its own folder (verl loads this file by path, so that folder is not importable by name). The assets stage
deploys and proves both; an edit here is kept. The engine calls ``total_score(response, correct)`` for each
response; ``ENGINE_API`` names the interface this file uses (the engine's docstring describes it).

Scoring rules (../shared/DOMAIN.md, "The sample's reward, exactly")
===================================================================
``compute_score(data_source, solution_str, ground_truth, extra_info=None)``: 0.0 unless the answer is correct,
else ``(0.7 + format) + reasoning``, added in that order, as the sample adds them (so a perfect response scores
0.9999999999999999, as in the sample).

Correctness (0.7 or 0)
    math_verify's verdict on the whole response (a ``\\boxed{}`` inside ``<think>`` counts) against the ground
    truth, with the sample's parse settings (the engine's docstring quotes them), and a deadline per response
    (``GRPO_REWARD_TIMEOUT_S`` seconds, default 1.0: past it, not correct).
Format (at most 0.2)
    0 when, by ``str.find`` positions of tags that are there, ``</think>`` comes before ``<think>``, ``<answer>``
    before ``</think>`` or ``</answer>`` before ``<answer>``. Else 0.05 for each of ``"<think>\\n"``,
    ``"\\n</think>\\n"``, ``"\\n<answer>\\n"``, ``"\\n</answer>"`` that occurs exactly once, minus
    ``min(0.001 * characters, 0.1)`` for the stripped text before ``<think>`` (when it is found past index 0) and
    the same for the stripped text after the first ``</answer>``, floored at 0 after each.
Reasoning (0.1, 0.05 or 0)
    The text between the first ``<think>`` and the first ``</think>``, stripped, split on ``"\\n"``; each stripped
    line is matched by the first of ``STEP_PATTERNS`` that matches; it is a step when its stripped text is longer
    than 3 characters. Sequential steps: those numbered as the next expected number, from 1 (others are skipped,
    not a reset). Keyword steps: steps whose lower-cased text contains one of ``KEYWORDS``. 3 sequential and 2
    keyword steps give 0.1; 2 and 1 give 0.05.
Where this differs from the sample, on purpose
    It never raises: a response that is not a str, or a ground truth that is neither a str nor a number, scores
    0.0 (the sample raises and stops the training step). A number is used as ``str(number)``, as the sample's
    f-string does.
"""

import importlib.util
import os
import re
import sys
import threading
import zlib

ENGINE_FILE = "math_reward_engine.py"
ENGINE_API = 1
CORRECT = 0.7
MARKERS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
STEP_PATTERNS = tuple(re.compile(pattern) for pattern in (
    r"^(?:step\s*|step|Step\s*|Step)\s*([1-9]\d*)\s*[\:\.]\s*(.+)$",
    r"^([1-9]\d*)\s*[\.\)]\s*(.+)$",
    r"^[\(\[]?\s*([1-9]\d*)\s*[\)\]]\s*(.+)$",
))
KEYWORDS = ("solve", "equation", "calculate", "substitute", "therefore", "because", "thus", "sum", "product",
            "derivative", "integral")


def format_score(response):
    think_open = response.find("<think>")
    think_close = response.find("</think>")
    answer_open = response.find("<answer>")
    answer_close = response.find("</answer>")
    if ((think_open != -1 and think_close != -1 and think_close < think_open)
            or (think_close != -1 and answer_open != -1 and answer_open < think_close)
            or (answer_open != -1 and answer_close != -1 and answer_close < answer_open)):
        return 0.0
    score = 0.0
    for marker in MARKERS:
        if response.count(marker) == 1:
            score += 0.05
    if think_open > 0:
        before = response[:think_open].strip()
        if before:
            score = max(score - min(len(before) * 0.001, 0.1), 0)
    if answer_close != -1:
        after = response[answer_close + len("</answer>"):].strip()
        if after:
            score = max(score - min(len(after) * 0.001, 0.1), 0)
    return score


def reasoning_score(response):
    think_open = response.find("<think>")
    think_close = response.find("</think>")
    if think_open == -1 or think_close == -1:
        return 0.0
    sequential, keyword_steps = 0, 0
    for line in response[think_open + len("<think>"):think_close].strip().split("\n"):
        line = line.strip()
        if not line:
            continue
        for pattern in STEP_PATTERNS:
            found = pattern.match(line)
            if found is None:
                continue
            text = found.group(2).strip()
            if len(text) > 3:
                if int(found.group(1)) == sequential + 1:
                    sequential += 1
                lowered = text.lower()
                if any(word in lowered for word in KEYWORDS):
                    keyword_steps += 1
            break
    if sequential >= 3 and keyword_steps >= 2:
        return 0.1
    if sequential >= 2 and keyword_steps >= 1:
        return 0.05
    return 0.0


def total_score(response, correct):
    """The score of one response (a str), given whether its answer is correct: what the engine calls."""
    if not correct:
        return 0.0
    return CORRECT + format_score(response) + reasoning_score(response)


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None):
    return engine().score_batch(solution_strs, ground_truths, total_score)


# ---------------------------------------------------------------- loading the engine beside this file

_ENGINE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), ENGINE_FILE)  # now: the path may be relative
# one module per engine file, so every copy of this file loaded from one folder shares its helper processes
_ENGINE_NAME = "math_reward_engine_%08x" % zlib.crc32(_ENGINE_PATH.encode("utf-8", "surrogateescape"))
_engine_lock = threading.Lock()


def engine():
    """The engine in this file's folder, loaded by path once per process and kept in ``sys.modules``."""
    module = sys.modules.get(_ENGINE_NAME)
    if module is not None:
        return module
    with _engine_lock:
        module = sys.modules.get(_ENGINE_NAME)
        if module is None:
            if not os.path.isfile(_ENGINE_PATH):
                raise ImportError("%s needs its engine beside it: %s is missing (the assets stage deploys both)"
                                  % (os.path.abspath(__file__), _ENGINE_PATH))
            spec = importlib.util.spec_from_file_location(_ENGINE_NAME, _ENGINE_PATH)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if ENGINE_API not in getattr(module, "API_VERSIONS", ()):
                raise ImportError("%s offers interfaces %s; this reward needs %d: deploy a matching engine"
                                  % (_ENGINE_PATH, getattr(module, "API_VERSIONS", "none"), ENGINE_API))
            sys.modules[_ENGINE_NAME] = module
    return module


engine()  # now, so a missing or mismatched engine fails when verl loads this file, not in the first step
