"""Each fast path of the GRPO math reward (roles/assets/files/math_reward.py) against the reference where it decides: the
numeric shortcut and the explosive answers (the helpers and the reference: grpo_testkit/reward.py)."""

import random
import time

import pytest
from grpo_testkit.reward import (HANG, STEPS, _reference_correct, engine, full, reference, reference_scores,
                                 reward, score)

# GRPO_REWARD_TIMEOUT_S raised for every test here (tests/unit/assets/conftest.py)
pytestmark = pytest.mark.usefixtures("generous_time_limit")


# ---------------------------------------------------------------- each fast path against the reference


def numeric_form(rng):
    k, m, n = rng.randint(1, 9), rng.choice([2, 3, 5, 6, 7, 10]), rng.randint(2, 9)
    return rng.choice([str(rng.randint(-20, 999)), "0", rf"\frac{{{rng.randint(1, 20)}}}{{{n}}}", rf"{k}\sqrt{{{m}}}",
                       rf"\frac{{{k}\pi}}{{{n}}}", rf"\frac{{\sqrt{{{m}}}}}{{{k}}}", rf"-\frac{{{k}}}{{{m}}}",
                       f"{rng.randint(0, 9)}.{rng.randint(0, 99)}", rf"{k}\pi - {m}", rf"\sqrt{{{k * k * m}}}",
                       str(rng.randint(1, 10**9 - 1))])


def rewrite(rng, text):
    return rng.choice([text + "+0", rf"\frac{{2\cdot ({text})}}{{2}}", rf"({text})\cdot 1", f"-(-({text}))",
                       text.replace(r"\pi", r"\frac{2\pi}{2}"), text, text, text + ".0", "0" + text, " " + text,
                       text.replace(r"\sqrt{", r"\frac{1}{2}\cdot\sqrt{4\cdot "), text.replace(r"\frac", r"\dfrac"),
                       str(round(float(eval(text)), rng.choice([2, 5, 6, 7]))) if text.lstrip("-").isdigit() else text,
                       numeric_form(rng), numeric_form(rng), text + "+1", f"-({text})", text + "+0.001"])


def bracketed_form(rng):
    """A tuple or interval of numbers, as MATH writes them, and its rewrites."""
    a, b = rng.randint(-9, 5), rng.randint(6, 20)
    truth, right, wrong = rng.choice([
        (f"\\left( {a}, \\frac{{\\pi}}{{{b}}} \\right)", f"({a}, \\pi/{b})", f"({a}, \\frac{{\\pi}}{{{b + 1}}})"),
        (f"[{a}, {b})", f"[{a},{b})", f"[{a}, {b}]"), (f"(-\\infty, {a}]", f"(-\\infty,{a}]", f"(-\\infty, {a})"),
        (f"({a}, {b})", f"\\left({a}, {b}\\right)", f"({b}, {a})"),
        (f"({a}, {b}, 1)", f"({a},{b},1)", f"({a}, 1, {b})"),
        (f"[{b}, {a}]", f"[{b},{a}]", f"({b}, {a})"), (f"({a}, {a})", f"({a},{a})", f"[{a}, {a}]"),
    ])
    return truth, rng.choice([right, right, wrong, truth])


def numeric_cases(rng, count):
    """(response, ground truth): plain numbers in the shapes the shortcut takes, and in shapes where math_verify
    takes another match than the box (the shortcut must leave those alone)."""
    out = []
    while len(out) < count:
        if rng.random() < 0.3:
            truth, content = bracketed_form(rng)
        else:
            truth = numeric_form(rng)
            content = rewrite(rng, truth)
        text = rng.choice([full(r"\boxed{%s}" % content), full(r"\boxed{%s}" % content), r"so \boxed{%s}" % content,
                           r"So the answer is $\boxed{%s}$." % content, full(r"$ \boxed{%s} $" % content),
                           r"$x$ so \boxed{%s}" % content, r"$\boxed{%s}$ or $1$" % content,
                           "So the answer is $\n\\boxed{%s}$." % content, r"$$\boxed{%s}$$" % content,
                           full(content), "The answer is " + content, "Answer: " + content + " [x]",
                           full(r"\boxed{%s}" % content, STEPS + "\n[note] x"),
                           full(r"[\boxed{%s}]" % content), full(r"\boxed{%s}" % content) + "}",
                           full(r"\boxed{%s} percent" % content), "final answer: " + r"\boxed{%s}" % content,
                           r"\boxed{%s" % content, full(r"\boxed{%s}" % content, r"we know \frac{1}{2}"),
                           r"\boxed{%s} The final answer is $%d$. I hope" % (content, rng.randint(0, 9)),
                           r"\boxed{%s} so the final answer is \(%d\)" % (content, rng.randint(0, 9)),
                           r"$\boxed{%s}$ and $%d$" % (content, rng.randint(0, 9)),
                           r"\boxed{%s}}" % content, r"x [ \boxed{%s} ] y" % content,
                           r"\boxed{%s} \[ \boxed{%d} \]" % (content, rng.randint(0, 9)),
                           "\\boxed{%s}\nso the final answer is [ %d ] I hope" % (content, rng.randint(0, 9))])
        out.append((text, rng.choice([truth, truth, truth, truth + " ", "+" + truth])))
    return out


