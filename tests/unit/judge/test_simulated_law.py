"""The two SIMULATED judge interfaces are one judge: one identity, one verdict law, one latency model, and each keeps
its documented random stream (same seed, same verdicts; common random numbers per pair for SimulatedJudge)."""

import asyncio

import numpy as np
import pytest
from scipy.special import expit, ndtr

from arena_verl.judge import SimulatedTraceJudge, Trace, make_judge
from arena_verl.judge.simulated.law import SIMULATED, LatencyModel, SimulatedBase, VerdictLaw
from arena_verl.settings import JudgeSettings, judge_settings
from arena_verl.tournament import SimulatedJudge

DRAWS = 20_000


def pair_verdicts(judge: SimulatedJudge, first: int, second: int) -> list:
    return [judge.verdict(first, second) for _ in range(DRAWS)]


def trace_verdicts(judge: SimulatedTraceJudge, first: Trace, second: Trace) -> list:
    async def run():
        return [await judge.compare("p", first, second) for _ in range(DRAWS)]

    return asyncio.run(run())


def rates(verdicts: list) -> np.ndarray:
    """Shares of (parse failures, ties, first won, second won)."""
    return np.array([np.mean([v is outcome if outcome is None else v == outcome for v in verdicts])
                     for outcome in (None, 0.5, 1.0, 0.0)])  # fmt: skip


def test_both_interfaces_have_one_identity():
    pairs, traces, configured = SimulatedJudge([0.0, 1.0]), SimulatedTraceJudge(), make_judge(JudgeSettings())
    for judge in (pairs, traces, configured):
        assert isinstance(judge, SimulatedBase)
        assert judge.name == judge.backend == SIMULATED == "simulated"
    for cls in (SimulatedJudge, SimulatedTraceJudge, SimulatedBase):
        assert "SIMULATED" in cls.__doc__


def test_the_same_arguments_give_the_same_law_and_latency_model():
    common = dict(sharpness=1.7, noise="probit", position_bias=0.4, tie_rate=0.1, parse_failure_rate=0.05)
    pairs = SimulatedJudge([0.0, 1.0], **common, latency_mean=0.3, latency_sigma=0.4, seed=3)
    traces = SimulatedTraceJudge(**common, latency_s=0.3, latency_sigma=0.4, seed=3)
    assert pairs.law == traces.law == VerdictLaw(1.7, "probit", 0.4, 0.1, 0.05)
    assert pairs.latency_model == traces.latency_model == LatencyModel(0.3, 0.4)
    assert (pairs.latency_mean, pairs.latency_s, pairs.latency_sigma) == (traces.latency_s, 0.3, 0.4)
    # The settings' judge.sim_* keys reach the same law.
    sim = dict(sim_sharpness=1.7, sim_position_bias=0.4, sim_tie_rate=0.1, sim_parse_failure_rate=0.05)
    configured = make_judge(judge_settings(**sim, sim_latency_s=0.3, sim_latency_sigma=0.4))
    assert configured.law == VerdictLaw(1.7, "logistic", 0.4, 0.1, 0.05)
    assert configured.latency_model == LatencyModel(0.3, 0.4)


@pytest.mark.parametrize("noise, cdf", [("logistic", expit), ("probit", ndtr)])
@pytest.mark.parametrize("better_first", [True, False])
def test_both_interfaces_draw_the_same_rates(noise, cdf, better_first):
    """Same qualities and settings: the same shares of failures, ties and wins (both presentation orders, so the
    pair judge's coupled draw for its lower index shown second is checked against the trace judge's plain draw)."""
    law = dict(sharpness=1.5, noise=noise, position_bias=0.4, tie_rate=0.1, parse_failure_rate=0.05)
    quality = (0.7, 0.0)
    first, second = (0, 1) if better_first else (1, 0)
    pairs = rates(pair_verdicts(SimulatedJudge(quality, **law, seed=11), first, second))
    shown = [Trace(f"t{i}", quality_hint=quality[i]) for i in (first, second)]
    traces = rates(trace_verdicts(SimulatedTraceJudge(**law, seed=11), *shown))
    p_first = cdf(1.5 * (quality[first] - quality[second]) + 0.4)
    expected = np.array([0.05, 0.95 * 0.1, 0.95 * 0.9 * p_first, 0.95 * 0.9 * (1 - p_first)])
    tolerance = 4 * np.sqrt(expected * (1 - expected) / DRAWS) + 1e-3  # four standard errors
    assert np.all(np.abs(pairs - expected) < tolerance), (pairs, expected)
    assert np.all(np.abs(traces - expected) < tolerance), (traces, expected)
    assert np.all(np.abs(pairs - traces) < np.sqrt(2) * tolerance)


@pytest.mark.parametrize("sigma", [0.0, 0.4])
def test_both_interfaces_draw_the_same_latency_distribution(sigma):
    pairs = SimulatedJudge([0.0, 1.0], latency_mean=0.2, latency_sigma=sigma, seed=5)
    traces = SimulatedTraceJudge(latency_s=0.2, latency_sigma=sigma, seed=5)
    for judge in (pairs, traces):
        draws = np.array([judge.draw_latency() for _ in range(DRAWS)])
        assert draws.mean() == pytest.approx(0.2, rel=0.03)  # the mean is the unit, not the median
        if sigma == 0:  # exponential: sd = mean
            assert draws.std() / draws.mean() == pytest.approx(1.0, abs=0.04)
        else:
            assert np.log(draws).std() == pytest.approx(sigma, rel=0.03)
            assert np.log(draws).mean() == pytest.approx(judge.latency_model.log_mean, abs=0.01)
    assert SimulatedJudge([0.0], latency_mean=0.0).latency() == SimulatedTraceJudge().draw_latency() == 0.0


