"""Referee throughput: samples per second through the referee Ray actor(s), the way reward workers submit them.

A driver submits every sample of ``--prompts`` groups of ``--n`` (half of them non-diverse, so half the groups run a
live tournament with the SIMULATED judge, zero latency) concurrently and in shuffled order, and waits for all
answers; 1 and 2 referee shards side by side in one run. This measures the referee's own overhead (Ray calls, group
bookkeeping, scheduling, Bradley-Terry fits), not a judge.

    python scripts/bench/referee.py --prompts 256 --n 8
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import time

os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--shards", default="1,2")
    parser.add_argument("--strategy", default="live")
    args = parser.parse_args()

    import ray

    from arena_verl.actors.referee_actor import referee_handle
    from arena_verl.core.referee import Submission
    from arena_verl.judge import Trace
    from arena_verl.settings import arena_settings

    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    rng = random.Random(0)
    rows = []
    for shards in (int(x) for x in args.shards.split(",")):
        settings = arena_settings(group_size=args.n, strategy=args.strategy, num_referees=shards,
                                 referee_name=f"bench_{shards}")  # fmt: skip
        subs = []
        for p in range(args.prompts):
            uniform = p % 2 == 0
            for k in range(args.n):
                reward = 1.0 if uniform else float(k % 2)
                trace = Trace(f"prompt {p} sample {k} " + "step " * 200, quality_hint=rng.gauss(0, 1))
                subs.append(Submission(f"{shards}-{p}", str(k), f"problem {p}", trace, reward))
        # Warm the actors up (creation, imports) outside the timing.
        ray.get([referee_handle(settings, s.uid).metrics.remote() for s in subs[:: args.n]])
        rng.shuffle(subs)
        started = time.perf_counter()
        verdicts = ray.get([referee_handle(settings, s.uid).submit.remote(s) for s in subs])
        seconds = time.perf_counter() - started
        routed = sum(v.routed for v in verdicts) // args.n
        calls = sum(v.judge_calls for v in verdicts if v.routed) // args.n
        rows.append((shards, len(subs), routed, calls, seconds))
        assert all(dataclasses.is_dataclass(v) for v in verdicts)
    ray.shutdown()

    print(f"Referee throughput, {args.prompts} groups of N={args.n}, strategy {args.strategy}, SIMULATED judge "
          f"(no latency), {os.cpu_count()} CPUs; all samples submitted at once in shuffled order")  # fmt: skip
    print("| referee shards | samples | routed groups | judge calls | seconds | samples/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for shards, samples, routed, calls, seconds in rows:
        print(f"| {shards} | {samples} | {routed} | {calls} | {seconds:.2f} | {samples / seconds:.0f} |")


if __name__ == "__main__":
    main()
