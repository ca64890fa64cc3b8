"""The SIMULATED trace judge: the ``backend=simulated`` judge of training, tests, benchmarks and the CPU demo. It
never reads a trace's reasoning: each trace has a hidden quality (``extra_info.sim_quality`` when the sample carries
one, else a seeded hash of its text), and verdicts are drawn from those qualities by the law it shares with the
tournament benchmarks' judge (:mod:`arena_verl.judge.simulated.law`). Logs and metrics name it ``simulated``.
With ``verdict="probability"`` (``reward.arena.judge.verdict``) it reports the law's probability that the first trace
is better, with Beta noise of concentration ``concentration`` (:meth:`~arena_verl.judge.simulated.law.VerdictLaw.
probability`), and an unrounded pointwise score, from the same draws as its hard verdicts."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
from scipy.special import ndtri

from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.judge.simulated.law import DEFAULT_CONCENTRATION, LatencyModel, SimulatedBase, VerdictLaw

__all__ = ["SimulatedTraceJudge", "hashed_quality", "simulated_judge"]


def hashed_quality(text: str, seed: int = 0) -> float:
    """A standard-normal quality derived from the text: the same text always gets the same quality."""
    digest = hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=8, person=struct.pack("<q", seed))
    uniform = (int.from_bytes(digest.digest(), "little") + 0.5) / 2.0**64
    return float(ndtri(uniform))


class SimulatedTraceJudge(SimulatedBase):
    """SIMULATED judge over traces: ``P(first wins) = F(sharpness * (q_first - q_second) + position_bias)`` with
    tie and parse-failure rates, as :class:`arena_verl.judge.simulated.pairs.SimulatedJudge` (one
    :class:`~arena_verl.judge.simulated.law.VerdictLaw`; ``F`` logistic unless ``noise="probit"``).

    Draws come from one generator seeded by ``seed``: each call takes its verdict's three uniforms (a pointwise
    score: a uniform and a normal), then its latency. Each call waits a random latency of mean ``latency_s`` (0:
    answers at once): exponential when ``latency_sigma`` is 0 (the historical default), else log-normal with that
    sigma (of the log), e.g. 0.3 for a judge whose calls take about the same time (the live-latency benchmark's
    protocol); :class:`~arena_verl.judge.simulated.law.LatencyModel`.

    ``verdict`` is ``generate`` (hard verdicts 0 / 0.5 / 1, grades in {0, 0.5, 1}) or ``probability`` (a number in
    [0, 1] from the same three uniforms, Beta noise of ``concentration`` around the law's P(first is better); a
    score: the grade before rounding). Both modes take the same draws, so hard mode's stream does not change."""

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
        noise: str = "logistic",
        verdict: str = "generate",
        concentration: float = DEFAULT_CONCENTRATION,
    ):
        law = VerdictLaw(sharpness, noise, position_bias, tie_rate, parse_failure_rate, concentration)
        super().__init__(law, LatencyModel(latency_s, latency_sigma), np.random.default_rng(seed), verdict)
        self.seed = int(seed)
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
        uniforms = self.rng.random(3)
        await self._wait()
        self.stats.calls += 1
        outcome = self._outcome(self.quality(first), self.quality(second), uniforms)
        if outcome is None:
            self.stats.failures += 1
        return outcome

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        u_fail, noise = self.rng.random(), self.rng.standard_normal()
        await self._wait()
        self.stats.calls += 1
        grade = self._grade(self.quality(trace), u_fail, noise)
        if grade is None:
            self.stats.failures += 1
        return grade


def simulated_judge(settings) -> SimulatedTraceJudge:
    """The SIMULATED judge ``reward.arena.judge.*`` describes (``sim_*``, ``seed``, ``verdict``): the registry's
    factory of the ``simulated`` backend (:mod:`arena_verl.backend_registry`)."""
    return SimulatedTraceJudge(
        sharpness=settings.options.sim_sharpness,
        position_bias=settings.options.sim_position_bias,
        tie_rate=settings.options.sim_tie_rate,
        parse_failure_rate=settings.options.sim_parse_failure_rate,
        latency_s=settings.options.sim_latency_s,
        latency_sigma=settings.options.sim_latency_sigma,
        seed=settings.seed,
        verdict=settings.verdict,
    )
