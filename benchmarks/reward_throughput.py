"""Throughput of the GRPO math reward (roles/assets/files/math_reward.py) against the straightforward design: the
sample's rules as benchmarks/reward_baseline.py transcribes them from DOMAIN.md (math_verify in the calling
process, the ground truth parsed on every call, nothing cached).

Prints a table: responses/second on a GRPO-like mix (and on a harder one, where more answers need
math_verify), and wall time for a batch of 2,048 responses with 1% pathological answers, for the fast version
and for the baseline, whether the targets (>= 10x the baseline's responses/second; the 2,048 batch in < 2 s) are
met, and what each fast path decided. Every batch uses ground truths not seen before, so the caches only help
within a batch, as in training. Every score is compared with the baseline's. Exit status 0.
"""

import importlib.util
import os
import random
import sys
import time
from fractions import Fraction

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import reward_baseline as baseline  # noqa: E402


def load_fast():
    """Load the reward file the way verl does: by path, under the name custom_module (it loads its engine,
    math_reward_engine.py, from its own folder: ``engine()``)."""
    path = os.path.join(ROOT, "roles", "assets", "files", "math_reward.py")
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_module"] = module
    spec.loader.exec_module(module)
    return module


MIX = ("per problem, 8 responses: 3 correct in the ground truth's own form (identical answer blocks; for "
       "integers one of the 3 unboxed), 1 correct in an equivalent form (n.0, or n\\text{ cm} for half of the "
       "integer problems, which only math_verify can judge; a decimal or \\dfrac for fractions; \\sqrt{k^2 m} "
       "for k\\sqrt{m}; \\frac{k}{m}\\pi for \\frac{k\\pi}{m}; other spacing, \\left( or / for tuples and "
       "intervals), 2 wrong (the same wrong answer twice), 1 correct without tags (boxed in the text), 1 correct "
       "with stray text and no numbered steps; per 20 problems: 6 integers, 4 fractions, 3 square roots, "
       "3 multiples of pi, 4 intervals or tuples")
PATHOLOGICAL = [r"9^{9^{9^{9}}}", r"10^{10^{10}}", r"(10^{6})!", r"1000000!", r"2^{3^{4^{5}}}"]
# unboxed: the sample's extraction takes a LaTeX environment after "final answer ... is", never plain text
UNBOXED_PATHOLOGICAL = ["The final answer is $9^{9^{9^{9}}}$.", "So it is 9**9**9."]
FILLER = ["We look at the quantities given in the problem.", "Let us write down what we know.",
          "We solve the equation for the unknown.", "Substitute the value back into the expression.",
          "We calculate the sum of the terms.", "Therefore the expression simplifies.",
          "This holds because both sides are positive.", "We check the result against the conditions."]


def problem(rng, kind, index):
    """(ground truth, an equivalent form, a wrong answer) for the index-th problem of a batch."""
    if kind == "integer":
        n = rng.randint(-50, 900)
        return str(n), f"{n}\\text{{ cm}}" if index % 2 else f"{n}.0", str(n + rng.choice([-2, -1, 1, 3]))
    if kind == "fraction":
        value = Fraction(rng.randint(1, 40), rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 12])) * rng.choice([1, -1])
        if value.denominator == 1:
            value += Fraction(1, 3)
        sign = "-" if value < 0 else ""
        truth = f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"
        equivalent = (str(float(value)) if value.denominator in (2, 4, 5, 8)
                      else f"{sign}\\dfrac{{{abs(value.numerator)}}}{{{value.denominator}}}")
        return truth, equivalent, f"\\frac{{{value.numerator + 1}}}{{{value.denominator}}}"
    if kind == "sqrt":
        k, m = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11])
        return f"{k}\\sqrt{{{m}}}", f"\\sqrt{{{k * k * m}}}", f"{k + 1}\\sqrt{{{m}}}"
    if kind == "pi":
        k, m = rng.randint(1, 9), rng.choice([2, 3, 4, 6])
        return f"\\frac{{{k}\\pi}}{{{m}}}", f"\\frac{{{k}}}{{{m}}}\\pi", f"\\frac{{{k + 1}\\pi}}{{{m}}}"
    a, b = rng.randint(-9, 5), rng.randint(6, 20)
    return rng.choice([
        (f"\\left( {a}, \\frac{{\\pi}}{{{b}}} \\right)", f"({a}, \\pi/{b})", f"({a}, \\frac{{\\pi}}{{{b + 1}}})"),
        (f"[{a}, {b})", f"[{a},{b})", f"[{a}, {b}]"),
        (f"(-\\infty, {a}]", f"(-\\infty,{a}]", f"(-\\infty, {a})"),
        (f"({a}, {b})", f"\\left({a}, {b}\\right)", f"({b}, {a})"),
    ])


