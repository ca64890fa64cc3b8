"""Bradley-Terry fits: agreement with choix and scipy, batching, priors on degenerate graphs, input validation."""

import choix
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.stats import kendalltau

from arena_verl.core.tournament import bradley_terry_posterior, fit_bradley_terry, fit_bradley_terry_batch


def random_group(rng, num_items, num_comparisons, ties=False):
    quality = rng.normal(size=num_items)
    rows = []
    for _ in range(num_comparisons if num_items > 1 else 0):
        first, second = rng.choice(num_items, size=2, replace=False)
        p = 1.0 / (1.0 + np.exp(quality[second] - quality[first]))
        outcome = 0.5 if ties and rng.random() < 0.2 else float(rng.random() < p)
        rows.append((int(first), int(second), outcome))
    return rows


@st.composite
def win_loss_graphs(draw):
    num_items = draw(st.integers(2, 12))
    pair = st.tuples(st.integers(0, num_items - 1), st.integers(0, num_items - 1)).filter(lambda p: p[0] != p[1])
    pairs = draw(st.lists(pair, min_size=0, max_size=40))
    l2 = draw(st.sampled_from([0.01, 0.1, 1.0]))
    return num_items, pairs, l2


@settings(max_examples=60, deadline=None)
@given(win_loss_graphs())
def test_matches_choix_opt_pairwise(graph):
    num_items, pairs, l2 = graph
    ours = fit_bradley_terry(num_items, [(w, loser, 1.0) for w, loser in pairs], l2=l2)
    reference = choix.opt_pairwise(num_items, pairs, alpha=l2, tol=1e-12) if pairs else np.zeros(num_items)
    np.testing.assert_allclose(ours, reference - reference.mean(), atol=1e-4)


def scipy_reference(num_items, rows, l2, order_effect=False):
    rows = np.asarray(rows, dtype=float).reshape(-1, 3)
    first, second, outcome = rows[:, 0].astype(int), rows[:, 1].astype(int), rows[:, 2]

    def objective(x):
        theta, h = x[:num_items], (x[num_items] if order_effect else 0.0)
        d = theta[first] - theta[second] + h
        return np.sum(outcome * np.logaddexp(0, -d) + (1 - outcome) * np.logaddexp(0, d)) + l2 * np.sum(x**2)

    x = minimize(objective, np.zeros(num_items + order_effect), method="BFGS", options={"gtol": 1e-9}).x
    return x[:num_items] - x[:num_items].mean(), (x[num_items] if order_effect else 0.0)


@pytest.mark.parametrize("order_effect", [False, True])
def test_matches_scipy_with_ties_and_order_effect(order_effect):
    rng = np.random.default_rng(1)
    for _ in range(10):
        num_items = int(rng.integers(2, 10))
        rows = random_group(rng, num_items, int(rng.integers(1, 30)), ties=True)
        theta, h = fit_bradley_terry(num_items, rows, l2=0.1, order_effect=order_effect, return_order_effect=True)
        ref_theta, ref_h = scipy_reference(num_items, rows, 0.1, order_effect)
        np.testing.assert_allclose(theta, ref_theta, atol=1e-5)
        assert h == pytest.approx(ref_h, abs=1e-5)


def test_recovers_known_strengths_from_many_comparisons():
    rng = np.random.default_rng(0)
    truth = np.linspace(-1.5, 1.5, 6)
    rows = []
    for _ in range(6000):
        i, j = rng.choice(6, size=2, replace=False)
        rows.append((int(i), int(j), float(rng.random() < 1.0 / (1.0 + np.exp(truth[j] - truth[i])))))
    theta = fit_bradley_terry(6, rows, l2=1e-3)
    np.testing.assert_allclose(theta, truth - truth.mean(), atol=0.12)
    assert kendalltau(theta, truth).statistic == pytest.approx(1.0)


def test_order_effect_recovers_position_bias():
    rng = np.random.default_rng(3)
    truth, bias = rng.normal(size=8), 0.8
    rows = []
    for _ in range(8000):
        i, j = rng.choice(8, size=2, replace=False)
        rows.append((int(i), int(j), float(rng.random() < 1.0 / (1.0 + np.exp(-(truth[i] - truth[j] + bias))))))
    theta, h = fit_bradley_terry(8, rows, l2=1e-3, order_effect=True, return_order_effect=True)
    assert h == pytest.approx(bias, abs=0.08)
    np.testing.assert_allclose(theta, truth - truth.mean(), atol=0.15)


def test_batch_equals_single_for_mixed_sizes():
    rng = np.random.default_rng(2)
    groups = [(n, random_group(rng, n, int(rng.integers(0, 3 * n)), ties=True)) for n in rng.integers(1, 20, size=40)]
    groups.append((3, []))
    for order_effect in (False, True):
        batch, batch_h = fit_bradley_terry_batch(groups, l2=0.1, order_effect=order_effect, return_order_effect=True)
        assert len(batch) == len(groups)
        for (n, rows), theta, h in zip(groups, batch, batch_h):
            single, single_h = fit_bradley_terry(n, rows, 0.1, order_effect, return_order_effect=True)
            assert theta.shape == (n,)
            np.testing.assert_allclose(theta, single, atol=1e-9)
            assert h == pytest.approx(single_h, abs=1e-9)


