"""Group certainty (arena_verl/core/tournament/certainty.py) by schedule, group size and judge accuracy.

Each group's traces have distinct hidden qualities (a random permutation); a SIMULATED judge of accuracy ``a`` names
the better trace with probability ``a`` on every call, independently (0.5: a fair coin; 1.0: a consistent judge, a
transitive preference that tells every pair apart). ``first`` is a judge that only has a position bias: it always
prefers the trace shown first, whatever the traces. Each group runs the project's tournament (``run_tournament``,
presentation order drawn by the runner) and its certainty is computed from its own verdicts and fit. Group ``g`` of
every judge uses the same qualities, presentation seed and call uniforms, so the judges are compared on common random
numbers. ``--soft`` makes every verdict a probability: Beta noise of concentration 4 around the judge's accuracy.

    python scripts/bench/certainty.py                      # live and round_robin, N = 4, 8, 16, 400 groups each
    python scripts/bench/certainty.py --order-effect       # fit the first-position bonus too
"""

from __future__ import annotations

import argparse
import asyncio

import numpy as np
from scipy.special import betaincinv

from arena_verl.core.options import DEFAULT_L2
from arena_verl.core.tournament import run_tournament
from arena_verl.core.tournament.certainty import group_certainty

JUDGES = ("coin", "first", "0.6", "0.75", "0.9", "consistent")
ACCURACY = {"coin": 0.5, "0.6": 0.6, "0.75": 0.75, "0.9": 0.9, "consistent": 1.0}
CONCENTRATION = 4.0


def make_judge(kind: str, quality: np.ndarray, rng: np.random.Generator, soft: bool = False):
    """The SIMULATED judge ``kind`` (one of :data:`JUDGES`) over ``quality``: one uniform per call from ``rng``."""
    accuracy = ACCURACY.get(kind)

    async def judge(first: int, second: int) -> float:
        u = rng.random()
        if accuracy is None:  # "first": pure position bias
            return 1.0
        mean = accuracy if quality[first] > quality[second] else 1.0 - accuracy
        if not soft:
            return 1.0 if u < mean else 0.0
        if mean in (0.0, 1.0):
            return mean
        return float(betaincinv(CONCENTRATION * mean, CONCENTRATION * (1.0 - mean), u))

    return judge


async def _one_group(kind, strategy, num_items, seed, soft, order_effect, l2) -> tuple[float, int]:
    rng = np.random.default_rng([seed, num_items])
    quality = rng.permutation(num_items).astype(float)
    result = await run_tournament(
        num_items, make_judge(kind, quality, rng, soft), strategy, seed=seed, order_effect=order_effect, l2=l2
    )
    certainty = group_certainty(num_items, result.comparisons, result.strengths, result.order_effect)
    return certainty, len(result.comparisons)


def certainties(
    kind: str,
    strategy: str = "live",
    num_items: int = 8,
    groups: int = 400,
    *,
    first_seed: int = 0,
    soft: bool = False,
    order_effect: bool = False,
    l2: float = DEFAULT_L2,
) -> tuple[np.ndarray, int]:
    """Certainty of ``groups`` tournaments judged by ``kind`` (seeds ``first_seed ...``), and the calls per group."""

    async def run() -> list[tuple[float, int]]:
        return [
            await _one_group(kind, strategy, num_items, seed, soft, order_effect, l2)
            for seed in range(first_seed, first_seed + groups)
        ]

    out = asyncio.run(run())
    return np.array([c for c, _ in out]), out[0][1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=400)
    parser.add_argument("--sizes", default="4,8,16")
    parser.add_argument("--strategies", default="live,round_robin")
    parser.add_argument("--l2", type=float, default=DEFAULT_L2)
    parser.add_argument("--order-effect", action="store_true", help="fit the first-position bonus")
    parser.add_argument("--soft", action="store_true", help="verdicts are probabilities (Beta noise, kappa 4)")
    args = parser.parse_args()

    print(
        f"Group certainty, {args.groups} groups per cell, SIMULATED judges of fixed accuracy, l2={args.l2}, "
        f"order_effect={args.order_effect}, {'soft' if args.soft else 'hard'} verdicts"
    )
    print("| strategy | N | calls | judge | mean certainty | SE | / consistent |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for strategy in args.strategies.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            rows = {}
            for kind in JUDGES:
                values, calls = certainties(
                    kind, strategy, n, args.groups, soft=args.soft, order_effect=args.order_effect, l2=args.l2
                )
                rows[kind] = (float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values))), calls)
            reference = rows["consistent"][0]
            for kind, (mean, se, calls) in rows.items():
                ratio = mean / reference if reference > 0 else float("nan")
                print(f"| {strategy} | {n} | {calls} | {kind} | {mean:.3f} | {se:.3f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