def reasoning(rng, steps=True):
    lines = [f"Step {i}: {rng.choice(FILLER)} " + " ".join(rng.choices(FILLER, k=rng.randint(1, 4)))
             for i in range(1, rng.randint(3, 6) + 1)]
    if not steps:
        lines = [line.split(": ", 1)[1] for line in lines]
    return "\n".join(lines)


def tagged(rng, answer, steps=True, boxed=True):
    answer = f"\\boxed{{{answer}}}" if boxed else answer
    return f"<think>\n{reasoning(rng, steps)}\n</think>\n<answer>\n{answer}\n</answer>"


def group(rng, kind, index, unboxed_always=False):
    """8 (response, ground truth) pairs for the index-th problem of a batch, per MIX (with ``unboxed_always``
    the first correct answer is unboxed whatever the kind)."""
    truth, equivalent, wrong = problem(rng, kind, index)
    responses = [tagged(rng, truth, boxed=i > 0 or (kind != "integer" and not unboxed_always)) for i in range(3)]
    responses += [tagged(rng, equivalent), tagged(rng, wrong), tagged(rng, wrong)]
    responses.append(f"{reasoning(rng)}\nSo the answer is $\\boxed{{{truth}}}$.")
    responses.append("Sure, here it is. " + tagged(rng, truth, steps=False) + " Hope this helps.")
    return [(response, truth) for response in responses]


KINDS = ["integer"] * 6 + ["fraction"] * 4 + ["sqrt"] * 3 + ["pi"] * 3 + ["tuple"] * 4


def realistic_batch(rng, unboxed_always=False):
    return [pair for index, kind in enumerate(KINDS) for pair in group(rng, kind, index, unboxed_always)]


def pathological_batch(rng, size=2048, share=0.01):
    items = []
    while len(items) < size:
        items += realistic_batch(rng)
    items = items[:size]
    chosen = rng.sample(range(size), round(size * share))
    for n, index in enumerate(chosen):
        if n % 4 == 3:
            text = f"<think>\n{reasoning(rng)}\n</think>\n{UNBOXED_PATHOLOGICAL[n % 2]}"
        else:
            text = tagged(rng, PATHOLOGICAL[n % len(PATHOLOGICAL)])
        items[index] = (text, items[index][1])
    return items, set(chosen)


def run(score, items):
    start = time.perf_counter()
    scores = [score(data_source="math", solution_str=response, ground_truth=truth) for response, truth in items]
    return time.perf_counter() - start, scores


def run_batch(module, items):
    start = time.perf_counter()
    scores = module.compute_score_batch(data_sources=["math"] * len(items), solution_strs=[r for r, _ in items],
                                        ground_truths=[t for _, t in items])
    return time.perf_counter() - start, scores


def count_requests(module):
    """Count what the helpers judge (wraps the engine's _judge); the rest the integer shortcut decided."""
    counts = {"helpers": 0}
    engine = module.engine()
    judge = engine._judge

    def counting(pairs):
        counts["helpers"] += len(pairs)
        return judge(pairs)

    engine._judge = counting
    return counts


def fresh_helpers(module):
    """New helper processes (empty caches), started before the timing, as a training run's first step does."""
    module.engine().shutdown()
    module.compute_score_batch(data_sources=["math"] * 2, solution_strs=[r"\boxed{1+x^2}", r"\boxed{x^2+1}"],
                               ground_truths=["x^2+1", "1+x^2"])


def table(rows):
    header = ("measure", "fast", "baseline", "ratio", "target", "met")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in [header, *rows])


