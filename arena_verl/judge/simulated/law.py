"""The SIMULATED judge's law, shared by its two interfaces: how a verdict is drawn from two hidden qualities, and how
long a call takes. For tests, benchmarks and the CPU demo only: a simulated judge never reads a trace, and anything
that reports figures from it must say that the judge was simulated.

- :class:`arena_verl.judge.simulated.pairs.SimulatedJudge`: ``await judge(first_index, second_index)`` over a
  vector of qualities (the tournament benchmarks), common random numbers per pair;
- :class:`arena_verl.judge.simulated.trace_judge.SimulatedTraceJudge`: the ``backend=simulated`` judge of training
  and the CPU demo (``compare(problem, first_trace, second_trace, ...)``), qualities from ``Trace.quality_hint`` or a
  text hash.

Both are :class:`SimulatedBase`: one identity (``name == "simulated"``), one :class:`VerdictLaw`, one
:class:`LatencyModel`; they differ only in where qualities and random numbers come from. Both answer in either verdict
mode of ``reward.arena.judge.verdict``: ``generate`` draws a hard verdict (0, 0.5, 1), ``probability`` reports the
law's probability that the first trace is better with per-call noise (:meth:`VerdictLaw.probability`), from the same
random numbers, so that a hard and a soft judge of one seed are coupled and hard mode keeps its streams.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv, expit, ndtr

from arena_verl.core.names import VERDICT_MODES

__all__ = [
    "DEFAULT_CONCENTRATION",
    "NOISES",
    "SIMULATED",
    "LatencyModel",
    "SimulatedBase",
    "VerdictLaw",
    "position_bias_for_first_win_rate",
]

SIMULATED = "simulated"  # the judge's name in logs, metrics (arena/simulated_judge), summaries and scores
NOISES = ("logistic", "probit")
_GRADE_NOISE = 0.15  # standard deviation of a pointwise grade's noise, on the probability scale
# Probability mode: the Beta concentration kappa of a reported probability around the law's. Its variance is a hard
# verdict's divided by kappa + 1 (4: a fifth), so one soft verdict is far from noise-free but tells more than one
# hard verdict.
DEFAULT_CONCENTRATION = 4.0


def position_bias_for_first_win_rate(rate: float) -> float:
    """The logistic first-position bonus under which two equal traces see the first one win with ``rate``
    (0.63, the average LLM judge, gives about 0.53)."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"rate must be in (0, 1), got {rate!r}")
    return float(np.log(rate / (1.0 - rate)))