def test_the_numeric_shortcut_agrees_with_the_reference_where_it_decides():
    cases = [(text, truth, engine._shortcut_verdict(text, truth))
             for text, truth in numeric_cases(random.Random(3), 6000)]
    decided = [(text, truth, verdict) for text, truth, verdict in cases if verdict is not None]
    theirs = reference_scores([(text, truth) for text, truth, _ in decided], function=_reference_correct)
    assert [case for case, correct in zip(decided, theirs) if case[2] is not correct] == []
    counts = {True: sum(case[2] for case in decided), False: sum(not case[2] for case in decided)}
    assert counts[True] > 800 and counts[False] > 600, counts


# (ground truth, boxed answer) pairs near the shortcut's edges: decimals inside expressions, float rounding
EDGE_PAIRS = [("0.1", r"\frac{1}{10}"), (r"\frac{3}{10}", "0.1+0.2"), ("0.3", "0.1+0.2"), (r"\frac{1}{3}", "0.333333"),
              (r"\frac{1}{3}", "0.33333"), (r"\frac{1}{3}", "0.3333333"), ("1", r"(\sqrt{2}+1)\cdot(\sqrt{2}-1)"),
              (r"\sqrt{6}", r"\sqrt{2}\sqrt{3}"), (r"\frac{5\pi}{6}", r"\frac{5}{6}\pi"), ("4", r"\sqrt{2}^{4}"),
              ("0.0000005", r"\frac{1}{2000000}"), (r"2\frac{1}{2}", "2.5"), (r"\frac{\sqrt{2}}{2}", "0.707107"),
              ("1000", "1,000"), ("-0", "0"), (r"\frac{1}{\pi}", r"\pi^{-1}"), (r"2^{\frac{1}{2}}", r"\sqrt{2}")]


@pytest.mark.parametrize(("truth", "answer"), EDGE_PAIRS)
def test_the_numeric_shortcut_at_its_edges(truth, answer):
    text = full(r"\boxed{%s}" % answer)
    assert engine._shortcut_verdict(text, truth) in (None, reference.correctness(text, truth) == 0.7)
    assert score(reward, text, truth) == score(reference, text, truth)


def test_an_explosive_answer_is_not_correct_at_once_as_in_the_sample():
    """math_verify spends its 5 s limit comparing a power tower and says no; the helper skips that comparison."""
    start = time.monotonic()
    assert score(reward, HANG, "3") == 0.0
    assert time.monotonic() - start < 2.0
    assert score(reference, HANG, "3") == 0.0  # the sample: 5 s, then 0
    # the same tower as the ground truth is compared as usual (its string matches)
    assert score(reward, HANG, "9^{9^{9^{9}}}") == score(reference, HANG, "9^{9^{9^{9}}}")
    # unboxed: after "final answer is" math_verify extracts it; as plain text nothing is extracted at all
    for text in ("<think>\nStep 1: solve it.\n</think>\nThe final answer is $9^{9^{9^{9}}}$.", "So it is 9**9**9."):
        start = time.monotonic()
        assert score(reward, text, "3") == 0.0
        assert time.monotonic() - start < 2.0
        assert score(reference, text, "3") == 0.0


@pytest.mark.parametrize("content", [r"9^{9^{9^{9}}}", r"10^{10^{10}}", r"(10^{6})!", r"1000000!", r"2^{3^{4^{5}}}",
                                     r"(10!)!"])
def test_explosive_wholes(content):
    from math_verify import parse

    parsed = parse(r"\boxed{%s}" % content, extraction_mode="first_match", extraction_config=reference.ANSWER_CONFIG)
    assert engine._explosive(parsed[0]), parsed


@pytest.mark.parametrize("content", [r"2^{10}", r"10^{100}", r"2^{2^{10}}", r"100!", r"3^{3^{3}}", r"x^{10^{10}}",
                                     r"9^{9^{9^{9}}}-9^{9^{9^{9}}}+3", r"2^{-10^{10}}", r"\frac{1}{10^{10^{10}}}"])
def test_not_explosive(content):
    from math_verify import parse

    parsed = parse(r"\boxed{%s}" % content, extraction_mode="first_match", extraction_config=reference.ANSWER_CONFIG)
    assert not engine._explosive(parsed[0]), parsed