def measure_mix(fast, rng, counts):
    """Sequential and batch throughput on new realistic batches; the baseline on the first 3 of them."""
    mix = [realistic_batch(rng) for _ in range(12)]
    responses = sum(len(batch) for batch in mix)
    counts.update(helpers=0)
    seconds, scores = 0.0, []
    for batch in mix:  # new ground truths in each batch: the caches help only inside a batch, as in training
        batch_seconds, batch_scores = run(fast.compute_score, batch)
        seconds += batch_seconds
        scores += batch_scores
    requests = dict(counts)
    batch_seconds = sum(run_batch(fast, batch)[0] for batch in [realistic_batch(rng) for _ in range(len(mix))])
    base_items = [pair for batch in mix[:3] for pair in batch]
    base_seconds, base_scores = run(baseline.compute_score, base_items)
    return {"responses": responses, "batches": len(mix), "rate": responses / seconds,
            "batch_rate": responses / batch_seconds, "base_rate": len(base_items) / base_seconds,
            "base_responses": len(base_items), "requests": requests,
            "mismatches": sum(a != b for a, b in zip(scores, base_scores))}


def measure_harder(fast, rng, counts):
    hard = [realistic_batch(rng, unboxed_always=True) for _ in range(4)]
    counts.update(helpers=0)
    seconds, scores = 0.0, []
    for batch in hard:
        batch_seconds, batch_scores = run(fast.compute_score, batch)
        seconds += batch_seconds
        scores += batch_scores
    base_items = hard[0] + hard[1]
    base_seconds, base_scores = run(baseline.compute_score, base_items)
    return {"responses": sum(len(batch) for batch in hard), "rate": sum(len(batch) for batch in hard) / seconds,
            "base_responses": len(base_items), "base_rate": len(base_items) / base_seconds,
            "requests": dict(counts), "mismatches": sum(a != b for a, b in zip(scores, base_scores))}


def measure_pathological(fast, rng):
    """2,048 responses with 1% pathological answers: fast in batch and sequential mode (new batches, empty
    caches); the baseline on the normal ones and on 2 pathological ones, the rest extrapolated."""
    fresh_helpers(fast)
    items, bad = pathological_batch(rng)
    seconds, scores = run_batch(fast, items)
    fresh_helpers(fast)
    sequential_seconds, _ = run(fast.compute_score, pathological_batch(rng)[0])
    normal = [i for i in range(len(items)) if i not in bad]
    base_normal_seconds, base_normal_scores = run(baseline.compute_score, [items[i] for i in normal])
    sample = [items[i] for i in sorted(bad)[:2]]
    base_bad_seconds, _ = run(baseline.compute_score, sample)
    return {"size": len(items), "bad": len(bad), "normal": len(normal), "seconds": seconds,
            "sequential_seconds": sequential_seconds, "bad_scores": sorted({scores[i] for i in bad}),
            "base_normal_seconds": base_normal_seconds, "sample": len(sample), "base_bad_seconds": base_bad_seconds,
            "base_estimate": base_normal_seconds + base_bad_seconds / len(sample) * len(bad),
            "mismatches": sum(scores[i] != score for i, score in zip(normal, base_normal_scores))}


def ablations(fast, rng):
    """What each fast path is worth: batch throughput on new realistic batches with one of them off, and the
    pathological batch without the explosive-answer check (the helpers' deadline decides then)."""
    batches = [realistic_batch(rng) for _ in range(4)]

    def rate():
        fresh_helpers(fast)
        return sum(len(b) for b in batches) / sum(run_batch(fast, b)[0] for b in batches)

    rows = [("all fast paths", rate())]
    engine = fast.engine()
    shortcut = engine._shortcut_verdict
    engine._shortcut_verdict = lambda response, truth: None
    rows.append(("without the in-process verdicts (all to math_verify)", rate()))
    os.environ["GRPO_REWARD_HELPER_CACHES"] = "0"
    rows.append(("... and without the helpers' ground-truth cache", rate()))
    del os.environ["GRPO_REWARD_HELPER_CACHES"]
    engine.MAX_WORKERS = 1
    rows.append(("... with the caches, one helper instead of two", rate()))
    engine.MAX_WORKERS = 2
    engine._shortcut_verdict = shortcut
    items, _bad = pathological_batch(rng)
    os.environ["GRPO_REWARD_EXPLOSIVE_CHECK"] = "0"
    fresh_helpers(fast)
    without = run_batch(fast, items)[0]
    del os.environ["GRPO_REWARD_EXPLOSIVE_CHECK"]
    fresh_helpers(fast)
    with_check = run_batch(fast, items)[0]
    return rows, with_check, without


