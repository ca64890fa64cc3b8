"""Group certainty (arena_verl/core/tournament/certainty.py): exact values where they are exact, and, on SIMULATED
judges of fixed accuracy run through the project's tournament (scripts/bench/certainty.py), a certainty that rises
with the judge's accuracy and stays near its floor for a fair coin and for a judge that is only a position bias."""

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_verl.core.tournament import fit_bradley_terry, group_certainty
from helpers import paths

_spec = importlib.util.spec_from_file_location("certainty_bench", paths.SCRIPTS / "bench" / "certainty.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

LOG2 = np.log(2.0)
LADDER = ("coin", "0.6", "0.75", "0.9", "consistent")


def loglik(rows, theta, h=0.0):
    rows = np.asarray(rows, dtype=float)
    margin = theta[rows[:, 0].astype(int)] - theta[rows[:, 1].astype(int)] + h
    o = rows[:, 2]
    return float(np.sum(o * -np.logaddexp(0, -margin) + (1 - o) * -np.logaddexp(0, margin)))


# --- exact values -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_items", [1, 2, 5])
def test_no_comparison_is_zero(num_items):
    assert group_certainty(num_items, [], np.zeros(num_items)) == 0.0


def test_all_ties_are_zero_whatever_the_strengths():
    rows = [(0, 1, 0.5), (1, 2, 0.5), (2, 0, 0.5), (3, 0, 0.5)]
    assert group_certainty(4, rows, np.array([3.0, -1.0, 0.5, -2.5])) == 0.0
    assert group_certainty(4, rows, fit_bradley_terry(4, rows), order_effect=0.2) == 0.0


def test_strengths_all_equal_are_zero():
    rows = [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0), (2, 3, 0.0)]
    assert group_certainty(4, rows, np.zeros(4)) == 0.0


def test_one_verdict_on_two_traces():
    """LR_0 = 1 (one edge, resistance 1), LR_max = 2 log 2, LR from the fitted margin: about 0.08 at l2 = 0.1."""
    for rows in ([(0, 1, 1.0)], [(1, 0, 0.0)]):
        theta = fit_bradley_terry(2, rows, l2=0.1)
        lr = 2 * (loglik(rows, theta) + LOG2)
        expected = (lr - 1.0) / (2 * LOG2 - 1.0)
        assert group_certainty(2, rows, theta) == pytest.approx(expected, rel=1e-12)
        assert 0.05 < expected < 0.1


def test_consistent_verdicts_predicted_exactly_are_one():
    rank = np.arange(6, dtype=float)
    rows = [(i, j, float(rank[i] > rank[j])) for i in range(6) for j in range(6) if i < j]
    assert group_certainty(6, rows, 60.0 * rank) == pytest.approx(1.0, abs=1e-12)


def test_soft_outcome_exact_values():
    """One soft verdict o: LR_0 = (2o - 1)^2, LR_max = 2 (log 2 - H(o)); the margin logit(o) reaches LR_max."""
    o = 0.8
    rows = [(0, 1, o)]
    exact = np.array([np.log(o / (1 - o)), 0.0])
    assert group_certainty(2, rows, exact) == pytest.approx(1.0, abs=1e-12)
    rows = [(0, 1, o), (0, 1, o), (0, 1, o)]  # three parallel edges: resistance 1/3 each, LR_0 still 0.36
    theta = fit_bradley_terry(2, rows)
    lr = 2 * (loglik(rows, theta) + 3 * LOG2)
    lr_max = 2 * 3 * (LOG2 + o * np.log(o) + (1 - o) * np.log(1 - o))
    floor = (2 * o - 1) ** 2
    assert group_certainty(2, rows, theta) == pytest.approx((lr - floor) / (lr_max - floor), rel=1e-10)


def test_a_soft_cycle_is_zero():
    rows = [(0, 1, 0.55), (1, 2, 0.55), (0, 2, 0.45)]  # 0 > 1 > 2 > 0, each by a little: the fit is all equal
    assert group_certainty(3, rows, fit_bradley_terry(3, rows)) == 0.0


def test_disconnected_graph_counts_identifiable_contrasts_only():
    """Components {0, 1}, {2, 3}, {4}: LR_0 = 5 - 3 = 2 (two verdicts in parallel, resistance 1/2 each, and a bridge);
    the untouched trace changes nothing."""
    rows = [(0, 1, 1.0), (1, 0, 0.0), (2, 3, 1.0)]
    theta = fit_bradley_terry(5, rows)
    lr = 2 * (loglik(rows, theta) + 3 * LOG2)
    expected = (lr - 2.0) / (6 * LOG2 - 2.0)
    assert group_certainty(5, rows, theta) == pytest.approx(expected, rel=1e-12)
    assert group_certainty(4, rows, theta[:4]) == pytest.approx(expected, rel=1e-12)
    assert group_certainty(5, rows, 50.0 * np.array([1.0, 0.0, 1.0, 0.0, 0.0])) == pytest.approx(1.0, abs=1e-12)