def test_accepts_numpy_arrays_and_empty_batch():
    rows = np.array([[0, 1, 1.0], [1, 2, 0.0]])
    np.testing.assert_allclose(fit_bradley_terry(3, rows), fit_bradley_terry(3, rows.tolist()))
    assert fit_bradley_terry_batch([]) == []


@pytest.mark.parametrize(
    "num_items, rows",
    [
        (1, []),
        (2, []),
        (2, [(0, 1, 1.0)]),
        (4, [(0, 1, 0.5), (1, 2, 0.5), (2, 3, 0.5), (3, 0, 0.5)]),
        (4, [(0, 1, 1.0), (2, 0, 0.0), (0, 3, 1.0)]),
        (5, [(0, 1, 1.0), (2, 3, 1.0)]),
    ],
    ids=["one item", "no comparison", "one comparison", "all ties", "one trace wins everything", "disconnected"],
)
def test_degenerate_graphs_give_finite_centred_strengths(num_items, rows):
    theta = fit_bradley_terry(num_items, rows, l2=0.1)
    assert theta.shape == (num_items,)
    assert np.isfinite(theta).all()
    assert abs(theta.mean()) < 1e-12


def test_degenerate_cases_behave_as_documented():
    assert fit_bradley_terry(1, []).tolist() == [0.0]
    np.testing.assert_array_equal(fit_bradley_terry(3, []), np.zeros(3))
    theta = fit_bradley_terry(2, [(0, 1, 1.0)])
    assert theta[0] > 0 > theta[1] and theta[0] == pytest.approx(-theta[1])
    np.testing.assert_allclose(fit_bradley_terry(4, [(0, 1, 0.5), (1, 2, 0.5), (2, 3, 0.5)]), 0.0, atol=1e-12)
    winner = fit_bradley_terry(4, [(0, 1, 1.0), (2, 0, 0.0), (0, 3, 1.0)])
    assert winner.argmax() == 0 and winner[0] < 5  # finite thanks to the prior
    # Disconnected: each component is ranked internally; an unplayed trace sits at the mean.
    theta = fit_bradley_terry(5, [(0, 1, 1.0), (2, 3, 1.0)])
    assert theta[0] > theta[1] and theta[2] > theta[3] and theta[4] == pytest.approx(0.0, abs=1e-12)
    assert theta[0] == pytest.approx(theta[2])


def test_stronger_prior_shrinks():
    rows = [(0, 1, 1.0), (0, 2, 1.0), (1, 2, 1.0)]
    spread = [np.ptp(fit_bradley_terry(3, rows, l2=l2)) for l2 in (0.01, 0.1, 1.0, 10.0)]
    assert spread == sorted(spread, reverse=True)


@pytest.mark.parametrize(
    "num_items, rows, message",
    [
        (3, [(0, 1, float("nan"))], "outcome nan"),
        (3, [(0, 1, 1.5)], "outcome 1.5"),
        (3, [(0, 1, -0.1)], "outcome -0.1"),
        (3, [(0, 3, 1.0)], r"indices \(0, 3\)"),
        (3, [(-1, 0, 1.0)], r"indices \(-1, 0\)"),
        (3, [(0.5, 1, 1.0)], r"indices \(0.5, 1\)"),
        (3, [(1, 1, 1.0)], "compared with itself"),
        (3, [(0, 1)], "rows"),
        (3, [("a", 1, 1.0)], "rows of numbers"),
        (0, [], "num_items"),
        (2.0, [], "num_items"),
    ],
)
def test_bad_input_is_a_clear_value_error(num_items, rows, message):
    with pytest.raises(ValueError, match=message):
        fit_bradley_terry(num_items, rows)


def test_bad_input_names_the_group_in_a_batch():
    with pytest.raises(ValueError, match="group 1, comparison 2"):
        fit_bradley_terry_batch([(2, [(0, 1, 1.0)]), (3, [(0, 1, 1.0), (1, 2, 0.0), (2, 1, np.inf)])])


@pytest.mark.parametrize("l2", [0, -1, float("nan"), float("inf")])
def test_l2_must_be_positive(l2):
    with pytest.raises(ValueError, match="l2"):
        fit_bradley_terry(2, [(0, 1, 1.0)], l2=l2)


def test_posterior_mean_is_the_fit_and_covariance_shrinks_with_data():
    rng = np.random.default_rng(5)
    rows = random_group(rng, 5, 12)
    mean, cov = bradley_terry_posterior(5, rows, l2=0.1)
    np.testing.assert_allclose(mean, fit_bradley_terry(5, rows, l2=0.1), atol=1e-10)
    np.testing.assert_allclose(cov, cov.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    _, more = bradley_terry_posterior(5, rows + random_group(rng, 5, 40), l2=0.1)
    assert np.trace(more) < np.trace(cov)
    _, prior = bradley_terry_posterior(5, [], l2=0.1)
    np.testing.assert_allclose(prior, np.eye(5) / 0.2)
