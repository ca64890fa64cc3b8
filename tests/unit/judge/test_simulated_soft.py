"""The SIMULATED judge in probability mode (``verdict="probability"``): it reports the law's P(first is better), ties
splitting their mass, with Beta noise of concentration kappa, from the same uniforms as its hard verdicts (hard mode
keeps its streams, a hard and a soft judge of one seed are coupled); the pointwise score is the unrounded grade."""

import asyncio

import numpy as np
import pytest
from scipy.special import betaincinv, expit

from arena_verl.judge import SimulatedTraceJudge, Trace
from arena_verl.judge.simulated.law import DEFAULT_CONCENTRATION, VerdictLaw
from arena_verl.tournament import SimulatedJudge

DRAWS = 20_000


def trace_calls(judge: SimulatedTraceJudge, first: Trace, second: Trace, count: int = DRAWS) -> list:
    async def run():
        return [await judge.compare("p", first, second) for _ in range(count)]

    return asyncio.run(run())


@pytest.mark.parametrize("kappa", [1.0, DEFAULT_CONCENTRATION, 20.0])
@pytest.mark.parametrize("interface", ["pairs", "traces"])
def test_the_mean_is_the_laws_probability_and_the_variance_a_hard_verdicts_over_kappa_plus_one(kappa, interface):
    law = dict(sharpness=1.5, position_bias=0.4, tie_rate=0.1, parse_failure_rate=0.05, concentration=kappa)
    quality = (0.7, 0.0)
    if interface == "pairs":
        judge = SimulatedJudge(quality, **law, verdict="probability", seed=11)
        draws = [judge.verdict(1, 0) for _ in range(DRAWS)]  # the anchor (0) shown second
    else:
        judge = SimulatedTraceJudge(**law, verdict="probability", seed=11)
        draws = trace_calls(judge, Trace("b", quality_hint=0.0), Trace("a", quality_hint=0.7))
    failed = np.mean([d is None for d in draws])
    values = np.array([d for d in draws if d is not None])
    m = 0.9 * expit(1.5 * (0.0 - 0.7) + 0.4) + 0.1 * 0.5
    assert failed == pytest.approx(0.05, abs=4 * np.sqrt(0.05 * 0.95 / DRAWS))
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert values.mean() == pytest.approx(m, abs=4 * np.sqrt(m * (1 - m) / (kappa + 1) / len(values)))
    assert values.var() == pytest.approx(m * (1 - m) / (kappa + 1), rel=0.06)
    assert np.mean(np.isin(values, (0.0, 0.5, 1.0))) == 0.0  # soft, not hard verdicts


def test_the_trace_judge_keeps_its_documented_stream_in_probability_mode():
    """The hard mode's stream (three uniforms, then the latency): the anchor's outcome is the 1 - u_win quantile of
    Beta(kappa m, kappa (1 - m)). Written out with numpy and scipy, independently of the judge."""
    law = dict(sharpness=2.0, position_bias=0.3, tie_rate=0.2, concentration=3.0)
    judge = SimulatedTraceJudge(**law, latency_s=1e-4, latency_sigma=0.3, seed=9, verdict="probability")
    first, second = Trace("a", quality_hint=0.5), Trace("b", quality_hint=0.0)

    async def run():
        return [await judge.compare("p", first, second) for _ in range(200)], await judge.score("p", first)

    outcomes, score = asyncio.run(run())
    rng, mu = np.random.default_rng(9), np.log(1e-4) - 0.5 * 0.3**2
    m = 0.8 * expit(2.0 * 0.5 + 0.3) + 0.2 * 0.5
    expected = []
    for _ in range(200):
        _, _, u_win = rng.random(3)
        rng.lognormal(mu, 0.3)
        expected.append(float(betaincinv(3.0 * m, 3.0 * (1 - m), 1.0 - u_win)))
    assert outcomes == expected
    u_fail, noise = rng.random(), rng.normal(scale=0.15)
    assert u_fail >= 0 and score == float(np.clip(expit(2.0 * 0.5) + noise, 0.0, 1.0))


