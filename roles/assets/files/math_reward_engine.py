"""The speed engine of the GRPO math reward: whether an answer is correct, decided fast and never stuck.

The rules live beside it, in ``math_reward.py`` (the file verl's ``custom_reward_function.path`` names and the one to
edit). verl loads that file by path, so this folder is not on ``sys.path``: the rules file loads this one by path
from its own folder (``engine()`` there). This file imports only the standard library; math_verify (with sympy and
latex2sympy2_extended) runs in helper processes, which run this same file (``--worker``).

The interface (``API_VERSIONS``; a rules file asks for one as ``ENGINE_API``)
=============================================================================
1: ``score_batch(solution_strs, ground_truths, total) -> list[float]``: one score per response,
   ``total(response, correct)`` for a response that is a str and a ground truth that is a str or a number (used as
   ``str(number)``, as the sample's f-string does), where ``correct`` is the verdict below; 0.0 for any other input.
   It never raises: a failure anywhere (``total`` included) is logged and scores the batch 0 (the sample raises and
   stops the training step). A newer engine keeps every interface it lists, so an edited rules file keeps working.

The verdict (``correct``), as the sample judges it (../shared/DOMAIN.md, "The sample's reward, exactly")
    ``gold = parse("$" + ground_truth + "$", extraction_mode="first_match", extraction_config=
    [LatexExtractionConfig(), ExprExtractionConfig()])``; an empty gold is not correct. The answer is parsed from
    the whole response (a ``\\boxed{}`` inside ``<think>`` counts) with ``extraction_mode="first_match"`` and
    ``[LatexExtractionConfig(normalization_config=NormalizationConfig(nits=False, malformed_operators=False,
    basic_latex=True, boxed="all", units=True), boxed_match_priority=0, try_extract_without_anchor=False)]``;
    correct when ``float(verify(answer, gold)) >= 0.99`` (the answer first, as the sample calls it). One difference,
    on purpose: a hard deadline per response: a math_verify step that runs past ``GRPO_REWARD_TIMEOUT_S`` seconds
    (default 1.0) of wall time is not correct, and its helper is replaced. The sample's own limit is math_verify's
    5 s (signal.alarm, main thread only); the helpers keep those limits inside too, so only an answer that takes
    between the deadline and 5 s to judge can differ.

How it is fast, without changing a verdict (tests/unit/assets/test_reward*.py compare every path with the transcription
in benchmarks/reward_baseline.py; benchmarks/reward_throughput.py measures each)
    - Helpers: up to ``MAX_WORKERS`` (2) processes run the sample's own calls; a batch is split among them by
      ground truth, each streams one verdict per response, and the deadline holds per response.
    - Inside a helper, ``functools.lru_cache`` on the ground truth's parse (a GRPO group shares one).
    - A whole answer that is a power tower or factorial of more than 10^6 digits (``_explosive``) cannot equal a
      ground truth that is not one: its comparisons are skipped (math_verify would spend its 5 s limit on each and
      say no); the other candidates (the string fallback) are compared as usual.
    - In this process, a response whose only LaTeX is one ``\\boxed{}`` (``_box_content``: math_verify then
      extracts exactly that box) holding a plain number (integers, decimals, fractions, square roots, pi, + - * /
      ^, read as latex2sympy reads them: ``_Reader``), against a ground truth that is a plain number, is judged
      by the two values (``_numeric_verdict``): not correct when they are more than 1e-5 apart, correct when they
      are the same exact value (no decimal inside an expression); in between, math_verify decides.
    - Verdicts are computed once per distinct (ground truth, response) in a batch.
"""

from __future__ import annotations

import atexit
import functools
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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any, NamedTuple

logger = logging.getLogger(__name__)

API_VERSIONS = (1,)
_THIS_FILE = os.path.abspath(__file__)  # now: verl may pass a relative path and the working directory may change
DEFAULT_TIMEOUT_S = 1.0
STARTUP_TIMEOUT_S = 120.0
MAX_WORKERS = 2


# ---------------------------------------------------------------- the verdicts judged here

