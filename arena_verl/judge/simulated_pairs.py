"""A SIMULATED pairwise judge for tests, benchmarks and the CPU demo. It never reads a trace: verdicts are drawn
from hidden per-trace qualities. Anything that reports figures from it must say that the judge was simulated."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
from scipy.special import expit, ndtr

__all__ = ["SimulatedJudge", "position_bias_for_first_win_rate"]


def position_bias_for_first_win_rate(rate: float) -> float:
    """The logistic first-position bonus under which two equal traces see the first one win with ``rate``
    (0.63, the average LLM judge, gives about 0.53)."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"rate must be in (0, 1), got {rate!r}")
    return float(np.log(rate / (1.0 - rate)))


class SimulatedJudge:
    """SIMULATED judge: ``await judge(first, second)`` returns 1.0 (first won), 0.0 (second won), 0.5 (tie) or
    ``None`` (a simulated parse failure).

    With probability ``parse_failure_rate`` the verdict is unparsable, else with ``tie_rate`` a tie, else the first
    trace wins with probability ``F(sharpness * (q[first] - q[second]) + position_bias)``, ``F`` the logistic
    (Bradley-Terry) or the standard normal (probit, Thurstone) CDF. Latency is lognormal with mean
    ``latency_mean`` seconds (0 = answer at once).

    Common random numbers: the k-th call on a pair uses the k-th draw of a generator seeded by (seed, pair),
    whatever the presentation order and whatever else was judged before. Two strategies that judge the same pair
    therefore get coupled verdicts, so their difference is measured with far less noise than independent draws give.

    Parameters
    ----------
    quality : sequence of float
        Hidden quality of each trace.
    """

    backend = "simulated"

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
    ):
        self.quality = np.asarray(quality, dtype=np.float64)
        if self.quality.ndim != 1 or not np.isfinite(self.quality).all():
            raise ValueError("quality must be a finite 1-D sequence")
        if noise not in ("logistic", "probit"):
            raise ValueError(f"noise must be 'logistic' or 'probit', got {noise!r}")
        for name, rate in (("tie_rate", tie_rate), ("parse_failure_rate", parse_failure_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {rate!r}")
        if sharpness < 0 or latency_mean < 0 or latency_sigma < 0:
            raise ValueError("sharpness, latency_mean and latency_sigma must be >= 0")
        self.sharpness, self.noise, self.position_bias = float(sharpness), noise, float(position_bias)
        self.tie_rate, self.parse_failure_rate = float(tie_rate), float(parse_failure_rate)
        self.latency_mean, self.latency_sigma = float(latency_mean), float(latency_sigma)
        self.rng = np.random.default_rng(seed)
        self._base_seed = int(self.rng.integers(2**63))
        self._pair_rngs: dict[tuple[int, int], np.random.Generator] = {}
        self.calls = 0
        self.parse_failures = 0

    def first_win_probability(self, first: int, second: int) -> float:
        """P(first wins | neither a tie nor a parse failure)."""
        margin = self.sharpness * (self.quality[first] - self.quality[second]) + self.position_bias
        return float(expit(margin) if self.noise == "logistic" else ndtr(margin))

    def verdict(self, first: int, second: int) -> float | None:
        """Draw one verdict without waiting."""
        self.calls += 1
        low, high = min(first, second), max(first, second)
        pair_rng = self._pair_rngs.get((low, high))
        if pair_rng is None:
            pair_rng = self._pair_rngs[low, high] = np.random.default_rng([self._base_seed, low, high])
        u_fail, u_tie, u_win = pair_rng.random(3)
        if u_fail < self.parse_failure_rate:
            self.parse_failures += 1
            return None
        if u_tie < self.tie_rate:
            return 0.5
        # The lower index wins iff u_win < P(lower wins in this presentation): monotone coupling across orders.
        p_low = self.first_win_probability(low, high) if first == low else 1.0 - self.first_win_probability(high, low)
        low_won = u_win < p_low
        return float(low_won == (first == low))

    def latency(self) -> float:
        if self.latency_mean == 0.0:
            return 0.0
        # Lognormal with the requested mean: E = exp(mu + sigma^2 / 2).
        mu = np.log(self.latency_mean) - 0.5 * self.latency_sigma**2
        return float(self.rng.lognormal(mu, self.latency_sigma))

    async def __call__(self, first: int, second: int) -> float | None:
        outcome = self.verdict(first, second)  # drawn before awaiting, so results do not depend on timing
        delay = self.latency()
        if delay:
            await asyncio.sleep(delay)
        return outcome