def test_hard_mode_is_unchanged_by_the_new_options():
    """The concentration is read in probability mode only: hard verdicts of every concentration are the same."""
    quality = np.linspace(-1.0, 1.0, 5)
    base = SimulatedJudge(quality, position_bias=0.5, tie_rate=0.1, seed=4)
    other = SimulatedJudge(quality, position_bias=0.5, tie_rate=0.1, seed=4, concentration=0.3, verdict="generate")
    pairs = [(0, 1), (3, 1), (4, 2), (1, 3)] * 30
    assert [base.verdict(i, j) for i, j in pairs] == [other.verdict(i, j) for i, j in pairs]


@pytest.mark.parametrize("anchor_shown_second", [False, True])
def test_a_soft_judge_is_coupled_with_the_hard_judge_of_its_seed(anchor_shown_second):
    """As kappa -> 0 the soft verdict is the hard verdict of the same uniforms; for any kappa the soft outcome is on
    the hard verdict's side more often than not, and (with kappa = inf) exactly the law's probability."""
    quality = np.array([0.0, 0.6, -0.4])
    first, second = (1, 0) if anchor_shown_second else (0, 1)
    hard = SimulatedJudge(quality, position_bias=0.3, seed=2)
    near_hard = SimulatedJudge(quality, position_bias=0.3, seed=2, verdict="probability", concentration=1e-6)
    soft = SimulatedJudge(quality, position_bias=0.3, seed=2, verdict="probability")
    exact = SimulatedJudge(quality, position_bias=0.3, seed=2, verdict="probability", concentration=np.inf)
    h = np.array([hard.verdict(first, second) for _ in range(2000)])
    assert np.array_equal(np.round([near_hard.verdict(first, second) for _ in range(2000)]), h)
    s = np.array([soft.verdict(first, second) for _ in range(2000)])
    assert np.mean((s > 0.5) == (h == 1.0)) > 0.75
    assert {exact.verdict(first, second) for _ in range(10)} == {expit(quality[first] - quality[second] + 0.3)}


def test_the_soft_coupling_is_monotone_across_presentation_orders():
    """With a first-position bonus, the anchor's outcome shown first is at least its outcome shown second."""
    law = VerdictLaw(sharpness=1.0, position_bias=0.8, concentration=2.0)
    for u in np.linspace(0.0, 0.999, 300):
        shown_first = law.probability(0.2, 0.0, (1.0, 1.0, u))
        shown_second = 1.0 - law.probability(0.0, 0.2, (1.0, 1.0, u), anchor_second=True)
        assert shown_first >= shown_second
    assert VerdictLaw(parse_failure_rate=0.1).probability(0.0, 0.0, (0.05, 0.9, 0.5)) is None


def test_the_pointwise_score_is_the_grade_before_rounding():
    quality = Trace("t", quality_hint=0.4)

    async def scores(judge):
        return [await judge.score("p", quality) for _ in range(500)]

    hard = asyncio.run(scores(SimulatedTraceJudge(sharpness=1.2, seed=3)))
    soft = asyncio.run(scores(SimulatedTraceJudge(sharpness=1.2, seed=3, verdict="probability")))
    assert [float(np.clip(np.round(2 * s) / 2, 0, 1)) for s in soft] == hard
    assert len(set(soft)) > 400 and all(0.0 <= s <= 1.0 for s in soft)
    assert np.mean(soft) == pytest.approx(expit(1.2 * 0.4), abs=0.02)


@pytest.mark.parametrize("kwargs", [dict(verdict="logprobs"), dict(concentration=0.0), dict(concentration=-1.0),
                                    dict(concentration=float("nan"))])  # fmt: skip
def test_bad_probability_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        SimulatedJudge([0.0, 1.0], **kwargs)
    with pytest.raises(ValueError):
        SimulatedTraceJudge(**kwargs)
