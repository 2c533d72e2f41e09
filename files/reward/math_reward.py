"""GRPO reward for MATH answers: correctness (math_verify), answer format and numbered reasoning.

verl loads this one file with ``custom_reward_function.path`` (name ``compute_score``; the batch reward
manager can use ``compute_score_batch``). It imports only the standard library; the symbolic checks run
math_verify (with sympy and latex2sympy2_extended) in helper processes.

Scoring rules
=============
``compute_score(data_source, solution_str, ground_truth, extra_info=None)`` returns a float in [0, 1]:
``round(correctness + format + reasoning, 6)`` when the answer is correct, otherwise 0.0. It never raises:
a ``solution_str`` that is not a str, or a ``ground_truth`` that is neither a str nor a number, gives 0.0
(a number is used as ``str(number)``). ``data_source`` and ``extra_info`` are not used.

Correctness (0.7)
    Answer text: when the response contains ``</answer>`` with an ``<answer>`` before it, the text between
    the last ``</answer>`` and the last ``<answer>`` before it; otherwise the whole response. The answer is
    correct iff the ground truth is not blank, the answer text has at most 20,000 characters
    (``MAX_ANSWER_CHARS``) and ``verify(gold, answer)`` holds, with
    ``gold = parse("\\boxed{" + ground_truth + "}", EXTRACTION_CONFIG)`` and
    ``answer = parse(answer_text, EXTRACTION_CONFIG)``, where ``EXTRACTION_CONFIG`` is
    ``[LatexExtractionConfig(boxed_match_priority=0, normalization_config=NormalizationConfig(
    basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="all", equations=False)),
    ExprExtractionConfig()]`` and the other arguments of math_verify 0.9.0's ``parse`` and ``verify`` keep
    their defaults, except the time limits: a math_verify step that takes too long counts as not correct.
    Here each step (the ground truth's parse, once per ground truth; an answer's parse plus verify) gets
    ``GRPO_REWARD_TIMEOUT_S`` seconds of wall time (environment variable, default 1.0); the baseline
    (benchmarks/reward_baseline.py) keeps math_verify's own 5 s limits.
    Examples: 0.25 = \\frac{1}{4}, \\dfrac{1}{4} = \\frac14, 2\\sqrt{2} = \\sqrt{8}, x = 3 is 3, 0.333333 = 1/3
    (floats compare to 6 decimals) but 0.33333 is not.

Format (0.2)
    Markers ``"<think>\\n"``, ``"\\n</think>\\n"``, ``"\\n<answer>\\n"``, ``"\\n</answer>"``, counted as
    non-overlapping occurrences (``str.count``). Each marker that occurs exactly once scores 0.05. The first
    occurrences of the markers that occur at all must come in that order (think-open, think-close,
    answer-open, answer-close), otherwise the format score is 0. Stray text: the characters before the
    first ``<think>`` and those after the last ``</answer>`` (each part with surrounding whitespace
    stripped) cost 0.001 each, at most 0.1 per part; without ``<think>`` there is no "before" penalty,
    without ``</answer>`` no "after" penalty. Format score = max(0, marker points - penalties).

Reasoning (0.1)
    The think block is the text between the first ``<think>`` and the first ``</think>`` after it; without
    one the reasoning score is 0. Step lines are the lines of the block that match
    ``^[ \\t]*(?:[Ss]tep[ \\t]+N[ \\t]*:|N\\.(?![0-9])|\\(N\\))`` with N one to nine ASCII digits. A step's
    text runs from the end of its label to the start of the next step line (or the end of the block).
    The run: step lines taken in order while their numbers are 1, 2, 3, ...; it ends at the first step line
    whose number is not the next one (so steps starting at 2 give a run of 0). Keyword steps: steps of the
    run whose text contains, case-insensitively, a word starting with one of the stems ``solv``,
    ``equation``, ``calculat``, ``substitut``, ``therefore``, ``because``, ``thus``, ``sum``, ``product``,
    ``derivative``, ``integral`` (so "solving", "equations", "calculation", "summing" count; "assume" does
    not). Run >= 3 and keyword steps >= 2 give 0.1; run >= 2 and keyword steps >= 1 give 0.05; else 0.

How it is fast and safe
=======================
- math_verify runs in helper processes (``python math_reward.py --worker``, started with subprocess: this
  works from any thread and whatever name the module was loaded under), up to ``MAX_WORKERS`` (2) for
  ``compute_score_batch``, with math_verify's own timeouts off (they use ``signal.alarm``, which fails
  outside the main thread). A request past the deadline, or whose helper dies on it, is not correct; that
  helper is killed and a new one starts at once. Helpers exit when their parent does (end of input, parent
  check) and are killed at interpreter exit (``shutdown()``).
- Verdicts are cached per (ground truth, answer text), so repeated answers in a GRPO group cost one check,
  and the ground truth's parse outcome per ground truth.
- Cheap checks first, each used only where it gives math_verify's verdict:
  - extraction: when the answer text holds exactly one ``\\boxed{...}`` and nothing that could make
    math_verify extract something else (see ``_single_boxed``), or is only a plain number, math_verify
    extracts exactly that content; the wrapped ground truth likewise. Otherwise math_verify decides.
  - identical contents that contain a digit are correct (math_verify compares its own normalized strings).
  - contents that are plain numbers (integers, decimals, ``\\frac``, ``\\sqrt``, ``\\pi``, + - * / ^,
    read as latex2sympy reads them, see ``_Reader``), ``x = <number>``, or tuples/intervals of numbers:
    not correct when a position differs by more than 1e-5 (relative) or two intervals differ in openness;
    correct when every position has the same exact value in Q(pi, square roots), unless a decimal sits
    inside an expression (math_verify says 3/10 != 0.1+0.2). In between (e.g. 0.333333 against 1/3)
    math_verify decides. tests/test_reward.py checks these verdicts against math_verify on random forms.
  - a boxed content whose evaluation would blow up (power towers such as 9^{9^{9^{9}}}, factorials of more
    than 10^5) is not correct without asking math_verify, which would only time out on it (``_Bounder``).
- The answer text is capped at ``MAX_ANSWER_CHARS``; the format and reasoning checks are linear scans.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import math
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any, NamedTuple

logger = logging.getLogger(__name__)

_THIS_FILE = os.path.abspath(__file__)  # now: verl may pass a relative path and the working directory may change
MAX_ANSWER_CHARS = 20_000
DEFAULT_TIMEOUT_S = 1.0
STARTUP_TIMEOUT_S = 120.0
MAX_WORKERS = 2
MARKERS = ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>")
STEP_RE = re.compile(r"^[ \t]*(?:[Ss]tep[ \t]+([0-9]{1,9})[ \t]*:|([0-9]{1,9})\.(?![0-9])|\(([0-9]{1,9})\))", re.M)
KEYWORD_RE = re.compile(
    r"\b(?:solv|equation|calculat|substitut|therefore|because|thus|sum|product|derivative|integral)", re.I
)


# ---------------------------------------------------------------- the rules that need no math_verify


def answer_text(response: str) -> str:
    close = response.rfind("</answer>")
    start = response.rfind("<answer>", 0, close) if close >= 0 else -1
    return response[start + len("<answer>"):close] if start >= 0 else response


def format_score(response: str) -> float:
    counts = [response.count(marker) for marker in MARKERS]
    firsts = [response.find(marker) for marker, count in zip(MARKERS, counts) if count]
    if any(a > b for a, b in zip(firsts, firsts[1:])):
        return 0.0
    score = 0.05 * counts.count(1)
    think = response.find("<think>")
    if think >= 0:
        score -= min(0.1, 0.001 * len(response[:think].strip()))
    close = response.rfind("</answer>")
    if close >= 0:
        score -= min(0.1, 0.001 * len(response[close + len("</answer>"):].strip()))
    return max(0.0, score)


def reasoning_score(response: str) -> float:
    start = response.find("<think>")
    end = response.find("</think>", start + len("<think>")) if start >= 0 else -1
    if end < 0:
        return 0.0
    block = response[start + len("<think>"):end]
    steps = list(STEP_RE.finditer(block))
    run = keyword_steps = 0
    for i, step in enumerate(steps):
        if int(step.group(1) or step.group(2) or step.group(3)) != run + 1:
            break
        run += 1
        if KEYWORD_RE.search(block, step.end(), steps[i + 1].start() if i + 1 < len(steps) else len(block)):
            keyword_steps += 1
    if run >= 3 and keyword_steps >= 2:
        return 0.1
    if run >= 2 and keyword_steps >= 1:
        return 0.05
    return 0.0


# ---------------------------------------------------------------- caches


class _LRU:
    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_verdicts = _LRU(200_000)  # key digest -> bool
_golds = _LRU(20_000)  # ground truth -> "ok" | "empty" | "timeout"


def clear_caches() -> None:
    """Forget cached verdicts and ground truth outcomes (for benchmarks and tests)."""
    _verdicts.clear()
    _golds.clear()


def _key(ground_truth: str, text: str) -> bytes:
    data = (ground_truth + "\0" + text).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


# ---------------------------------------------------------------- cheap verdicts


# Anything that could make one of math_verify's priority-0 patterns extract something other than the boxed
# content: another box, a "final answer is ... I hope" phrase, a percent suffix after a math environment.
_UNSAFE_TEXT_RE = re.compile(r"\\fbox|final answer|percent|pct|%", re.I)
# What the boxed content must not contain so that every math environment holding the box holds all of it.
_UNSAFE_CONTENT_RE = re.compile(r"[$\n]|\\\)|\\\]")


_PLAIN_NUMBER_RE = re.compile(r"\s*(-?(?:0|[1-9][0-9]{0,9})(?:\.[0-9]{1,9})?)\s*")


def _single_boxed(text: str) -> str | None:
    """math_verify's priority-0 extraction when it is certainly the one boxed content, else None.

    With exactly one ``\\boxed{`` (and no other ``\\boxed``/``\\fbox``), every priority-0 match of
    math_verify (the plain ``\\boxed{.+}`` and the math environments that contain the box) normalizes to
    the same box content, provided the content has no character that ends an environment early.
    """
    start = text.find("\\boxed{")
    if start < 0 or text.count("\\boxed") != 1 or _UNSAFE_TEXT_RE.search(text):
        return None
    depth = 0
    for i in range(start + len("\\boxed"), len(text)):
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                content = text[start + len("\\boxed{"):i].strip()
                return None if _UNSAFE_CONTENT_RE.search(content) else content
    return None


class _Undecided(Exception):
    pass


Terms = dict[tuple[int, int], Fraction]  # {(power of pi, squarefree radicand m): coefficient of pi^p * sqrt(m)}


class _Value(NamedTuple):
    """A real number (or +-infinity as an interval end): exact ``terms`` when representable, else None."""

    terms: Terms | None
    approx: float


class _Answer(NamedTuple):
    brackets: str  # "" for a number, else the opening and closing bracket characters, e.g. "[)"
    values: tuple[_Value, ...]
    exact_ok: bool  # no decimal number inside an expression: equal values are then equal for math_verify
    assigned: bool  # written as "x = <number>"


_LIMIT = 1e9
_MAX_RADICAND = 10**6
_MAX_TERMS = 16
_MAX_EXPONENT = 64
_MAX_NUMERIC_CHARS = 300
_ONE: Terms = {(0, 1): Fraction(1)}
_TOKEN_RE = re.compile(
    r"\s*(?:"
    r"(?P<num>(?:0|[1-9][0-9]{0,9})(?:\.[0-9]{1,9})?)(?![0-9.])"
    r"|(?P<frac>\\[dtc]?frac)(?![a-zA-Z])(?:[0-9]{2}(?![0-9]))?"
    r"|(?P<sqrt>\\sqrt)(?=\{)"
    r"|(?P<pi>\\pi)(?![a-zA-Z])"
    r"|(?P<infty>\\infty)(?![a-zA-Z])"
    r"|(?P<mul>\\cdot|\\times)(?![a-zA-Z])"
    r"|(?P<open>\\left[(\[]|[(\[])"
    r"|(?P<close>\\right[)\]]|[)\]])"
    r"|(?P<var>[a-df-hj-z])(?![a-zA-Z])"
    r"|(?P<op>[-+/^{},=])"
    r")"
)
_LONE_DECIMAL_RE = re.compile(r"-?[0-9]+\.[0-9]{1,6}")


def _checked(terms: Terms | None, approx: float) -> _Value:
    if not math.isfinite(approx) or abs(approx) > _LIMIT:
        raise _Undecided
    return _Value(terms, approx)


@functools.lru_cache(maxsize=4096)
def _squarefree(n: int) -> tuple[int, int] | None:
    """(s, m) with n = s * s * m and m squarefree, for 0 < n <= _MAX_RADICAND."""
    if n > _MAX_RADICAND:
        return None
    square, free, factor = 1, 1, 2
    while factor * factor <= n:
        while n % (factor * factor) == 0:
            n //= factor * factor
            square *= factor
        if n % factor == 0:
            n //= factor
            free *= factor
        factor += 1
    return square, free * n


def _times(a: Terms | None, b: Terms | None) -> Terms | None:
    if a is None or b is None:
        return None
    out: Terms = {}
    for (pi_a, root_a), coefficient_a in a.items():
        for (pi_b, root_b), coefficient_b in b.items():
            split = _squarefree(root_a * root_b)
            if split is None:
                return None
            key = (pi_a + pi_b, split[1])
            out[key] = out.get(key, Fraction(0)) + coefficient_a * coefficient_b * split[0]
    out = {key: coefficient for key, coefficient in out.items() if coefficient}
    return out if len(out) <= _MAX_TERMS else None


def _inverse(a: Terms | None) -> Terms | None:
    """1 / (c pi^p sqrt(m)) = sqrt(m) / (c m pi^p); None unless a is one nonzero term."""
    if a is None or len(a) != 1:
        return None
    ((pi_power, root), coefficient), = a.items()
    return {(-pi_power, root): 1 / (coefficient * root)}


def _negate(a: _Value) -> _Value:
    return _Value(None if a.terms is None else {key: -c for key, c in a.terms.items()}, -a.approx)


def _add(a: _Value, b: _Value) -> _Value:
    terms = None
    if a.terms is not None and b.terms is not None:
        terms = dict(a.terms)
        for key, coefficient in b.terms.items():
            terms[key] = terms.get(key, Fraction(0)) + coefficient
        terms = {key: coefficient for key, coefficient in terms.items() if coefficient}
    return _checked(terms, a.approx + b.approx)


def _multiply(a: _Value, b: _Value) -> _Value:
    return _checked(_times(a.terms, b.terms), a.approx * b.approx)


def _divide(a: _Value, b: _Value) -> _Value:
    if b.approx == 0 or b.terms == {}:
        raise _Undecided
    return _checked(_times(a.terms, _inverse(b.terms)), a.approx / b.approx)


def _sqrt(a: _Value) -> _Value:
    if a.approx < 0:
        raise _Undecided
    terms = None
    if a.terms == {}:
        terms = {}
    elif a.terms is not None and list(a.terms) == [(0, 1)] and a.terms[(0, 1)] > 0:
        rational = a.terms[(0, 1)]
        split = _squarefree(rational.numerator * rational.denominator)
        if split is not None:
            terms = {(0, split[1]): Fraction(split[0], rational.denominator)}
    return _checked(terms, math.sqrt(a.approx))


def _power(base: _Value, exponent: _Value) -> _Value:
    if abs(exponent.approx) > _MAX_EXPONENT or base.approx == 0 or base.terms == {}:
        raise _Undecided
    if exponent.terms is not None and set(exponent.terms) <= {(0, 1)}:
        power = exponent.terms.get((0, 1), Fraction(0))
        if power.denominator == 1:
            try:
                approx = base.approx ** int(power)
            except OverflowError:
                raise _Undecided from None
            factor = base.terms if power > 0 else _inverse(base.terms)
            terms: Terms | None = _ONE
            for _ in range(abs(int(power))):
                terms = _times(terms, factor)
            return _checked(terms, approx)
    if base.approx < 0:
        raise _Undecided
    return _checked(None, base.approx ** exponent.approx)


class _Reader:
    """Reads a plain numeric LaTeX answer the way latex2sympy does, or raises _Undecided.

    answer = [letter "="] number | open element ("," element)+ close, with letter one of a-z but e and i,
    open one of ( [ \\left( \\left[ and close one of ) ] \\right) \\right]; element = ["-"|"+"] \\infty | number.
    number = term {("+"|"-") term}; term = unary {("\\cdot"|"\\times"|"/") unary};
    unary = "-" unary | factor {factor that starts with \\sqrt or \\pi};
    factor = atom ["^" (digit | "{" number "}")];
    atom = decimal | \\pi | \\sqrt{number} | \\frac{number}{number} | \\frac<digit><digit> | "(" number ")".
    Juxtaposed numbers, fractions or parentheses are refused: latex2sympy reads "2\\frac{1}{2}" as a mixed
    number, "1 2" as 3 and "(2)(3)" as 5.
    """

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN_RE.match(text, pos)
            if match is None:
                if text[pos:].strip():
                    raise _Undecided
                break
            self.tokens.append((match.lastgroup, match.group(0).strip()))
            pos = match.end()
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self, kind: str, text: str | None = None) -> str:
        token_kind, token_text = self.peek()
        if token_kind != kind or (text is not None and token_text != text):
            raise _Undecided
        self.pos += 1
        return token_text

    def answer(self) -> _Answer:
        if self.peek()[0] == "var":
            self.pos += 1
            self.take("op", "=")
            value, ok = self.element()
            self.take("end")
            return _Answer("", (value,), ok, True)
        if self.peek()[0] == "open":
            opening = self.take("open")
            elements = [self.element()]
            while self.peek() == ("op", ","):
                self.pos += 1
                elements.append(self.element())
            if len(elements) > 1:
                closing = self.take("close")
                self.take("end")
                return _Answer(opening[-1] + closing[-1], tuple(value for value, _ in elements),
                               all(ok for _, ok in elements), False)
            self.pos = 0
        value, ok = self.element()
        self.take("end")
        return _Answer("", (value,), ok, False)

    def element(self) -> tuple[_Value, bool]:
        """A number, or a signed infinity, and whether equal values mean equal for math_verify."""
        if self.peek()[0] == "infty" or (self.peek()[0] == "op" and self.peek()[1] in "+-"
                                         and self.peek(1)[0] == "infty"):
            sign = -1.0 if self.peek() == ("op", "-") else 1.0
            self.pos += 2 if self.peek()[0] == "op" else 1
            return _Value(None, sign * math.inf), True
        start = self.pos
        value = self.number()
        tokens = self.tokens[start:self.pos]
        if not any(kind == "num" and "." in text for kind, text in tokens):
            return value, True
        lone = "".join(text for _, text in tokens)
        return value, len(tokens) <= 2 and _LONE_DECIMAL_RE.fullmatch(lone) is not None

    def number(self) -> _Value:
        result = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            sign = self.take("op")
            other = self.term()
            result = _add(result, _negate(other) if sign == "-" else other)
        return result

    def term(self) -> _Value:
        result = self.unary()
        while self.peek()[0] == "mul" or self.peek() == ("op", "/"):
            divide = self.take(self.peek()[0]) == "/"
            other = self.unary()
            result = _divide(result, other) if divide else _multiply(result, other)
        return result

    def unary(self) -> _Value:
        if self.peek() == ("op", "-"):
            self.pos += 1
            return _negate(self.unary())
        result = self.factor()
        while self.peek()[0] in ("sqrt", "pi"):
            result = _multiply(result, self.factor())
        return result

    def factor(self) -> _Value:
        base = self.atom()
        if self.peek() != ("op", "^"):
            return base
        self.pos += 1
        kind, text = self.peek()
        if kind == "num" and len(text) == 1:
            self.pos += 1
            exponent = _Value({(0, 1): Fraction(int(text))} if text != "0" else {}, float(text))
        else:
            exponent = self.braced()
        if self.peek() == ("op", "^") or self.peek()[0] == "num":
            raise _Undecided
        return _power(base, exponent)

    def atom(self) -> _Value:
        kind, text = self.peek()
        self.pos += 1
        if kind == "num":
            number = Fraction(text)
            return _checked({(0, 1): number} if number else {}, float(number))
        if kind == "pi":
            return _Value({(1, 1): Fraction(1)}, math.pi)
        if kind == "sqrt":
            return _sqrt(self.braced())
        if kind == "frac":
            if text[-1].isdigit():
                return _divide(_checked({(0, 1): Fraction(int(text[-2]))} if text[-2] != "0" else {},
                                        float(text[-2])),
                               _checked({(0, 1): Fraction(int(text[-1]))} if text[-1] != "0" else {},
                                        float(text[-1])))
            return _divide(self.braced(), self.braced())
        if kind == "open" and text[-1] == "(":
            inner = self.number()
            if self.take("close")[-1] != ")":
                raise _Undecided
            return inner
        raise _Undecided

    def braced(self) -> _Value:
        self.take("op", "{")
        inner = self.number()
        self.take("op", "}")
        return inner


def _read(text: str) -> _Answer | None:
    if len(text) > _MAX_NUMERIC_CHARS:
        return None
    try:
        return _Reader(text).answer()
    except (_Undecided, RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return None


def _far(a: _Value, b: _Value) -> bool:
    """Too far apart for math_verify to call equal (it compares floats to 6 decimals)."""
    if math.isinf(a.approx) or math.isinf(b.approx):
        return a.approx != b.approx
    return abs(a.approx - b.approx) > 1e-5 * max(1.0, abs(a.approx), abs(b.approx))


def _shape(answer: _Answer) -> str | None:
    """What latex2sympy makes of the answer: "number", "tuple", "interval", or None when not certain.

    Three or more elements in () or [] make a Tuple. Two make an Interval unless both brackets are open
    with end <= start, or both closed with end < start (a Tuple then); an Interval with end <= start is
    empty or one point, which is left to math_verify.
    """
    if not answer.brackets:
        return "number"
    if len(answer.values) > 2:
        return "tuple" if answer.brackets in ("()", "[]") else None
    start, end = answer.values
    if math.isinf(start.approx) or math.isinf(end.approx):
        return "interval" if start.approx < end.approx else None
    if not _far(start, end):
        return None
    if start.approx < end.approx:
        return "interval"
    return "tuple" if answer.brackets in ("()", "[]") else None


def _openness(answer: _Answer) -> tuple[bool, bool]:
    """(left open, right open) of a sympy Interval, which is always open at an infinite end."""
    start, end = answer.values
    return answer.brackets[0] == "(" or math.isinf(start.approx), answer.brackets[1] == ")" or math.isinf(end.approx)


def _equal(a: _Value, b: _Value) -> bool:
    if math.isinf(a.approx) or math.isinf(b.approx):
        return a.approx == b.approx
    return a.terms is not None and a.terms == b.terms


def _numeric_verdict(gold_text: str, answer_text: str) -> bool | None:
    """math_verify's verdict on two plain numeric answers (see _Reader) when it is certain, else None.

    math_verify compares "x = 5" with 5 by its right side (not two such equations: x = 5 is not y = 5).
    Numbers, tuples and intervals compare position by position. Not correct: some position holds values
    more than 1e-5 (relative) apart, or two intervals differ in openness. Correct: each position holds
    the same exact value, with no decimal inside an expression (math_verify says 3/10 != 0.1+0.2 but
    0.3 == 0.1+0.2), and both are numbers, tuples, or intervals of the same openness.
    """
    gold, answer = _read(gold_text), _read(answer_text)
    if gold is None or answer is None or len(gold.values) != len(answer.values) or gold.assigned and answer.assigned:
        return None
    shapes = {_shape(gold), _shape(answer)}
    if None in shapes or ("number" in shapes and len(shapes) > 1):
        return None
    if any(_far(g, a) for g, a in zip(gold.values, answer.values)):
        return False
    if shapes == {"interval"} and _openness(gold) != _openness(answer):
        return False
    if (len(shapes) == 1 and gold.exact_ok and answer.exact_ok
            and all(_equal(g, a) for g, a in zip(gold.values, answer.values))):
        return True
    return None


# Upper bounds, in decimal digits (log10), of what sympy would have to compute.
_MAX_POWER_DIGITS = 1e7  # 2^(10^7) still verifies in 0.2 s; 9^(9^9) has 3.7e8 digits
_MAX_FACTORIAL_LOG = 5.0  # 10^5! verifies in 0.15 s; 10^6! does not finish in 5 s
_MAX_DEPTH = 100
# A number, a sizing command (dropped), or another command or character.
_BOUND_TOKEN_RE = re.compile(
    r"\s*(?:([0-9]+(?:\.[0-9]*)?)|\\(?:left|right|[bB]igg?[lr]?)(?![a-zA-Z])|(\\[a-zA-Z]+|\S))"
)
_SEPARATORS = frozenset("+-=,;<>")


class _Bounder:
    """Upper bounds of log10 |value| of the parts of any LaTeX text, to find powers and factorials too big.

    Unknown symbols and commands count as 1, a product as the sum of its factors' bounds, a sum as its
    largest term plus log10(number of terms), ``a^b`` (right-associative, also Python's ``**``) as
    ``max(a, log10 2) * 10^b`` and ``n!`` as ``10^n * n``. ``pathological`` is set when a power would have
    more than _MAX_POWER_DIGITS digits or a factorial's argument exceeds 10^_MAX_FACTORIAL_LOG.
    """

    OPENERS = frozenset("{([")
    CLOSERS = frozenset("})]")

    def __init__(self, text: str) -> None:
        self.tokens = [token for match in _BOUND_TOKEN_RE.finditer(text) if (token := match.group(1) or match.group(2))]
        self.pos = 0
        self.pathological = False

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else ""

    def group(self, depth: int) -> float:
        """Bound of the tokens up to the closer of the current group (any closer; the end at depth 0)."""
        if depth > _MAX_DEPTH:
            raise RecursionError
        largest = product = 0.0
        terms = 1
        while self.pos < len(self.tokens):
            token = self.peek()
            if token in self.CLOSERS:
                self.pos += 1
                if depth:
                    break
            elif token in _SEPARATORS:
                self.pos += 1
                largest, product, terms = max(largest, product), 0.0, terms + 1
            else:
                product += self.postfix(depth)
        return max(largest, product) + math.log10(terms)

    def postfix(self, depth: int) -> float:
        bound = self.atom(depth)
        while True:
            if self.peek() == "!":
                self.pos += 1
                if bound > _MAX_FACTORIAL_LOG:
                    self.pathological = True
                bound = 10.0 ** min(bound, 300.0) * max(bound, 1.0)
            elif self.peek() == "^" or (self.peek() == "*" and self.peek(1) == "*"):
                self.pos += 1 if self.peek() == "^" else 2
                digits = max(bound, math.log10(2)) * 10.0 ** min(self.postfix(depth), 300.0)
                if digits > _MAX_POWER_DIGITS:
                    self.pathological = True
                bound = digits
            else:
                return bound

    def atom(self, depth: int) -> float:
        token = self.peek()
        if not token or token in self.CLOSERS or token in _SEPARATORS:
            return 0.0
        self.pos += 1
        if token[0].isdigit():
            whole = token.partition(".")[0].lstrip("0")
            return len(whole) - 1.0 if len(whole) > 15 else math.log10(max(float(token), 1.0))
        if token in self.OPENERS:
            return self.group(depth + 1)
        return 0.0


def _pathological(content: str) -> bool:
    """True when math_verify would try to build a number too large to finish (see _Bounder)."""
    bounder = _Bounder(content)
    try:
        bounder.group(0)
    except RecursionError:
        return False
    return bounder.pathological


def _extracted(text: str) -> str | None:
    """What math_verify extracts from the answer text, when that is certain (else None).

    A single box (see _single_boxed), or a text that is only a plain number: then math_verify's first
    extraction that can match is its number pattern, which takes the whole number.
    """
    plain = _PLAIN_NUMBER_RE.fullmatch(text)
    return plain.group(1) if plain else _single_boxed(text)


def _cheap_verdict(ground_truth: str, text: str) -> bool | None:
    content = _extracted(text)
    if content is None:
        return None
    gold = _single_boxed("\\boxed{" + ground_truth + "}")
    if gold is not None and gold == content and any(char.isdigit() for char in gold):
        return True
    if gold is not None:
        verdict = _numeric_verdict(gold, content)
        if verdict is not None:
            return verdict
    if _pathological(content):
        return False
    return None


# ---------------------------------------------------------------- math_verify in helper processes


def _timeout_s() -> float:
    try:
        value = float(os.environ.get("GRPO_REWARD_TIMEOUT_S", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class _Timeout(Exception):
    pass


class _Worker:
    """One helper process; requests and replies are length-prefixed pickles on its stdin/stdout."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, _THIS_FILE, "--worker", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
        )
        self.ready = False
        self.poller = select.poll()
        self.poller.register(self.proc.stdout.fileno(), select.POLLIN)

    def stop(self) -> None:
        if self.proc is None:
            return
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def _read(self, size: int, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        data = b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.poller.poll(remaining * 1000):
                raise _Timeout
            chunk = os.read(fd, size - len(data))
            if not chunk:
                raise EOFError("reward helper process exited")
            data += chunk
        return data

    def _receive(self, deadline: float) -> Any:
        (size,) = struct.unpack("!I", self._read(4, deadline))
        return pickle.loads(self._read(size, deadline))

    def request(self, message: tuple, timeout: float) -> Any:
        """The reply, or raise _Timeout (the helper is then replaced) or EOFError/OSError (dead helper)."""
        if self.proc.poll() is not None:  # died since the last request (killed from outside)
            self.restart()
        if not self.ready:
            if self._receive(time.monotonic() + STARTUP_TIMEOUT_S) != "ready":
                raise EOFError("reward helper process did not start")
            self.ready = True
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.write(struct.pack("!I", len(payload)) + payload)
        self.proc.stdin.flush()
        try:
            return self._receive(time.monotonic() + timeout)
        except _Timeout:
            self.restart()
            raise


class _Pool:
    """Up to ``MAX_WORKERS`` helpers per process, created when first needed."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.idle: list[_Worker] = []
        self.all: list[_Worker] = []
        self.condition = threading.Condition()

    def acquire(self, limit: int) -> _Worker:
        with self.condition:
            while not self.idle and len(self.all) >= limit:
                self.condition.wait()
            if self.idle:
                return self.idle.pop()
            worker = _Worker()
            self.all.append(worker)
            return worker

    def release(self, worker: _Worker) -> None:
        with self.condition:
            self.idle.append(worker)
            self.condition.notify()

    def shutdown(self) -> None:
        with self.condition:
            for worker in self.all:
                worker.stop()
            self.all.clear()
            self.idle.clear()


_pool_lock = threading.Lock()
_pool: _Pool | None = None


def _get_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():  # a forked child must not share its parent's helpers
            _pool = _Pool()
        return _pool


def shutdown() -> None:
    """Stop the helper processes (also done at interpreter exit)."""
    with _pool_lock:
        if _pool is not None and _pool.pid == os.getpid():
            _pool.shutdown()


atexit.register(shutdown)


def _ask(message: tuple, limit: int) -> Any:
    """Send a request to a helper; None when it timed out or the helper died."""
    pool = _get_pool()
    worker = pool.acquire(limit)
    try:
        return worker.request(message, _timeout_s())
    except _Timeout:
        logger.debug("math_verify passed the %.1f s limit on %r", _timeout_s(), message[1:])
        return None
    except (EOFError, OSError, pickle.UnpicklingError, struct.error):
        logger.warning("reward helper process failed; starting a new one", exc_info=True)
        worker.restart()
        return None
    finally:
        pool.release(worker)


def _gold_status(ground_truth: str, limit: int) -> str:
    """How math_verify parsed the ground truth: "ok", "empty" (nothing to compare) or "timeout"."""
    status = _golds.get(ground_truth)
    if status is None:
        status = _ask(("gold", ground_truth), limit) or "timeout"
        _golds.put(ground_truth, status)
    return status


def _symbolic_verdict(ground_truth: str, text: str, limit: int) -> bool:
    return _gold_status(ground_truth, limit) == "ok" and bool(_ask(("verify", ground_truth, text), limit))


# ---------------------------------------------------------------- entry points


class _Item(NamedTuple):
    response: str
    ground_truth: str
    text: str  # the answer text
    key: bytes
    verdict: bool | None  # None: math_verify must decide


def _prepare(solution_str: Any, ground_truth: Any) -> _Item | None:
    """The response with its verdict when known without math_verify; None when the input is invalid."""
    if isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool):
        ground_truth = str(ground_truth)
    if not isinstance(solution_str, str) or not isinstance(ground_truth, str):
        return None
    text = answer_text(solution_str)
    if not ground_truth.strip() or len(text) > MAX_ANSWER_CHARS:
        return _Item(solution_str, ground_truth, text, b"", False)
    key = _key(ground_truth, text)
    verdict = _verdicts.get(key)
    if verdict is None:
        verdict = _cheap_verdict(ground_truth, text)
        if verdict is None and _golds.get(ground_truth) in ("empty", "timeout"):
            verdict = False
        if verdict is not None:
            _verdicts.put(key, verdict)
    return _Item(solution_str, ground_truth, text, key, verdict)


def _decide(item: _Item, limit: int) -> bool:
    verdict = _verdicts.get(item.key)
    if verdict is None:
        verdict = _symbolic_verdict(item.ground_truth, item.text, limit)
        _verdicts.put(item.key, verdict)
    return verdict


def _total(response: str, correct: bool) -> float:
    if not correct:
        return 0.0
    return round(0.7 + format_score(response) + reasoning_score(response), 6)


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None) -> float:
    try:
        item = _prepare(solution_str, ground_truth)
        if item is None:
            return 0.0
        return _total(item.response, _decide(item, 1) if item.verdict is None else item.verdict)
    except Exception:
        logger.exception("math reward failed; scoring 0")
        return 0.0


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                        extra_infos: Sequence[Any] | None = None) -> list[float]:
    """compute_score for each item; distinct undecided answers go to up to MAX_WORKERS helpers at once."""
    try:
        items = [_safe(_prepare, solution, truth) for solution, truth in zip(solution_strs, ground_truths)]
        pending = {item.key: item for item in items if item is not None and item.verdict is None}
        new_golds = {item.ground_truth for item in pending.values() if _golds.get(item.ground_truth) is None}
        with ThreadPoolExecutor(max_workers=MAX_WORKERS) as executor:
            list(executor.map(lambda truth: _gold_status(truth, MAX_WORKERS), new_golds))
            decided = dict(zip(pending, executor.map(lambda item: _decide(item, MAX_WORKERS), pending.values())))
        return [0.0 if item is None else
                _safe(_total, item.response, decided[item.key] if item.verdict is None else item.verdict) or 0.0
                for item in items]
    except Exception:
        logger.exception("math reward batch failed; scoring each response alone")
        return [compute_score(None, solution, truth) for solution, truth in zip(solution_strs, ground_truths)]


def _safe(function: Callable[..., Any], *args: Any) -> Any:
    try:
        return function(*args)
    except Exception:
        logger.exception("math reward failed on one response; scoring 0")
        return None


# ---------------------------------------------------------------- the helper process


_WARM_UP = [  # (ground truth, answer): one of each common kind
    ("1", r"\boxed{1}"), (r"\frac{\sqrt{2}}{2}", r"\boxed{\frac{1}{\sqrt{2}}}"), (r"\frac{\pi}{2}", r"$0.5\pi$"),
    (r"\left( 1, \frac{\pi}{2} \right)", r"\boxed{(1, \pi/2)}"), ("[1, 2)", r"\boxed{[1,2]}"),
    (r"\{1, 2\}", r"\boxed{x = 1, 2}"), ("x^2+1", "The answer is x^2 + 1."),
]


def _serve(parent_pid: int) -> None:
    """Answer requests from the parent until it closes the pipe or exits."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by libraries goes to stderr, not into the reply pipe
    requests = sys.stdin.buffer

    def watch_parent() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    config = [
        LatexExtractionConfig(
            boxed_match_priority=0,
            normalization_config=NormalizationConfig(
                basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="all", equations=False
            ),
        ),
        ExprExtractionConfig(),
    ]
    golds: OrderedDict[str, list] = OrderedDict()

    def gold(truth: str) -> list:
        if truth not in golds:
            golds[truth] = parse("\\boxed{" + truth + "}", extraction_config=config, parsing_timeout=None)
            if len(golds) > 4096:
                golds.popitem(last=False)
        return golds[truth]

    def reply(value: Any) -> None:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(struct.pack("!I", len(payload)) + payload)
        replies.flush()

    for truth, answer in _WARM_UP:  # the first parse of each kind of expression is several times slower
        verify(gold(truth), parse(answer, extraction_config=config, parsing_timeout=None), timeout_seconds=None)
    golds.clear()
    reply("ready")
    while True:
        header = requests.read(4)
        if len(header) < 4:
            return
        message = pickle.loads(requests.read(struct.unpack("!I", header)[0]))
        try:
            if message[0] == "gold":
                reply("ok" if gold(message[1]) else "empty")
            else:
                answer = parse(message[2], extraction_config=config, parsing_timeout=None)
                reply(bool(verify(gold(message[1]), answer, timeout_seconds=None)))
        except Exception:
            reply("empty" if message[0] == "gold" else False)


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _serve(int(sys.argv[2]))
