"""The GRPO math reward (roles/assets/files/math_reward.py) against the sample's rules: named cases and the generated
property test (each fast path against the reference: test_reward_fast_paths.py; the deadline, threads, batches and
processes: test_reward_deadline.py; the helpers all three use: grpo_testkit/reward.py).

The reference is benchmarks/reward_baseline.py, a line-by-line transcription of DOMAIN.md ("The sample's reward,
exactly"). Named cases carry totals worked out by hand from those rules; a generated property test compares the
reward with the reference on 20,000 responses across every rule; each fast path is compared with the reference
where it decides.
"""

import pytest
from grpo_testkit.reward import (F1, F2, F3, F4, STEPS, _reference_correct, _reference_key, _reference_scores, full,
                                 generated, reference, reference_scores, reward, score)

# GRPO_REWARD_TIMEOUT_S raised for every test here (tests/unit/assets/conftest.py)
pytestmark = pytest.mark.usefixtures("generous_time_limit")

# (id, response, ground truth, expected total), each total worked out by hand from DOMAIN.md's rules.
NAMED = [
    # the four disagreements the issue names
    ("boxed-only-in-the-reasoning",  # the whole response is parsed: the box inside <think> counts
     "<think>\nStep 1: We solve the equation x + 1 = 4.\nStep 2: Therefore x = \\boxed{3}.\nStep 3: Thus done.\n"
     "</think>\n<answer>\nx is three\n</answer>", "3", 0.7 + F4 + 0.1),
    ("close-then-open-think",  # str.find: </think> at 0 comes before <think>: format 0; reasoning: empty block
     f"</think>\n<think>\n{STEPS}\n</think>\n<answer>\n\\boxed{{3}}\n</answer>", "3", 0.7 + 0.0 + 0.0),
    ("paren-step-lines", full(r"\boxed{3}", "1) We solve it.\n2) Therefore 3.\n3) Thus done."), "3",
     0.7 + F4 + 0.1),
    ("step-text-of-3-characters",  # "sum" is not longer than 3 characters: steps 2 and 3 only, not sequential
     full(r"\boxed{3}", "Step 1: sum\nStep 2: We solve it.\nStep 3: Thus 3."), "3", 0.7 + F4 + 0.0),
    # correctness
    ("equivalent-form", full(r"\boxed{0.25}"), r"\frac{1}{4}", 0.7 + F4 + 0.1),
    ("wrong", full(r"\boxed{4}"), "3", 0.0),
    ("integer-ground-truth", full(r"\boxed{7}"), 7, 0.7 + F4 + 0.1),
    ("plain-text-is-not-extracted", full("The answer is 3."), "3", 0.0),  # no anchor, no LaTeX
    ("final-answer-phrase", "The final answer is $3$.", "3", 0.7 + 0.0 + 0.0),
    ("unit-dropped", full(r"\boxed{5\text{ cm}}"), "5", 0.7 + F4 + 0.1),
    ("empty-gold", full(r"\boxed{3}"), "", 0.0),
    # format
    ("no-tags", r"So $x = \boxed{3}$.", "3", 0.7 + 0.0 + 0.0),
    ("no-newlines-around-tags", f"<think>{STEPS}</think><answer>\\boxed{{3}}</answer>", "3", 0.7 + 0.0 + 0.1),
    ("think-open-twice", f"<think>\n<think>\n{STEPS}\n</think>\n<answer>\n\\boxed{{3}}\n</answer>", "3",
     0.7 + F3 + 0.1),
    ("answer-before-think-close",
     f"<think>\n{STEPS}\n<answer>\n\\boxed{{3}}\n</answer>\n</think>\n", "3", 0.7 + 0.0 + 0.1),
    ("50-before", "x" * 50 + full(r"\boxed{3}"), "3", 0.7 + max(F4 - min(50 * 0.001, 0.1), 0) + 0.1),
    ("500-before-capped", "x" * 500 + full(r"\boxed{3}"), "3", 0.7 + max(F4 - min(500 * 0.001, 0.1), 0) + 0.1),
    ("after-first-close-answer",  # the text after the first </answer> includes the second one
     full(r"\boxed{3}") + "\n</answer>", "3",
     0.7 + max(F3 - min(len("</answer>") * 0.001, 0.1), 0) + 0.1),
    ("whitespace-only-stray", " \n\t " + full(r"\boxed{3}") + "\n\n ", "3", 0.7 + F4 + 0.1),
    # reasoning
    ("starts-at-2", full(r"\boxed{3}", "Step 2: We solve.\nStep 3: Therefore.\nStep 4: Thus."), "3", 0.7 + F4),
    ("skipped-not-reset",  # 1, 2, 5, 3: three sequential (5 is skipped), keywords in two
     full(r"\boxed{3}", "Step 1: We solve.\nStep 2: Therefore.\nStep 5: extra\nStep 3: Done now."), "3",
     0.7 + F4 + 0.1),
    ("bracket-and-dot-forms", full(r"\boxed{3}", "[1] We solve.\n2. thus it\nstep3: done now"), "3",
     0.7 + F4 + 0.1),
    ("keywords-as-substrings", full(r"\boxed{3}", "Step 1: resolved it\nStep 2: summary here"), "3",
     0.7 + F4 + 0.05),
]


@pytest.mark.parametrize(("response", "truth", "expected"), [pytest.param(*case[1:], id=case[0]) for case in NAMED])
def test_named_cases(response, truth, expected):
    assert score(reference, response, truth) == expected
    assert score(reward, response, truth) == expected


# ---------------------------------------------------------------- the generated property test (the
# generator and the kept reference answers: grpo_testkit/reward.py)

def test_equal_to_the_reference_on_20000_generated_responses():
    cases = generated(20_000, seed=15)
    ours = reward.compute_score_batch(["math"] * len(cases), [c[0] for c in cases], [c[1] for c in cases])
    theirs = reference_scores(cases)
    differ = [(cases[i], ours[i], theirs[i]) for i in range(len(cases)) if ours[i] != theirs[i]]
    assert differ == []
    # the test reaches every part of the rules: correct and not, every format and reasoning level
    assert sum(t > 0 for t in theirs) > 4000 and sum(t == 0 for t in theirs) > 4000
    formats = {reference.format_score(text) for text, _ in cases}
    reasons = {reference.reasoning_score(text) for text, _ in cases}
    assert {0.0, F1, F2, F3, F4} <= formats and len(formats) > 10
    assert reasons == {0.0, 0.05, 0.1}


def test_the_kept_reference_answers_are_the_references_own():
    """What the cache hands back equals the reference computed now, on a sample; and the key moves with the cases
    and the function asked, so other cases or another question never read these answers."""
    cases = generated(20_000, seed=15)
    first = reference_scores(cases)  # computed, or read back when test_equal_to... kept it
    sample = list(range(0, len(cases), 97))
    assert [first[i] for i in sample] == _reference_scores([cases[i] for i in sample])
    assert _reference_key(cases, _reference_scores) != _reference_key(cases[:-1], _reference_scores)
    assert _reference_key(cases, _reference_scores) != _reference_key(cases, _reference_correct)


def test_format_and_reasoning_equal_the_reference_on_100000_more():
    """The parts that need no math_verify, on five times as many responses (cheap to run)."""
    for text, _truth in generated(100_000, seed=16):
        assert reward.format_score(text) == reference.format_score(text), text
        assert reward.reasoning_score(text) == reference.reasoning_score(text), text
