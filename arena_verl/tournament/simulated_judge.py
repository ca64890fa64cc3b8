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
    ``latency_mean`` seconds (0 = answer at once). Draws come from one seeded generator, in call order.

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
        self.calls = 0
        self.parse_failures = 0

    def first_win_probability(self, first: int, second: int) -> float:
        """P(first wins | neither a tie nor a parse failure)."""
        margin = self.sharpness * (self.quality[first] - self.quality[second]) + self.position_bias
        return float(expit(margin) if self.noise == "logistic" else ndtr(margin))

    def verdict(self, first: int, second: int) -> float | None:
        """Draw one verdict without waiting."""
        self.calls += 1
        u = self.rng.random()
        if u < self.parse_failure_rate:
            self.parse_failures += 1
            return None
        if u < self.parse_failure_rate + (1.0 - self.parse_failure_rate) * self.tie_rate:
            return 0.5
        return 1.0 if self.rng.random() < self.first_win_probability(first, second) else 0.0

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
