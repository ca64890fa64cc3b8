"""The SIMULATED trace judge: for tests, benchmarks and the CPU demo only. It never reads a trace's reasoning:
each trace has a hidden quality (``extra_info.sim_quality`` when the sample carries one, else a seeded hash of its
text), and verdicts are drawn from those qualities. Logs and metrics name it ``simulated``."""

from __future__ import annotations

import asyncio
import hashlib
import struct

import numpy as np
from scipy.special import expit, ndtri

from arena_verl.judge.base import JudgeStats, Trace

__all__ = ["SimulatedTraceJudge", "hashed_quality"]


def hashed_quality(text: str, seed: int = 0) -> float:
    """A standard-normal quality derived from the text: the same text always gets the same quality."""
    digest = hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=8, person=struct.pack("<q", seed))
    uniform = (int.from_bytes(digest.digest(), "little") + 0.5) / 2.0**64
    return float(ndtri(uniform))


class SimulatedTraceJudge:
    """SIMULATED judge over traces: ``P(first wins) = sigmoid(sharpness * (q_first - q_second) + position_bias)``,
    with tie and parse-failure settings as :class:`arena_verl.core.tournament.SimulatedJudge`. Draws come from one
    generator seeded by ``seed``.

    Each call waits a random latency of mean ``latency_s`` (0: answers at once): exponential when ``latency_sigma``
    is 0 (the historical default), else log-normal with that sigma (of the log), e.g. 0.3 for a judge whose calls
    take about the same time (the live-latency benchmark's protocol)."""

    name = "simulated"

    def __init__(
        self,
        *,
        sharpness: float = 1.0,
        position_bias: float = 0.0,
        tie_rate: float = 0.0,
        parse_failure_rate: float = 0.0,
        latency_s: float = 0.0,
        latency_sigma: float = 0.0,
        seed: int = 0,
    ):
        if not (latency_s >= 0 and latency_sigma >= 0):  # also rejects NaN
            raise ValueError(f"latency_s and latency_sigma must be >= 0, got {latency_s!r} and {latency_sigma!r}")
        self.sharpness, self.position_bias = float(sharpness), float(position_bias)
        self.tie_rate, self.parse_failure_rate = float(tie_rate), float(parse_failure_rate)
        self.latency_s, self.latency_sigma, self.seed = float(latency_s), float(latency_sigma), int(seed)
        self.rng = np.random.default_rng(seed)
        self.stats = JudgeStats()

    def quality(self, trace: Trace) -> float:
        return trace.quality_hint if trace.quality_hint is not None else hashed_quality(trace.text, self.seed)

    async def compare(
        self,
        problem: str,
        first: Trace,
        second: Trace,
        reference: str | None = None,
        *,
        task: str = "math",
        group: str | None = None,
    ) -> float | None:
        u_fail, u_tie, u_win = self.rng.random(3)
        await self._wait()
        self.stats.calls += 1
        if u_fail < self.parse_failure_rate:
            self.stats.failures += 1
            return None
        if u_tie < self.tie_rate:
            return 0.5
        margin = self.sharpness * (self.quality(first) - self.quality(second)) + self.position_bias
        return 1.0 if u_win < expit(margin) else 0.0

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        u_fail, noise = self.rng.random(), self.rng.normal(scale=0.15)
        await self._wait()
        self.stats.calls += 1
        if u_fail < self.parse_failure_rate:
            self.stats.failures += 1
            return None
        level = expit(self.sharpness * self.quality(trace)) + noise
        return float(np.clip(np.round(2.0 * level) / 2.0, 0.0, 1.0))

    def draw_latency(self) -> float:
        """One call's latency in seconds: exponential (``latency_sigma == 0``) or log-normal, mean ``latency_s``."""
        if self.latency_s == 0:
            return 0.0
        if self.latency_sigma == 0:
            return float(self.rng.exponential(self.latency_s))
        # E[exp(N(mu, sigma^2))] = exp(mu + sigma^2 / 2): this mu makes the mean latency_s.
        mu = np.log(self.latency_s) - 0.5 * self.latency_sigma**2
        return float(self.rng.lognormal(mu, self.latency_sigma))

    async def _wait(self) -> None:
        delay = self.draw_latency()
        if delay > 0:
            await asyncio.sleep(delay)