def test_the_trace_judge_keeps_its_documented_stream():
    """One generator seeded by ``seed``: a call takes three uniforms, then its latency; a score a uniform and a
    normal. Written out with numpy, independently of the judge."""
    law = dict(sharpness=2.0, position_bias=0.3, tie_rate=0.2)
    judge = SimulatedTraceJudge(**law, latency_s=1e-4, latency_sigma=0.3, seed=9)
    first, second = Trace("a", quality_hint=0.5), Trace("b", quality_hint=0.0)

    async def run():
        return [await judge.compare("p", first, second) for _ in range(200)], await judge.score("p", first)

    verdicts, grade = asyncio.run(run())
    rng, mu = np.random.default_rng(9), np.log(1e-4) - 0.5 * 0.3**2
    expected = []
    for _ in range(200):
        _, u_tie, u_win = rng.random(3)
        rng.lognormal(mu, 0.3)
        expected.append(0.5 if u_tie < 0.2 else float(u_win < expit(2.0 * 0.5 + 0.3)))
    assert verdicts == expected
    u_fail, noise = rng.random(), rng.normal(scale=0.15)
    assert u_fail >= 0 and grade == float(np.clip(np.round(2.0 * (expit(2.0 * 0.5) + noise)) / 2.0, 0.0, 1.0))


def test_the_pair_judge_keeps_its_common_random_numbers():
    """The k-th call on a pair is the k-th draw of a generator seeded by (seed, pair), whatever was judged before
    and in either order; the lower index is the anchor of the pair's draw."""
    quality = np.linspace(-1.0, 1.0, 5)
    busy = SimulatedJudge(quality, position_bias=0.5, seed=4)
    for i, j in [(0, 1), (4, 2), (1, 3), (3, 2)]:  # other pairs, and one call on (1, 3) shown the other way
        busy.verdict(i, j)
    later = [busy.verdict(3, 1) for _ in range(50)]
    assert later == _pair_stream(quality, 0.5, 4, first=3, second=1, skip=1, count=50)
    fresh = SimulatedJudge(quality, position_bias=0.5, seed=4)
    first = [fresh.verdict(1, 3) for _ in range(50)]
    assert first == _pair_stream(quality, 0.5, 4, first=1, second=3, skip=0, count=50)


def _pair_stream(quality, bias, seed, *, first, second, skip, count):
    """Verdicts of ``(first, second)`` after ``skip`` earlier calls on that pair, by the documented rule."""
    base = int(np.random.default_rng(seed).integers(2**63))
    low, high = min(first, second), max(first, second)
    pair_rng = np.random.default_rng([base, low, high])
    for _ in range(skip):
        pair_rng.random(3)
    out = []
    for _ in range(count):
        u_win = pair_rng.random(3)[2]
        p_first = expit(quality[first] - quality[second] + bias)
        p_low = p_first if first == low else 1.0 - p_first
        out.append(float((u_win < p_low) == (first == low)))
    return out


def test_the_coupling_is_monotone_across_presentation_orders():
    """With a first-position bonus, whatever the anchor wins shown second it also wins shown first (same draw)."""
    law = VerdictLaw(sharpness=1.0, position_bias=0.8)
    for u in np.linspace(0.0, 0.999, 500):
        shown_first = law.verdict(0.2, 0.0, (1.0, 1.0, u)) == 1.0
        shown_second = law.verdict(0.0, 0.2, (1.0, 1.0, u), anchor_second=True) == 0.0
        assert shown_first or not shown_second
    with_rates = VerdictLaw(tie_rate=0.5, parse_failure_rate=0.1)
    assert with_rates.verdict(0.0, 0.0, (0.05, 0.9, 0.5)) is None  # u_fail below its rate: a parse failure
    assert with_rates.verdict(0.0, 0.0, (0.5, 0.1, 0.5)) == 0.5  # else u_tie below its rate: a tie
    assert with_rates.verdict(0.0, 0.0, (0.5, 0.9, 0.4)) == 1.0  # else the win draw against P(first wins) = 0.5
    assert with_rates.verdict(0.0, 0.0, (0.5, 0.9, 0.6)) == 0.0


@pytest.mark.parametrize(
    "law", [dict(noise="cauchy"), dict(tie_rate=1.5), dict(parse_failure_rate=-0.1), dict(sharpness=-1.0),
            dict(sharpness=float("nan")), dict(position_bias=float("inf"))],
)  # fmt: skip
def test_both_interfaces_reject_the_same_settings(law):
    with pytest.raises(ValueError):
        SimulatedJudge([0.0, 1.0], **law)
    with pytest.raises(ValueError):
        SimulatedTraceJudge(**law)


@pytest.mark.parametrize("latency", [dict(mean_s=-1.0), dict(sigma=-0.1), dict(mean_s=float("nan"))])
def test_the_latency_model_rejects_negative_or_missing_values(latency):
    with pytest.raises(ValueError, match="latency_sigma"):
        LatencyModel(**latency)


def test_pointwise_grades_follow_the_law():
    law = VerdictLaw(sharpness=1.0, parse_failure_rate=0.1)
    assert law.grade(0.0, 0.05, 0.0) is None
    assert law.grade(5.0, 0.5, 0.0) == 1.0 and law.grade(-5.0, 0.5, 0.0) == 0.0 and law.grade(0.0, 0.5, 0.0) == 0.5
    assert law.grade(0.0, 0.5, 2.0) == 1.0  # noise of two standard deviations (0.3) lifts 0.5 to 0.8: rounds to 1
