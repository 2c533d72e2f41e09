"""The sample's reward (the guide's ``new_math_reward.py``), transcribed line by line from ../shared/DOMAIN.md
("The sample's reward, exactly"): the reference every speed-up of roles/assets/files/math_reward.py is tested against,
and the straightforward design benchmarks/reward_throughput.py measures it against.

Each rule below quotes the DOMAIN.md sentence it transcribes. It runs math_verify in this process with
math_verify's own default time limits (signal.alarm: main thread only), parses the ground truth on every call and
caches nothing, as the sample does. Where DOMAIN.md is silent the sample's behaviour is kept: a missing tag has no
position, so it is never "before" another; the text "after </answer>" follows its first occurrence (str.find);
the parts are added as the sample adds them: (correctness + format) + reasoning, no rounding.
"""

import re

from latex2sympy2_extended import NormalizationConfig
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

# "gold = parse("$" + ground_truth + "$", extraction_mode="first_match",
#  extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()])"
GOLD_CONFIG = [LatexExtractionConfig(), ExprExtractionConfig()]
# "LatexExtractionConfig(normalization_config=NormalizationConfig(nits=False, malformed_operators=False,
#  basic_latex=True, boxed="all", units=True), boxed_match_priority=0, try_extract_without_anchor=False)"
ANSWER_CONFIG = [
    LatexExtractionConfig(
        normalization_config=NormalizationConfig(
            nits=False, malformed_operators=False, basic_latex=True, boxed="all", units=True
        ),
        boxed_match_priority=0,
        try_extract_without_anchor=False,
    )
]
# "+0.05 for each of "<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>" occurring exactly once"
MARKERS = ["<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"]
# "matched by the first of ..."
STEP_PATTERNS = [
    r"^(?:step\s*|step|Step\s*|Step)\s*([1-9]\d*)\s*[\:\.]\s*(.+)$",
    r"^([1-9]\d*)\s*[\.\)]\s*(.+)$",
    r"^[\(\[]?\s*([1-9]\d*)\s*[\)\]]\s*(.+)$",
]
# "one of solve, equation, calculate, substitute, therefore, because, thus, sum, product, derivative, integral"
KEYWORDS = ["solve", "equation", "calculate", "substitute", "therefore", "because", "thus", "sum", "product",
            "derivative", "integral"]


def correctness(solution_str, ground_truth):
    """Correctness (0.7 or 0)."""
    # (a number as the ground truth: verl passes what the parquet holds; the sample formats it into the string)
    gold = parse("$" + str(ground_truth) + "$", extraction_mode="first_match", extraction_config=GOLD_CONFIG)
    # "an empty gold gives 0"
    if len(gold) == 0:
        return 0.0
    # "The answer is parsed from the whole solution_str (not only the <answer> part) with
    #  extraction_mode="first_match" and LatexExtractionConfig(...)"
    answer = parse(solution_str, extraction_mode="first_match", extraction_config=ANSWER_CONFIG)
    # "then float(verify(answer, gold)) >= 0.99 gives 0.7"
    return 0.7 if float(verify(answer, gold)) >= 0.99 else 0.0


def format_score(solution_str):
    """Format (max 0.2)."""
    think_open = solution_str.find("<think>")
    think_close = solution_str.find("</think>")
    answer_open = solution_str.find("<answer>")
    answer_close = solution_str.find("</answer>")
    # "0 when the order is wrong, judged on str.find positions: </think> before <think>, or <answer> before
    #  </think>, or </answer> before <answer>"
    if ((think_open != -1 and think_close != -1 and think_close < think_open)
            or (think_close != -1 and answer_open != -1 and answer_open < think_close)
            or (answer_open != -1 and answer_close != -1 and answer_close < answer_open)):
        return 0.0
    score = 0.0
    for marker in MARKERS:
        if solution_str.count(marker) == 1:
            score += 0.05
    # "minus min(0.001 x characters, 0.1) for non-blank text before <think> (when found at index > 0)"
    if think_open > 0:
        before = solution_str[:think_open].strip()
        if before:
            score = max(score - min(len(before) * 0.001, 0.1), 0)
    # "and the same for non-blank text after </answer>; floored at 0"
    if answer_close != -1:
        after = solution_str[answer_close + len("</answer>"):].strip()
        if after:
            score = max(score - min(len(after) * 0.001, 0.1), 0)
    return score


def reasoning_score(solution_str):
    """Reasoning (0.1 / 0.05 / 0)."""
    think_open = solution_str.find("<think>")
    think_close = solution_str.find("</think>")
    if think_open == -1 or think_close == -1:
        return 0.0
    # "the text between the first <think> and </think>, stripped, split on newlines"
    steps = []
    for line in solution_str[think_open + len("<think>"):think_close].strip().split("\n"):
        # "each line stripped and matched by the first of ..."
        line = line.strip()
        if not line:
            continue
        for pattern in STEP_PATTERNS:
            found = re.findall(pattern, line)
            if not found:
                continue
            # "a step counts only when its stripped text is longer than 3 characters"
            text = found[0][1].strip()
            if len(text) > 3:
                steps.append((int(found[0][0]), text))
            break
    # "sequential steps are those whose number equals the next expected number starting at 1 (others are
    #  skipped, not a reset)"
    sequential, expected = 0, 1
    for number, _text in steps:
        if number == expected:
            sequential += 1
            expected += 1
    # "a keyword step contains (case-insensitive substring) one of ..."
    keyword_steps = sum(1 for _number, text in steps if any(word in text.lower() for word in KEYWORDS))
    # ">= 3 sequential and >= 2 keyword steps: 0.1; >= 2 and >= 1: 0.05"
    if sequential >= 3 and keyword_steps >= 2:
        return 0.1
    if sequential >= 2 and keyword_steps >= 1:
        return 0.05
    return 0.0


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """"if correctness < 0.7 it returns 0.0; else correctness + format + reasoning (max 1.0)"."""
    accuracy = correctness(solution_str, ground_truth)
    if accuracy < 0.7:
        return 0.0
    return accuracy + format_score(solution_str) + reasoning_score(solution_str)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None):
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    return [compute_score(source, solution, truth, extra)
            for source, solution, truth, extra in zip(data_sources, solution_strs, ground_truths, extra_infos)]
