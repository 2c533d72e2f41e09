"""The straightforward GRPO math reward: the reference for files/reward/math_reward.py.

Same scoring rules as files/reward/math_reward.py (its docstring states them), implemented the obvious way:
math_verify parses the ground truth and the answer and verifies them on every call, with math_verify's
default timeouts (signal.alarm, so only in the main thread); regular expressions for the format and the
reasoning parts; no caching. The tests compare the fast version with this one, and
benchmarks/reward_throughput.py measures both.
"""

import re

from latex2sympy2_extended import NormalizationConfig
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

EXTRACTION_CONFIG = [
    LatexExtractionConfig(
        boxed_match_priority=0,
        normalization_config=NormalizationConfig(
            basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="all", equations=False
        ),
    ),
    ExprExtractionConfig(),
]
MAX_ANSWER_CHARS = 20_000
MARKERS = ["<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"]
STEP_RE = re.compile(r"^[ \t]*(?:[Ss]tep[ \t]+([0-9]{1,9})[ \t]*:|([0-9]{1,9})\.(?![0-9])|\(([0-9]{1,9})\))", re.M)
KEYWORD_RE = re.compile(
    r"\b(?:solv|equation|calculat|substitut|therefore|because|thus|sum|product|derivative|integral)", re.I
)


def answer_text(response):
    close = response.rfind("</answer>")
    start = response.rfind("<answer>", 0, close) if close >= 0 else -1
    return response[start + len("<answer>"):close] if start >= 0 else response


def is_correct(response, ground_truth):
    text = answer_text(response)
    if not ground_truth.strip() or len(text) > MAX_ANSWER_CHARS:
        return False
    gold = parse("\\boxed{" + ground_truth + "}", extraction_config=EXTRACTION_CONFIG)
    answer = parse(text, extraction_config=EXTRACTION_CONFIG)
    return verify(gold, answer)


def format_score(response):
    counts = [response.count(marker) for marker in MARKERS]
    positions = [response.find(marker) for marker, count in zip(MARKERS, counts) if count > 0]
    if positions != sorted(positions):
        return 0.0
    score = 0.05 * sum(1 for count in counts if count == 1)
    if "<think>" in response:
        score -= min(0.1, 0.001 * len(response[:response.find("<think>")].strip()))
    if "</answer>" in response:
        score -= min(0.1, 0.001 * len(response[response.rfind("</answer>") + len("</answer>"):].strip()))
    return max(0.0, score)


def reasoning_score(response):
    start = response.find("<think>")
    end = response.find("</think>", start + len("<think>")) if start >= 0 else -1
    if end < 0:
        return 0.0
    block = response[start + len("<think>"):end]
    steps = list(STEP_RE.finditer(block))
    run = keyword_steps = 0
    for i, step in enumerate(steps):
        number = int(next(group for group in step.groups() if group is not None))
        if number != run + 1:
            break
        run += 1
        text = block[step.end():steps[i + 1].start() if i + 1 < len(steps) else len(block)]
        if KEYWORD_RE.search(text):
            keyword_steps += 1
    if run >= 3 and keyword_steps >= 2:
        return 0.1
    if run >= 2 and keyword_steps >= 1:
        return 0.05
    return 0.0


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    try:
        if isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool):
            ground_truth = str(ground_truth)
        if not isinstance(solution_str, str) or not isinstance(ground_truth, str):
            return 0.0
        if not is_correct(solution_str, ground_truth):
            return 0.0
        return round(0.7 + format_score(solution_str) + reasoning_score(solution_str), 6)
    except Exception:
        return 0.0


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None):
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    return [compute_score(source, solution, truth, extra)
            for source, solution, truth, extra in zip(data_sources, solution_strs, ground_truths, extra_infos)]