def main():
    fast = load_fast()
    counts = count_requests(fast)
    rng = random.Random(20250)
    start = time.perf_counter()  # start both helper processes, as a training run's first step does
    fresh_helpers(fast)
    startup = time.perf_counter() - start
    mix = measure_mix(fast, rng, counts)
    hard = measure_harder(fast, rng, counts)
    path = measure_pathological(fast, rng)

    def met(ok):
        return "yes" if ok else "NO"

    rows = [
        ("realistic mix, responses/s", f"{mix['rate']:,.0f} (sequential)", f"{mix['base_rate']:,.0f}",
         f"{mix['rate'] / mix['base_rate']:.1f}x", ">= 10x", met(mix["rate"] >= 10 * mix["base_rate"])),
        ("realistic mix, responses/s", f"{mix['batch_rate']:,.0f} (batch, 2 helpers)", f"{mix['base_rate']:,.0f}",
         f"{mix['batch_rate'] / mix['base_rate']:.1f}x", ">= 10x", met(mix["batch_rate"] >= 10 * mix["base_rate"])),
        ("harder mix (1 unboxed per group), responses/s", f"{hard['rate']:,.0f} (sequential)",
         f"{hard['base_rate']:,.0f}", f"{hard['rate'] / hard['base_rate']:.1f}x", "", ""),
        ("2,048 with 1% pathological, wall s", f"{path['seconds']:.2f} (batch, 2 helpers)",
         f"~{path['base_estimate']:.0f} (estimated)", f"{path['base_estimate'] / path['seconds']:.0f}x", "< 2 s",
         met(path["seconds"] < 2.0)),
        ("2,048 with 1% pathological, wall s", f"{path['sequential_seconds']:.2f} (sequential)", "", "", "< 2 s",
         met(path["sequential_seconds"] < 2.0)),
    ]
    print(f"Mix: {MIX}.")
    print(f"Realistic mix: fast (sequential compute_score) over {mix['responses']} responses, {mix['batches']} "
          f"batches of {mix['responses'] // mix['batches']} with new ground truths in each; "
          f"{mix['requests']['helpers']} responses ({mix['requests']['helpers'] / mix['responses']:.1%}) went to "
          f"math_verify in the helpers, the rest were decided in this process (nothing extractable, or a single box "
          f"with a plain number against a plain number). Batch mode "
          f"(compute_score_batch per batch) over another {mix['batches']} such batches. "
          f"Baseline (sequential) over the first {mix['base_responses']} responses; scores differ from the fast "
          f"ones on {mix['mismatches']}.")
    print(f"Harder mix: as above, but in every group one correct answer is written without \\boxed inside the "
          f"tags (the sample's extraction finds nothing there: not correct); {hard['requests']['helpers']} "
          f"responses went to math_verify. Fast over {hard['responses']} responses, baseline over "
          f"{hard['base_responses']}; scores differ on {hard['mismatches']}.")
    print(f"Pathological batch: {path['bad']} of {path['size']} answers are pathological: 3 in 4 boxed inside "
          f"<answer> tags, cycling through {', '.join(PATHOLOGICAL)}, 1 in 4 unboxed ("
          f"{' / '.join(UNBOXED_PATHOLOGICAL)}); fast scores them {path['bad_scores']}. Baseline measured on the "
          f"{path['normal']} normal responses ({path['base_normal_seconds']:.1f} s) and on {path['sample']} "
          f"pathological ones ({path['base_bad_seconds']:.1f} s, its 5 s timeout), the other "
          f"{path['bad'] - path['sample']} extrapolated; scores differ on {path['mismatches']} normal responses.")
    print(f"Fast version: starting its 2 helper processes took {startup:.2f} s (once per process, before the "
          f"timings); limit per math_verify step {fast.engine()._timeout_s():.1f} s. Machine: {os.cpu_count()} cores.")
    print()
    print(table(rows))
    ablation_rows, with_check, without = ablations(fast, rng)
    print()
    print("What each fast path is worth (batch mode, 4 new realistic batches, responses/s; baseline %.0f):"
          % mix["base_rate"])
    for label, value in ablation_rows:
        print(f"  {label:<58} {value:>8,.0f}  ({value / mix['base_rate']:.1f}x the baseline)")
    print(f"  2,048 with 1% pathological: {with_check:.2f} s with the explosive-answer check, {without:.2f} s "
          f"without it (each pathological answer then waits for the {fast.engine()._timeout_s():.1f} s deadline)")


if __name__ == "__main__":
    main()