@dataclass(frozen=True)
class VerdictLaw:
    """How a SIMULATED verdict is drawn from the qualities of the traces shown first and second.

    With probability ``parse_failure_rate`` the verdict is unparsable (``None``), else with ``tie_rate`` a tie
    (0.5), else the first trace wins (1.0; else 0.0) with probability
    ``F(sharpness * (q_first - q_second) + position_bias)``, ``F`` the logistic (Bradley-Terry) or the standard
    normal (probit, Thurstone) CDF. A verdict takes three uniforms ``(u_fail, u_tie, u_win)``. In probability mode
    the same uniforms give a number in [0, 1] instead (:meth:`probability`, with ``concentration``).
    """

    sharpness: float = 1.0
    noise: str = "logistic"
    position_bias: float = 0.0
    tie_rate: float = 0.0
    parse_failure_rate: float = 0.0
    concentration: float = DEFAULT_CONCENTRATION

    def __post_init__(self):
        if self.noise not in NOISES:
            raise ValueError(f"noise must be 'logistic' or 'probit', got {self.noise!r}")
        for name in ("tie_rate", "parse_failure_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:  # also rejects NaN
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not (self.sharpness >= 0 and np.isfinite(self.sharpness) and np.isfinite(self.position_bias)):
            raise ValueError(
                f"sharpness must be finite and >= 0 and position_bias finite, got {self.sharpness!r}, "
                f"{self.position_bias!r}"
            )
        if not self.concentration > 0:  # also rejects NaN; inf is the noise-free probability
            raise ValueError(f"concentration must be > 0 (inf: no noise), got {self.concentration!r}")
        for name in ("sharpness", "position_bias", "tie_rate", "parse_failure_rate", "concentration"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def link(self, margin: float) -> float:
        """``F(margin)``: the logistic or the standard normal CDF."""
        return float(expit(margin) if self.noise == "logistic" else ndtr(margin))

    def first_win_probability(self, first_quality: float, second_quality: float) -> float:
        """P(the trace shown first wins | neither a tie nor a parse failure)."""
        return self.link(self.sharpness * (first_quality - second_quality) + self.position_bias)

    def verdict(
        self, first_quality: float, second_quality: float, uniforms, *, anchor_second: bool = False
    ) -> float | None:
        """The verdict for the trace shown first, from three uniforms ``(u_fail, u_tie, u_win)``.

        ``u_win`` belongs to one trace of the pair, the anchor (the first shown by default): the anchor wins iff
        ``u_win < P(anchor wins in this presentation)``. A judge that keeps one draw per pair whatever the order
        (common random numbers) passes ``anchor_second=True`` when the pair's anchor is shown second, so its
        verdicts are coupled monotonically across presentation orders.
        """
        u_fail, u_tie, u_win = uniforms
        if u_fail < self.parse_failure_rate:
            return None
        if u_tie < self.tie_rate:
            return 0.5
        p_first = self.first_win_probability(first_quality, second_quality)
        first_won = not (u_win < 1.0 - p_first) if anchor_second else u_win < p_first
        return 1.0 if first_won else 0.0

    def expected_outcome(self, first_quality: float, second_quality: float) -> float:
        """The mean of a hard verdict that is not a parse failure: P(first is better), ties splitting their mass,
        ``(1 - tie_rate) * P(first wins) + tie_rate / 2``."""
        p_first = self.first_win_probability(first_quality, second_quality)
        return (1.0 - self.tie_rate) * p_first + 0.5 * self.tie_rate

    def probability(
        self, first_quality: float, second_quality: float, uniforms, *, anchor_second: bool = False
    ) -> float | None:
        """Probability mode: the judge's reported P(first is better), from the three uniforms of :meth:`verdict`.

        Noise model: with probability ``parse_failure_rate`` no verdict (``None``: the call failed, as a model
        call that errs or times out); else the anchor's outcome is the ``1 - u_win`` quantile of
        ``Beta(kappa * m, kappa * (1 - m))``, ``m`` the anchor's :meth:`expected_outcome` and ``kappa`` the
        ``concentration``. Its mean is ``m`` (the hard verdict's mean), its variance ``m (1 - m) / (kappa + 1)`` (a
        hard verdict's divided by ``kappa + 1``); ``kappa -> 0`` gives the hard verdict of the same uniforms,
        ``kappa = inf`` the exact ``m``. The quantile is monotone in ``u_win``, so the coupling across presentation
        orders (``anchor_second``) is the hard verdict's. ``u_tie`` is not used (ties are folded into ``m``).
        """
        u_fail, _, u_win = uniforms
        if u_fail < self.parse_failure_rate:
            return None
        m_first = self.expected_outcome(first_quality, second_quality)
        if not 0.0 < m_first < 1.0 or np.isinf(self.concentration):
            return m_first  # no noise: a certain verdict, or kappa = inf
        kappa = self.concentration
        m_anchor = 1.0 - m_first if anchor_second else m_first
        outcome = float(betaincinv(kappa * m_anchor, kappa * (1.0 - m_anchor), 1.0 - u_win))
        return 1.0 - outcome if anchor_second else outcome

    def grade(self, quality: float, u_fail: float, noise: float) -> float | None:
        """A pointwise grade in {0, 0.5, 1}: ``F(sharpness * quality) + noise`` rounded to halves, ``None`` with
        probability ``parse_failure_rate``. ``noise`` is a draw of N(0, 1)."""
        if u_fail < self.parse_failure_rate:
            return None
        level = self.link(self.sharpness * quality) + _GRADE_NOISE * noise
        return float(np.clip(np.round(2.0 * level) / 2.0, 0.0, 1.0))

    def expected_grade(self, quality: float, u_fail: float, noise: float) -> float | None:
        """Probability mode's pointwise score: the grade before rounding to halves, ``F(sharpness * quality) +
        noise`` clipped to [0, 1] (the same draws as :meth:`grade`), ``None`` with probability
        ``parse_failure_rate``."""
        if u_fail < self.parse_failure_rate:
            return None
        return float(np.clip(self.link(self.sharpness * quality) + _GRADE_NOISE * noise, 0.0, 1.0))


@dataclass(frozen=True)
class LatencyModel:
    """How long a SIMULATED call takes: mean ``mean_s`` seconds (0: answers at once); exponential when ``sigma`` is
    0, else log-normal with that sigma (of the log) and the same mean (``judge.sim_latency_sigma``)."""

    mean_s: float = 0.0
    sigma: float = 0.0

    def __post_init__(self):
        if not (0 <= self.mean_s < np.inf and 0 <= self.sigma < np.inf):  # also rejects NaN
            raise ValueError(f"the latency mean ({self.mean_s!r}) and latency_sigma ({self.sigma!r}) must be >= 0")
        object.__setattr__(self, "mean_s", float(self.mean_s))
        object.__setattr__(self, "sigma", float(self.sigma))

    @property
    def log_mean(self) -> float:
        """The log-normal's mu: E[exp(N(mu, sigma^2))] = exp(mu + sigma^2 / 2), so this mu makes the mean mean_s."""
        return float(np.log(self.mean_s) - 0.5 * self.sigma**2)

    def draw(self, rng: np.random.Generator) -> float:
        """One call's latency in seconds (no draw is taken when the mean is 0)."""
        if self.mean_s == 0:
            return 0.0
        if self.sigma == 0:
            return float(rng.exponential(self.mean_s))
        return float(rng.lognormal(self.log_mean, self.sigma))


class SimulatedBase:
    """What the SIMULATED judges share: their identity, their :class:`VerdictLaw` (``law``), their
    :class:`LatencyModel` (``latency_model``), the generator latencies are drawn from (``rng``) and the verdict mode
    (``verdict_mode``: ``generate``, hard verdicts, or ``probability``, :meth:`VerdictLaw.probability`)."""

    name = SIMULATED
    simulated = True  # its verdicts are synthetic: the referee counts its calls (arena/simulated_judge)
    backend = SIMULATED  # the older attribute of SimulatedJudge; the same identity

    def __init__(
        self, law: VerdictLaw, latency_model: LatencyModel, rng: np.random.Generator, verdict: str = "generate"
    ):
        if verdict not in VERDICT_MODES:
            raise ValueError(f"verdict must be one of {VERDICT_MODES}, got {verdict!r}")
        self.law = law
        self.latency_model = latency_model
        self.rng = rng
        self.verdict_mode = verdict

    def _outcome(self, first_quality: float, second_quality: float, uniforms, anchor_second: bool = False):
        """The verdict of the mode: a hard one (:meth:`VerdictLaw.verdict`) or a probability."""
        draw = self.law.probability if self.verdict_mode == "probability" else self.law.verdict
        return draw(first_quality, second_quality, uniforms, anchor_second=anchor_second)

    def _grade(self, quality: float, u_fail: float, noise: float) -> float | None:
        """The pointwise score of the mode: a grade in {0, 0.5, 1} or the expected score."""
        draw = self.law.expected_grade if self.verdict_mode == "probability" else self.law.grade
        return draw(quality, u_fail, noise)

    @property
    def sharpness(self) -> float:
        return self.law.sharpness

    @property
    def noise(self) -> str:
        return self.law.noise

    @property
    def position_bias(self) -> float:
        return self.law.position_bias

    @property
    def tie_rate(self) -> float:
        return self.law.tie_rate

    @property
    def parse_failure_rate(self) -> float:
        return self.law.parse_failure_rate

    @property
    def concentration(self) -> float:
        return self.law.concentration

    @property
    def latency_s(self) -> float:
        """Mean seconds per call (``latency_mean`` of :class:`SimulatedJudge`)."""
        return self.latency_model.mean_s

    latency_mean = latency_s

    @property
    def latency_sigma(self) -> float:
        return self.latency_model.sigma

    def draw_latency(self) -> float:
        """One call's latency in seconds (see :class:`LatencyModel`), drawn from ``rng``."""
        return self.latency_model.draw(self.rng)

    async def _wait(self) -> None:
        delay = self.draw_latency()
        if delay > 0:
            await asyncio.sleep(delay)
