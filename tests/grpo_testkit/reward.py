"""The GRPO math reward (roles/assets/files/math_reward.py) and its reference, for the reward's tests
(test_reward.py, test_reward_fast_paths.py, test_reward_deadline.py): the reward loaded as verl loads it, the
reference (benchmarks/reward_baseline.py, a line-by-line transcription of DOMAIN.md's "The sample's reward,
exactly"), the response builders, the generated responses and the reference's answers kept in the tests' cache."""

import contextlib
import functools
import importlib.util
import os
import random
import sys

from grpo_testkit import ROOT, TEST_CACHE

REWARD_FILE = os.path.join(ROOT, "roles", "assets", "files", "math_reward.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import reward_baseline as reference  # noqa: E402


def load_reward():
    """Load the file as verl does: by path, under the module name custom_module."""
    spec = importlib.util.spec_from_file_location("custom_module", REWARD_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    return module


reward = load_reward()
engine = reward.engine()  # the speed engine beside it (math_reward_engine.py), as the rules file loads it

# The sample's arithmetic, spelled out: format points are added 0.05 at a time, then correctness + format +
# reasoning in that order.
F1, F2, F3, F4 = 0.05, 0.05 + 0.05, 0.05 + 0.05 + 0.05, 0.05 + 0.05 + 0.05 + 0.05
STEPS = "Step 1: We solve the equation x + 1 = 4.\nStep 2: Subtract 1 from both sides.\nStep 3: Therefore x = 3."


def full(answer, think=STEPS):
    """All four markers once, in order, no stray text: format 0.2."""
    return f"<think>\n{think}\n</think>\n<answer>\n{answer}\n</answer>"


HANG = full(r"\boxed{9^{9^{9^{9}}}}")


def score(module, response, truth):
    return module.compute_score(data_source="math", solution_str=response, ground_truth=truth, extra_info=None)


TRUTHS = [  # (ground truth, right answers, wrong answers)
    ("3", ["3", "3.0", "x = 3", r"\frac{6}{2}"], ["4", "-3", "33"]),
    ("-12", ["-12", r"-\frac{24}{2}"], ["12", "-11"]),
    ("0", ["0", "0.0"], ["1"]),
    (r"\frac{1}{4}", ["0.25", r"\frac14", r"\dfrac{1}{4}", "1/4"], [r"\frac{1}{3}", "0.2"]),
    (r"2\sqrt{2}", [r"\sqrt{8}", r"2\sqrt{2}"], [r"3\sqrt{2}", r"\sqrt{2}"]),
    (r"\frac{\pi}{2}", [r"\frac{\pi}{2}", r"\frac{1}{2}\pi"], [r"\pi"]),
    ("[2, 5)", ["[2,5)"], ["[2, 5]", "(2, 5)"]),
    (r"\left( 3, \frac{\pi}{2} \right)", [r"(3, \frac{\pi}{2})", r"(3, \pi/2)"], [r"(\frac{\pi}{2}, 3)"]),
    (r"\text{Monday}", [r"\text{Monday}"], [r"\text{Tuesday}"]),
    ("x^2+1", ["1 + x^2", "x^2+1"], ["x^2-1"]),
    ("5", [r"5\text{ cm}", "5"], ["6"]),
    ("1000", ["1000", "1,000"], ["100"]),
]
KEYWORD_TEXTS = ["We solve the equation for x.", "Calculate the product of the roots.", "Therefore it holds.",
                 "This is true because x > 0.", "Thus the sum is even.", "Take the derivative.", "Substitute x.",
                 "The INTEGRAL converges.", "resolve", "Summing all terms."]
PLAIN_TEXTS = ["Look at the figure.", "Simplify both sides.", "abc", "ok", "Write it down.", "Done here.", "x+1",
               "Draw a picture of it."]
STEP_FORMS = ["Step {n}: {t}", "step {n}. {t}", "Step{n}: {t}", "STEP {n}: {t}", "{n}. {t}", "{n}) {t}", "({n}) {t}",
              "[{n}] {t}", "{n} ) {t}", "  Step {n} : {t}  ", "Step {n}:{t}", "{n}.{t}", "Schritt {n}: {t}",
              "\tstep {n}: {t}", "Step {n}: {t}\r"]
STRAY = ["", "", "", " ", "\n", "Sure.", "Let me think about this carefully before answering. ",
         "x" * 120, "\t\n  ", "é" * 7]


def steps_block(rng):
    numbers = rng.choice([[1, 2, 3], [1, 2, 3, 4], [1, 2], [2, 3, 4], [1, 3, 2], [1, 1, 2, 3], [1, 2, 5, 3],
                          [1], [], [1, 2, 3, 1, 2], [10, 11, 12], [0, 1, 2]])
    lines = []
    for n in numbers:
        text = rng.choice(KEYWORD_TEXTS if rng.random() < 0.5 else PLAIN_TEXTS)
        lines.append(rng.choice(STEP_FORMS).format(n=n, t=text))
        if rng.random() < 0.3:
            lines.append(rng.choice(["", "  ", "Some more words.", "3.5 is half of 7.", "1.5) is not a step"]))
    return "\n".join(lines)


def answer_form(rng, truth, rights, wrongs):
    value = rng.choice(rights) if rng.random() < 0.6 else rng.choice(wrongs)
    return rng.choice([
        r"\boxed{%s}" % value, r"\boxed{%s}" % value, r"\boxed{%s}" % value, "$%s$" % value,
        "The final answer is $%s$." % value, r"\[ \boxed{%s} \]" % value, value, "answer: $%s$" % value,
        r"\boxed{%s} and \boxed{%s}" % (value, rng.choice(wrongs)), r"\boxed{ %s }" % value,
        r"x = \boxed{%s}." % value, r"\fbox{%s}" % value, r"\boxed{%s}%%" % value,
    ])


def response(rng):
    truth, rights, wrongs = rng.choice(TRUTHS)
    think = steps_block(rng)
    answer = answer_form(rng, truth, rights, wrongs)
    if rng.random() < 0.2:  # the answer inside the reasoning too, or only there
        think += "\n" + answer_form(rng, truth, rights, wrongs)
        if rng.random() < 0.5:
            answer = rng.choice(["see above", "", "x is it"])
    tags = rng.choice([
        ("<think>\n", "\n</think>\n", "<answer>\n", "\n</answer>"), ("<think>\n", "\n</think>\n", "<answer>\n",
                                                                    "\n</answer>"),
        ("<think>", "</think>", "<answer>", "</answer>"), ("<think>\n", "\n</think>\n", "", ""),
        ("", "", "<answer>\n", "\n</answer>"), ("<think>\n", "", "<answer>\n", "\n</answer>"),
        ("<think>\n", "\n</think>\n", "<answer>\n", ""), ("<THINK>\n", "\n</THINK>\n", "<answer>\n", "\n</answer>"),
        ("<think>\n<think>\n", "\n</think>\n", "<answer>\n", "\n</answer>\n</answer>"),
    ])
    parts = [tags[0] + think + tags[1], tags[2] + answer + tags[3]]
    order = rng.random()
    if order < 0.1:
        parts.reverse()
    elif order < 0.15:
        parts = ["\n</think>\n" + parts[0], parts[1]]
    elif order < 0.2:
        parts = [parts[0], parts[1] + "\n</think>\n"]
    text = rng.choice(STRAY) + "\n".join(parts) + rng.choice(STRAY)
    if rng.random() < 0.03:
        text = text.replace("\n", "\r\n")
    return text, truth


def generated(count, seed):
    rng = random.Random(seed)
    return [response(rng) for _ in range(count)]


# The reference's own math_verify limits (5 s of wall time per parse and per verify, signal.alarm) are the
# sample's, and the named tests keep them (an explosive answer: 5 s, then 0). Where the reference answers for a
# property test, they are raised: a loaded machine (the unit tests beside molecule on two cores, at 1,308 s instead
# of 511) once stretched a parse of "\boxed{(3, \frac{\pi}{2})}" past 5 s and the reference said 0.0 where the sample
# says 0.8; what those tests compare is the verdict, and the generated cases hold no answer that is slow to judge.
PATIENT_S = 120


@contextlib.contextmanager
def _patient_reference():
    parse, verify = reference.parse, reference.verify
    reference.parse = functools.partial(parse, parsing_timeout=PATIENT_S)
    reference.verify = functools.partial(verify, timeout_seconds=PATIENT_S)
    try:
        yield
    finally:
        reference.parse, reference.verify = parse, verify


def _reference_scores(cases):
    with _patient_reference():
        return [score(reference, text, truth) for text, truth in cases]


def _reference_correct(cases):
    with _patient_reference():
        return [reference.correctness(text, truth) == 0.7 for text, truth in cases]


# The reference's answers are kept on disk between runs (in the tests' cache, beside the downloads): it is the
# slowest part of the unit tests (about 70 core-seconds for the 20,000 responses) and a pure function of its inputs.
# The key holds everything the answers depend on: the cases themselves, the function asked, the reference's source
# and the versions of what it calls, so a change to any of them computes them again. The reward under test always
# runs in full.
REFERENCE_DEPENDS = ("math-verify", "latex2sympy2_extended", "sympy", "antlr4-python3-runtime")


def _reference_key(cases, function):
    import hashlib
    import importlib.metadata
    import json

    digest = hashlib.sha256()
    with open(reference.__file__, "rb") as source:
        digest.update(source.read())
    versions = {name: importlib.metadata.version(name) for name in REFERENCE_DEPENDS}
    digest.update(json.dumps([function.__name__, PATIENT_S, sys.version, versions, cases]).encode())
    return digest.hexdigest()


def reference_scores(cases, processes=2, function=_reference_scores):
    """The reference's scores (or another ``function`` of it), computed in ``processes`` forked processes
    (math_verify's time limits use signal.alarm, so each runs the reference in its own main thread), or read back
    from the test cache when these cases were asked of this reference before."""
    import json
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    kept = os.path.join(TEST_CACHE, "reward-reference", _reference_key(cases, function) + ".json")
    if os.path.isfile(kept):
        with open(kept) as answers:
            out = json.load(answers)
        if len(out) == len(cases):
            return out
    chunks = [cases[i::processes] for i in range(processes)]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(function, chunks))
    out = [None] * len(cases)
    for i, part in enumerate(parts):
        out[i::processes] = part
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    written = "%s.%d.part" % (kept, os.getpid())
    with open(written, "w") as answers:
        json.dump(out, answers)
    os.replace(written, kept)
    return out