# What could give math_verify another priority-0 match than the plain \boxed{...} one, or a match ending
# further right: a math environment ($, \[, \(), a "final answer" phrase.
_OTHER_LATEX_RE = re.compile(r"\$|\\\[|\\\(|(?i:final answer)")
# What every pattern of the answer's extraction needs one of: a box, a math environment ($, \[, \(, [...]) or a
# bare \frac (math_verify's latexFraction pattern).
_EXTRACTABLE_RE = re.compile(r"\\boxed|\$|\\\[|\\\(|\[|frac")


def _box_content(response: str) -> str | None:
    """What math_verify extracts from the response when that is certain: the content of its only ``\boxed{}``
    when the response has no other LaTeX, or only a ``$...$`` around that box on its line (else None).

    Then math_verify's priority-0 matches are ``\boxed{.+}`` (greedy: it runs to the last ``}``, which is the
    box's own, as nothing follows it) and at most that ``$ \boxed{...} $`` environment; the inline-bracket
    environment cannot match (no ``[`` before the box on its line); each normalizes to the box's content.
    """
    start = response.find("\\boxed{")
    if start < 0 or response.count("\\boxed") != 1:
        return None
    line_start = response.rfind("\n", 0, start) + 1
    if "[" in response[line_start:start]:
        return None
    depth = 0
    for index in range(start + len("\\boxed"), len(response)):
        char = response[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    if "}" in response[index + 1:]:
        return None
    content = response[start + len("\\boxed{"):index]
    if response.count("$") == 2 and "\n" not in content:
        opening, closing = response.find("$"), response.rfind("$")
        if (line_start <= opening < start and not response[opening + 1:start].strip()
                and index < closing and not response[index + 1:closing].strip()):
            return None if _OTHER_LATEX_RE.search(response.replace("$", "")) else content
    return None if _OTHER_LATEX_RE.search(response) else content


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


_LIMIT = 1e9
_MAX_RADICAND = 10**6
_MAX_TERMS = 16
_MAX_EXPONENT = 64
_MAX_NUMERIC_CHARS = 300
_ONE: Terms = {(0, 1): Fraction(1)}
_TOKEN_RE = re.compile(
    r"\s*(?:"
    r"(?P<num>(?:0|[1-9][0-9]{0,9})(?:\.[0-9]{1,9})?)(?![0-9.])"
    r"|(?P<frac>\\[dtc]?frac)(?![a-zA-Z])"
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

    number = term {("+"|"-") term}; term = unary {("\\cdot"|"\\times"|"/") unary};
    unary = "-" unary | factor {factor that starts with \\sqrt or \\pi};
    factor = atom ["^" (digit | "{" number "}")];
    atom = decimal | \\pi | \\sqrt{number} | \\frac{number}{number} | "(" number ")".
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
                               all(ok for _, ok in elements))
            self.pos = 0
        value, ok = self.element()
        self.take("end")
        return _Answer("", (value,), ok)

    def element(self) -> tuple[_Value, bool]:
        """A number, or a signed infinity, and whether equal values mean equal for math_verify (no decimal inside
        an expression: math_verify says 3/10 != 0.1+0.2)."""
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
        if kind == "frac":  # \frac12 is not read: the answer's normalization leaves it (malformed_operators=False)
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


def _equal(a: _Value, b: _Value) -> bool:
    if math.isinf(a.approx) or math.isinf(b.approx):
        return a.approx == b.approx
    return a.terms is not None and a.terms == b.terms


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


def _numeric_verdict(ground_truth: str, content: str) -> bool | None:
    """math_verify's verdict on a plain numeric ground truth and answer (see _Reader: numbers, tuples and
    intervals of numbers) when it is certain, else None. They compare position by position. Not correct: some
    position holds values more than 1e-5 (relative) apart (math_verify compares floats to 6 decimals), or two
    intervals differ in openness. Correct: each position holds the same exact value, with no decimal inside an
    expression, and both are numbers, tuples, or intervals of the same openness."""
    gold, answer = _read(ground_truth), _read(content)
    if gold is None or answer is None or len(gold.values) != len(answer.values):
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


def _shortcut_verdict(response: str, ground_truth: str) -> bool | None:
    """The verdict without math_verify, when it is certain, else None: not correct when nothing in the response
    can be extracted (no box, no math environment, no fraction); else by the numbers (see _box_content and
    _numeric_verdict)."""
    if not _EXTRACTABLE_RE.search(response):
        return False
    content = _box_content(response)
    return None if content is None else _numeric_verdict(ground_truth, content)


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

    def judge(self, pairs: list[tuple[str, str]], timeout: float) -> list[bool]:
        """One verdict per (ground truth, response), each within ``timeout`` seconds of the one before: a response
        past it is not correct, the helper is replaced and the rest go to the new one."""
        verdicts: list[bool] = []
        while len(verdicts) < len(pairs):
            if self.proc.poll() is not None:  # died since the last request (killed from outside)
                self.restart()
            try:
                if not self.ready:
                    if self._receive(time.monotonic() + STARTUP_TIMEOUT_S) != "ready":
                        raise EOFError("reward helper process did not start")
                    self.ready = True
                payload = pickle.dumps(pairs[len(verdicts):], protocol=pickle.HIGHEST_PROTOCOL)
                self.proc.stdin.write(struct.pack("!I", len(payload)) + payload)
                self.proc.stdin.flush()
                while len(verdicts) < len(pairs):
                    verdicts.append(bool(self._receive(time.monotonic() + timeout)))
            except _Timeout:
                logger.debug("math_verify passed the %.1f s limit on %r", timeout, pairs[len(verdicts)])
                verdicts.append(False)
                self.restart()
            except (EOFError, OSError, pickle.UnpicklingError, struct.error):
                logger.warning("reward helper process failed; starting a new one", exc_info=True)
                verdicts.append(False)
                self.restart()
        return verdicts


class _Pool:
    """Up to ``MAX_WORKERS`` helpers per process, created when first needed."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.idle: list[_Worker] = []
        self.all: list[_Worker] = []
        self.condition = threading.Condition()

    def acquire(self) -> _Worker:
        with self.condition:
            while not self.idle and len(self.all) >= MAX_WORKERS:
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


def _judge(pairs: list[tuple[str, str]]) -> list[bool]:
    pool = _get_pool()
    worker = pool.acquire()
    try:
        return worker.judge(pairs, _timeout_s())
    finally:
        pool.release(worker)


# ---------------------------------------------------------------- the interface


def _inputs(solution_str: Any, ground_truth: Any) -> tuple[str, str] | None:
    if isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool):
        ground_truth = str(ground_truth)
    if not isinstance(solution_str, str) or not isinstance(ground_truth, str):
        return None
    return ground_truth, solution_str


def _shards(pending: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Up to MAX_WORKERS shares of about equal size, each ground truth's responses in one share (so a helper
    converts that ground truth and its group's repeated answers once, not each helper again)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for pair in pending:
        groups.setdefault(pair[0], []).append(pair)
    shares: list[list[tuple[str, str]]] = [[] for _ in range(min(MAX_WORKERS, len(groups)))]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(shares, key=len).extend(group)
    return shares


def score_batch(solution_strs: Sequence[Any], ground_truths: Sequence[Any],
                total: Callable[[str, bool], float]) -> list[float]:
    """Interface 1: ``total(response, correct)`` for each item (see the module's docstring); the distinct
    responses math_verify must judge are split among the helpers."""
    try:
        items = [_inputs(solution, truth) for solution, truth in zip(solution_strs, ground_truths)]
        verdicts: dict[tuple[str, str], bool | None] = {}
        for item in items:
            if item is not None and item not in verdicts:
                verdicts[item] = _shortcut_verdict(item[1], item[0])
        pending = [pair for pair, verdict in verdicts.items() if verdict is None]
        if len(pending) == 1:  # verl's default reward manager asks one response at a time
            verdicts.update(zip(pending, _judge(pending)))
        elif pending:
            chunks = _shards(pending)
            with ThreadPoolExecutor(max_workers=len(chunks)) as executor:
                for chunk, judged in zip(chunks, executor.map(_judge, chunks)):
                    verdicts.update(zip(chunk, judged))
        return [0.0 if item is None else total(item[1], bool(verdicts[item])) for item in items]
    except Exception:
        logger.exception("math reward failed; scoring the batch 0")
        return [0.0] * len(solution_strs)


# ---------------------------------------------------------------- the helper process

_EXPLOSIVE_DIGITS = 1e6


def _log10_bound(expr: Any) -> float | None:
    """log10 of a positive integer-valued expression built from integers, powers and factorials (inf when too
    large for a float), or None when the expression is anything else."""
    import sympy

    if isinstance(expr, sympy.Integer):
        return math.log10(abs(int(expr))) if expr != 0 else None
    if isinstance(expr, sympy.Pow):
        base, exponent = _log10_bound(expr.base), _log10_bound(expr.exp)
        if base is None or exponent is None or base <= 0 or expr.exp.is_negative:
            return None
        return base * (10.0 ** exponent if exponent < 300 else math.inf)
    if isinstance(expr, sympy.factorial):
        argument = _log10_bound(expr.args[0])
        if argument is None:
            return None
        n = 10.0 ** argument if argument < 300 else math.inf
        return math.lgamma(n + 1) / math.log(10) if n < 1e300 else math.inf
    return None


def _explosive(expr: Any) -> bool:
    """A whole answer worth more than 10^6 digits: a power tower or factorial sympy would have to build."""
    try:
        bound = _log10_bound(expr)
    except (ValueError, OverflowError, TypeError):
        return False
    return bound is not None and bound > _EXPLOSIVE_DIGITS


_WARM_UP = [  # (ground truth, response): one of each common kind
    ("1", r"\boxed{1}"), (r"\frac{\sqrt{2}}{2}", r"\boxed{\frac{1}{\sqrt{2}}}"), (r"\frac{\pi}{2}", r"$0.5\pi$"),
    (r"\left( 1, \frac{\pi}{2} \right)", r"\boxed{(1, \pi/2)}"), ("[1, 2)", r"\boxed{[1,2]}"),
    (r"\{1, 2\}", r"\boxed{x = 1, 2}"), ("x^2+1", "The final answer is $x^2 + 1$."),
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
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    from latex2sympy2_extended import NormalizationConfig
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    # The two switches exist for benchmarks/reward_throughput.py, which measures what each fast path is worth.
    caches = os.environ.get("GRPO_REWARD_HELPER_CACHES", "1") != "0"
    explosive_check = os.environ.get("GRPO_REWARD_EXPLOSIVE_CHECK", "1") != "0"
    gold_config = [LatexExtractionConfig(), ExprExtractionConfig()]
    answer_config = [
        LatexExtractionConfig(
            normalization_config=NormalizationConfig(
                nits=False, malformed_operators=False, basic_latex=True, boxed="all", units=True
            ),
            boxed_match_priority=0,
            try_extract_without_anchor=False,
        )
    ]

    def parse_gold(truth: str) -> tuple:
        return tuple(parse("$" + truth + "$", extraction_mode="first_match", extraction_config=gold_config))

    gold = functools.lru_cache(maxsize=8192)(parse_gold) if caches else parse_gold

    def correct(truth: str, response: str) -> bool:
        golds = gold(truth)
        if len(golds) == 0:
            return False
        answer = parse(response, extraction_mode="first_match", extraction_config=answer_config)
        if not explosive_check or any(_explosive(g) for g in golds):
            kept = answer
        else:
            kept = [a for a in answer if not _explosive(a)]
        return float(verify(kept, list(golds))) >= 0.99

    def reply(value: Any) -> None:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(struct.pack("!I", len(payload)) + payload)
        replies.flush()

    for truth, response in _WARM_UP:  # the first parse of each kind of expression is several times slower
        correct(truth, response)
    if caches:
        gold.cache_clear()
    reply("ready")
    while True:
        header = requests.read(4)
        if len(header) < 4:
            return
        for truth, response in pickle.loads(requests.read(struct.unpack("!I", header)[0])):
            try:
                reply(correct(truth, response))
            except Exception:
                reply(False)


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _serve(int(sys.argv[2]))