def test_shift_and_presentation_invariance_without_order_effect():
    rng = np.random.default_rng(3)
    pairs = [rng.choice(6, 2, replace=False) for _ in range(15)]
    rows = [(int(a), int(b), float(rng.random() < 0.8)) for a, b in pairs]
    theta = fit_bradley_terry(6, rows)
    base = group_certainty(6, rows, theta)
    assert base > 0
    assert group_certainty(6, rows, theta + 7.0) == pytest.approx(base, rel=1e-12)
    swapped = [(b, a, 1.0 - o) if k % 2 else (a, b, o) for k, (a, b, o) in enumerate(rows)]
    assert group_certainty(6, swapped, theta) == pytest.approx(base, rel=1e-12)


def test_a_pure_position_bias_with_the_order_effect_fitted_is_zero():
    """The null keeps its own first-position bonus, so verdicts that the bonus alone explains carry no contrast."""
    rows = [(0, 1, 1.0), (1, 2, 1.0), (2, 0, 1.0), (3, 1, 1.0), (2, 3, 1.0), (0, 3, 1.0)]
    theta, h = fit_bradley_terry(4, rows, order_effect=True, return_order_effect=True)
    assert h > 1.0
    assert group_certainty(4, rows, theta, order_effect=h) == 0.0


def test_extreme_strengths_stay_finite():
    rows = [(0, 1, 1.0), (1, 2, 0.0), (2, 0, 0.3)]
    for theta in (np.array([1e6, -1e6, 0.0]), np.array([-1e6, 1e6, 1e6])):
        value = group_certainty(3, rows, theta, order_effect=1e5)
        assert np.isfinite(value) and 0.0 <= value <= 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 9).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(
                    st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([0.0, 0.5, 1.0, 0.2, 0.93])
                ).filter(lambda r: r[0] != r[1]),
                max_size=30,
            ),
            st.booleans(),
        )
    )
)
def test_in_unit_interval_and_nan_free(case):
    num_items, rows, order_effect = case
    theta, h = fit_bradley_terry(num_items, rows, order_effect=order_effect, return_order_effect=True)
    value = group_certainty(num_items, rows, theta, order_effect=h)
    assert isinstance(value, float) and np.isfinite(value) and 0.0 <= value <= 1.0


@pytest.mark.parametrize(
    "num_items, rows, theta, order_effect",
    [
        (3, [(0, 1, 1.0)], np.zeros(2), 0.0),
        (3, [(0, 1, 1.0)], np.array([0.0, np.nan, 0.0]), 0.0),
        (3, [(0, 1, 1.0)], np.zeros(3), np.inf),
        (3, [(0, 3, 1.0)], np.zeros(3), 0.0),
        (3, [(0, 1, 1.5)], np.zeros(3), 0.0),
    ],
)
def test_invalid_input_is_refused(num_items, rows, theta, order_effect):
    with pytest.raises(ValueError):
        group_certainty(num_items, rows, theta, order_effect)


# --- SIMULATED judges through the tournament ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def live_means():
    """Mean certainty at N = 8 under ``live`` (18 calls), 200 fixed-seed groups per judge, common random numbers."""
    return {kind: float(bench.certainties(kind, "live", 8, 200)[0].mean()) for kind in bench.JUDGES}


def test_live_ladder_rises_with_accuracy_and_the_coin_sits_near_its_floor(live_means):
    ladder = [live_means[kind] for kind in LADDER]
    assert np.all(np.diff(ladder) > 0), ladder
    assert live_means["coin"] < 0.15
    assert live_means["coin"] < 0.25 * live_means["consistent"]
    assert live_means["consistent"] > 0.6


def test_round_robin_ladder_rises_with_accuracy():
    means = [float(bench.certainties(kind, "round_robin", 8, 80)[0].mean()) for kind in LADDER]
    assert np.all(np.diff(means) > 0), means
    assert means[0] < 0.1
    assert means[0] < 0.2 * means[-1]


def test_a_position_bias_only_judge_sits_near_the_floor(live_means):
    """Without the order effect, random (balanced) presentation makes an always-first judge look like a coin."""
    assert live_means["first"] < 0.15
    assert abs(live_means["first"] - live_means["coin"]) < 0.05
    assert live_means["first"] < 0.25 * live_means["consistent"]


def test_a_position_bias_only_judge_is_zero_with_the_order_effect_fitted():
    values, _ = bench.certainties("first", "live", 8, 40, order_effect=True)
    assert np.all(values == 0.0)


def test_bench_groups_make_the_planned_calls():
    assert bench.certainties("coin", "live", 8, 2)[1] == 18
    assert bench.certainties("coin", "round_robin", 8, 2)[1] == 28
