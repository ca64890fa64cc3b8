"""How sure a routed group's own verdicts are that its traces differ: a number in [0, 1], at no extra judge call.

Measure
-------
The group's Bradley-Terry fit (:mod:`~arena_verl.core.tournament.bradley_terry`) is tested against the null "all
traces equal" by its likelihood-ratio statistic, on the fitted verdicts' own (unpenalised, soft) log-likelihood::

    ll(theta, h) = sum_k [ o_k log sigmoid(d_k) + (1 - o_k) log sigmoid(-d_k) ],  d_k = theta[f_k] - theta[s_k] + h
    LR     = 2 * (ll(theta_hat, h_hat) - ll_null)
    LR_max = 2 * (-sum_k H(o_k) - ll_null)            (H: the entropy of a Bernoulli(o_k), in nats)
    LR_0   = sum_k (2 o_k - 1)**2 * R_k                (R_k: effective resistance of comparison k's edge)
    certainty = clip((LR - LR_0) / (LR_max - LR_0), 0, 1),  and 0 when LR_max <= LR_0

- ``ll_null`` is ``-m log 2`` (every verdict a coin) when no first-position bonus was fitted. When one was
  (``order_effect != 0``), the null keeps its own best bonus, ``-m H(mean(o))``: a judge that only prefers the trace
  shown first is then explained by the null and gets 0, instead of having its bias read as contrast.
- ``LR_max`` is the supremum of ``LR`` over all strengths (each verdict predicted exactly): what a perfectly
  consistent judge with the same outcomes reaches with unbounded strengths (hard verdicts: ``2 m log 2``). A tie adds
  nothing to it, so all-tie verdicts give 0.
- ``LR_0`` is what ``LR`` is on average when the verdicts carry no signal (each outcome's orientation independent of
  the traces), to second order in the strengths: ``4 tr(L^+ L_w)``, ``L`` the comparison graph's Laplacian and ``L_w``
  the same weighted by ``(o_k - 1/2)**2``. By Foster's theorem the resistances sum to ``rank(L)``, so for hard verdicts
  ``LR_0 = num_items - components``, the null's chi-square degrees of freedom (``num_items - 1`` on a connected
  graph); soft outcomes near 1/2 and ties carry less spread, and their null is lower by the same factor as their
  ``LR_max``. A trace without comparisons, or a second component, adds no freedom.

So 0 means no more contrast than a fair coin gives, and 1 the contrast of verdicts that are as consistent as they can
be. The fit's L2 prior keeps ``LR`` below ``LR_max``: a consistent judge's certainty grows with the evidence (one hard
verdict on two traces: 0.08 at ``l2 = 0.1``; 18 consistent verdicts on eight: about 0.7), and a coin's mean falls
with it. ``scripts/bench/certainty.py`` prints the figures by strategy, group size and judge accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from arena_verl.core.tournament.bradley_terry import as_comparison_array

__all__ = ["group_certainty"]

_LOG2 = float(np.log(2.0))


def group_certainty(
    num_items: int,
    comparisons: Iterable[Sequence[float]] | np.ndarray,
    strengths: Sequence[float] | np.ndarray,
    order_effect: float = 0.0,
) -> float:
    """Certainty in [0, 1] that a group's traces differ, from its own verdicts and its Bradley-Terry fit.

    Parameters
    ----------
    num_items : int
        Traces in the group.
    comparisons : iterable of (first, second, outcome) or array of shape (m, 3)
        The verdicts that entered the fit (``TournamentResult.comparisons``): ``outcome`` is P(``first`` better) in
        [0, 1], a tie 0.5. Failed calls are not in it. Under ``mirror_augment`` pass the verdicts, not the mirrored
        rows (mirroring doubles every term and adds no evidence).
    strengths : array of shape (num_items,)
        The fitted strengths (``TournamentResult.strengths``); any constant shift gives the same answer.
    order_effect : float
        The fitted first-position bonus (``TournamentResult.order_effect``); 0.0 when none was fitted. When it is not
        0, the null "all traces equal" keeps a bonus of its own.

    Returns
    -------
    float
        ``clip((LR - LR_0) / (LR_max - LR_0), 0, 1)`` (see the module docstring); 0.0 with no comparison, all ties,
        or too few decided verdicts to beat a coin (``LR_max <= LR_0``).

    Raises
    ------
    ValueError
        For comparisons :func:`~arena_verl.core.tournament.bradley_terry.as_comparison_array` refuses, strengths that
        are not ``num_items`` finite numbers, or a non-finite order effect.
    """
    rows = as_comparison_array(num_items, comparisons)
    theta = np.asarray(strengths, dtype=np.float64)
    if theta.shape != (num_items,) or not np.isfinite(theta).all():
        raise ValueError(f"strengths must be {num_items} finite numbers, got shape {theta.shape}")
    if not np.isfinite(order_effect):
        raise ValueError(f"order_effect must be finite, got {order_effect!r}")
    if len(rows) == 0:
        return 0.0

    first, second, outcome = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64), rows[:, 2]
    margin = theta[first] - theta[second] + float(order_effect)
    loglik = -float(np.sum(outcome * np.logaddexp(0.0, -margin) + (1.0 - outcome) * np.logaddexp(0.0, margin)))
    if order_effect != 0.0:
        null_loglik = -len(rows) * float(_entropy(np.array([outcome.mean()]))[0])
    else:
        null_loglik = -len(rows) * _LOG2

    ratio = 2.0 * (loglik - null_loglik)
    ceiling = 2.0 * (-float(np.sum(_entropy(outcome))) - null_loglik)
    floor = _null_expectation(num_items, first, second, outcome)
    if ceiling <= floor:
        return 0.0
    return float(np.clip((ratio - floor) / (ceiling - floor), 0.0, 1.0))


def _entropy(p: np.ndarray) -> np.ndarray:
    """Entropy of Bernoulli(p) in nats, 0 at p in {0, 1}."""
    q = 1.0 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(p > 0, p * np.log(p), 0.0) + np.where(q > 0, q * np.log(q), 0.0))
    return np.maximum(h, 0.0)


def _null_expectation(num_items: int, first: np.ndarray, second: np.ndarray, outcome: np.ndarray) -> float:
    """``sum_k (2 o_k - 1)**2 R_k``: the mean LR of verdicts that carry no signal (see the module docstring)."""
    laplacian = np.zeros((num_items, num_items))
    np.add.at(laplacian, (first, first), 1.0)
    np.add.at(laplacian, (second, second), 1.0)
    np.add.at(laplacian, (first, second), -1.0)
    np.add.at(laplacian, (second, first), -1.0)
    pinv = np.linalg.pinv(laplacian, hermitian=True)
    resistance = pinv[first, first] + pinv[second, second] - 2.0 * pinv[first, second]
    return float(np.sum((2.0 * outcome - 1.0) ** 2 * resistance))
