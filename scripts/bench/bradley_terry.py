"""Fit throughput: the batched Bradley-Terry fit against per-group loops of choix and scipy L-BFGS, side by side.

Each group's comparisons come from a live tournament judged by the SIMULATED judge (no ties, so choix, which has no
ties, fits exactly the same data). All three fit the same objective (L2 prior ``l2``, choix's ``alpha``).

    python scripts/bench/bradley_terry.py               # 1024 groups of N=8 and N=16
"""

from __future__ import annotations

import argparse
import os
import time

import choix
import numpy as np
from scipy.optimize import minimize

from arena_verl.core.options import DEFAULT_L2
from arena_verl.tournament import LiveScheduler, SimulatedJudge, fit_bradley_terry_batch


def live_groups(num_groups: int, num_items: int, seed: int) -> list[tuple[int, list[tuple[int, int, float]]]]:
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(num_groups):
        judge = SimulatedJudge(rng.normal(scale=1.6, size=num_items), position_bias=0.53, seed=rng)
        scheduler = LiveScheduler(num_items)
        for item in range(num_items):
            for a, b in scheduler.on_arrival(item):
                first, second = (a, b) if rng.random() < 0.5 else (b, a)
                scheduler.on_verdict(first, second, judge.verdict(first, second))
        groups.append((num_items, scheduler.comparisons))
    return groups


def fit_choix(groups, l2):
    out = []
    for n, rows in groups:
        pairs = [(f, s) if o == 1.0 else (s, f) for f, s, o in rows]
        theta = choix.opt_pairwise(n, pairs, alpha=l2)
        out.append(theta - theta.mean())
    return out


def fit_scipy(groups, l2):
    out = []
    for n, rows in groups:
        rows = np.asarray(rows)
        first, second, outcome = rows[:, 0].astype(int), rows[:, 1].astype(int), rows[:, 2]

        def objective(theta, first=first, second=second, outcome=outcome, n=n):
            d = theta[first] - theta[second]
            p = 1.0 / (1.0 + np.exp(-d))
            loss = np.sum(outcome * np.logaddexp(0, -d) + (1 - outcome) * np.logaddexp(0, d)) + l2 * theta @ theta
            grad = 2 * l2 * theta + np.bincount(first, p - outcome, n) - np.bincount(second, p - outcome, n)
            return loss, grad

        theta = minimize(objective, np.zeros(n), jac=True, method="L-BFGS-B").x
        out.append(theta - theta.mean())
    return out


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--sizes", default="8,16")
    parser.add_argument("--l2", type=float, default=DEFAULT_L2)
    parser.add_argument("--repeats", type=int, default=5, help="median of this many runs (loops: 1 run)")
    args = parser.parse_args()

    print(
        f"Bradley-Terry fit throughput, {args.groups} groups, live-schedule comparisons (SIMULATED judge), "
        f"l2={args.l2}, {os.cpu_count()} CPUs, numpy {np.__version__}"
    )
    print("| N | method | total ms | us per group | vs batched | max abs diff vs batched |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for n in (int(x) for x in args.sizes.split(",")):
        groups = live_groups(args.groups, n, seed=n)
        fit_bradley_terry_batch(groups[:8], l2=args.l2)  # warm-up
        batched_s, batched = timed(lambda g=groups: fit_bradley_terry_batch(g, l2=args.l2), args.repeats)
        rows = [("batched Newton (arena_verl)", batched_s, batched)]
        rows.append(("per-group choix.opt_pairwise", *timed(lambda g=groups: fit_choix(g, args.l2), 1)))
        rows.append(("per-group scipy L-BFGS-B", *timed(lambda g=groups: fit_scipy(g, args.l2), 1)))
        for name, seconds, thetas in rows:
            diff = max(float(np.abs(a - b).max()) for a, b in zip(thetas, batched))
            print(
                f"| {n} | {name} | {seconds * 1e3:.1f} | {seconds / args.groups * 1e6:.1f} "
                f"| {seconds / batched_s:.1f}x | {diff:.1e} |"
            )


if __name__ == "__main__":
    main()
