"""The simulated judge: its rates are what it was configured with, and it is reproducible."""

import asyncio

import numpy as np
import pytest
from scipy.special import expit, ndtr

from arena_verl.tournament import SimulatedJudge, position_bias_for_first_win_rate


def draw(judge, first, second, count):
    return np.array([judge.verdict(first, second) for _ in range(count)], dtype=object)


@pytest.mark.parametrize("noise, cdf", [("logistic", expit), ("probit", ndtr)])
def test_win_probability_follows_quality_sharpness_and_bias(noise, cdf):
    judge = SimulatedJudge([0.0, 0.5], sharpness=2.0, position_bias=0.3, noise=noise, seed=0)
    expected = cdf(2.0 * (0.5 - 0.0) + 0.3)
    assert judge.first_win_probability(1, 0) == pytest.approx(cdf(2.0 * 0.5 + 0.3))
    wins = draw(judge, 0, 1, 20000).astype(float).mean()
    assert wins == pytest.approx(cdf(-1.0 + 0.3), abs=0.015)
    assert expected > 0.5


def test_first_position_rate_matches_the_bias():
    bias = position_bias_for_first_win_rate(0.63)
    assert bias == pytest.approx(0.532, abs=1e-3)
    judge = SimulatedJudge([0.0, 0.0], position_bias=bias, seed=1)
    assert draw(judge, 0, 1, 20000).astype(float).mean() == pytest.approx(0.63, abs=0.015)


def test_tie_and_parse_failure_rates():
    judge = SimulatedJudge([0.0, 1.0], tie_rate=0.2, parse_failure_rate=0.1, seed=2)
    verdicts = draw(judge, 0, 1, 20000)
    failures = np.mean([v is None for v in verdicts])
    ties = np.mean([v == 0.5 for v in verdicts])
    assert failures == pytest.approx(0.1, abs=0.01)
    assert ties == pytest.approx(0.9 * 0.2, abs=0.01)
    assert judge.parse_failures == sum(v is None for v in verdicts) and judge.calls == 20000


def test_seeded_and_reproducible():
    a, b = SimulatedJudge(np.arange(4.0), seed=7), SimulatedJudge(np.arange(4.0), seed=7)
    assert list(draw(a, 0, 3, 50)) == list(draw(b, 0, 3, 50))


def test_latency_mean():
    judge = SimulatedJudge([0.0, 1.0], latency_mean=0.2, latency_sigma=0.5, seed=3)
    assert np.mean([judge.latency() for _ in range(20000)]) == pytest.approx(0.2, rel=0.03)
    fast = SimulatedJudge([0.0, 1.0], latency_mean=0.002, seed=3)
    assert asyncio.run(fast(1, 0)) in (0.0, 1.0)


@pytest.mark.parametrize(
    "kwargs", [dict(noise="cauchy"), dict(tie_rate=1.5), dict(parse_failure_rate=-0.1), dict(sharpness=-1.0)]
)
def test_bad_settings(kwargs):
    with pytest.raises(ValueError):
        SimulatedJudge([0.0, 1.0], **kwargs)
    with pytest.raises(ValueError):
        position_bias_for_first_win_rate(1.0)
