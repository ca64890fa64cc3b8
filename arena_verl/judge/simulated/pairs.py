"""The SIMULATED judge of the tournament benchmarks: ``await judge(first_index, second_index)`` over a vector of
hidden qualities. For tests, benchmarks and the CPU demo; it never reads a trace, and anything that reports figures
from it must say that the judge was simulated. Its verdict law and latency model are
:mod:`arena_verl.judge.simulated.law`'s, shared with the trace judge of training."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from arena_verl.judge.simulated.law import (
    DEFAULT_CONCENTRATION,
    LatencyModel,
    SimulatedBase,
    VerdictLaw,
    position_bias_for_first_win_rate,
)

__all__ = ["SimulatedJudge", "position_bias_for_first_win_rate"]


class SimulatedJudge(SimulatedBase):
    """SIMULATED judge: ``await judge(first, second)`` returns 1.0 (first won), 0.0 (second won), 0.5 (tie) or
    ``None`` (a simulated parse failure); with ``verdict="probability"``, a number in [0, 1] instead (the law's
    P(first is better) with Beta noise of concentration ``concentration``,
    :meth:`~arena_verl.judge.simulated.law.VerdictLaw.probability`) or ``None``.

    With probability ``parse_failure_rate`` the verdict is unparsable, else with ``tie_rate`` a tie, else the first
    trace wins with probability ``F(sharpness * (q[first] - q[second]) + position_bias)``, ``F`` the logistic
    (Bradley-Terry) or the standard normal (probit, Thurstone) CDF (:class:`~arena_verl.judge.simulated.law.
    VerdictLaw`). Latency has mean ``latency_mean`` seconds (0 = answer at once), log-normal with ``latency_sigma``
    (0: exponential; :class:`~arena_verl.judge.simulated.law.LatencyModel`).

    Common random numbers: the k-th call on a pair uses the k-th draw of a generator seeded by (seed, pair),
    whatever the presentation order and whatever else was judged before. Two strategies that judge the same pair
    therefore get coupled verdicts, so their difference is measured with far less noise than independent draws give.
    Both verdict modes take the same draws: a hard and a soft judge of one seed are coupled too.

    Parameters
    ----------
    quality : sequence of float
        Hidden quality of each trace.
    """

    def __init__(
        self,
        quality: Sequence[float],
        *,
        sharpness: float = 1.0,
        noise: str = "logistic",
        position_bias: float = 0.0,
        tie_rate: float = 0.0,
        parse_failure_rate: float = 0.0,
        latency_mean: float = 0.0,
        latency_sigma: float = 0.5,
        seed: int | np.random.Generator | None = 0,
        verdict: str = "generate",
        concentration: float = DEFAULT_CONCENTRATION,
    ):
        self.quality = np.asarray(quality, dtype=np.float64)
        if self.quality.ndim != 1 or not np.isfinite(self.quality).all():
            raise ValueError("quality must be a finite 1-D sequence")
        law = VerdictLaw(sharpness, noise, position_bias, tie_rate, parse_failure_rate, concentration)
        super().__init__(law, LatencyModel(latency_mean, latency_sigma), np.random.default_rng(seed), verdict)
        self._base_seed = int(self.rng.integers(2**63))
        self._pair_rngs: dict[tuple[int, int], np.random.Generator] = {}
        self.calls = 0
        self.parse_failures = 0

    def first_win_probability(self, first: int, second: int) -> float:
        """P(first wins | neither a tie nor a parse failure)."""
        return self.law.first_win_probability(self.quality[first], self.quality[second])

    def verdict(self, first: int, second: int) -> float | None:
        """Draw one verdict (hard or a probability, by the verdict mode) without waiting."""
        self.calls += 1
        low, high = min(first, second), max(first, second)
        pair_rng = self._pair_rngs.get((low, high))
        if pair_rng is None:
            pair_rng = self._pair_rngs[low, high] = np.random.default_rng([self._base_seed, low, high])
        # The pair's draw belongs to its lower index (the anchor): monotone coupling across presentation orders.
        outcome = self._outcome(self.quality[first], self.quality[second], pair_rng.random(3), first != low)
        if outcome is None:
            self.parse_failures += 1
        return outcome

    def latency(self) -> float:
        """One call's latency in seconds (:meth:`draw_latency`)."""
        return self.draw_latency()

    async def __call__(self, first: int, second: int) -> float | None:
        outcome = self.verdict(first, second)  # drawn before awaiting, so results do not depend on timing
        delay = self.latency()
        if delay:
            await asyncio.sleep(delay)
        return outcome
