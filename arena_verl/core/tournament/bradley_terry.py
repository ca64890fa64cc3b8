"""L2-regularised Bradley-Terry fits on incomplete comparison graphs, one group or many at once.

Model
-----
Each trace ``i`` of a group has a strength ``theta[i]``. A comparison ``(first, second, outcome)`` records that
``first`` was shown to the judge before ``second`` and that ``first`` won with weight ``outcome``
(1 = first won, 0 = second won, 0.5 = tie, i.e. half a win each; any value in [0, 1] is a soft outcome, e.g. a
judge's P(first is better) read from token probabilities). A soft outcome ``k / m`` is exactly ``m`` hard verdicts
of which ``first`` won ``k``, fitted with ``m`` times the prior: the objective below is that one divided by ``m``.
With the optional order effect ``h`` (one shared first-position bonus per group)::

    P(first beats second) = sigmoid(theta[first] - theta[second] + h)

Objective (minimised), the convention of ``choix.opt_pairwise`` with ``alpha = l2``::

    sum_c [ -o_c log sigmoid(d_c) - (1 - o_c) log sigmoid(-d_c) ] + l2 * (sum_i theta[i]**2 + h**2)

The L2 prior makes the optimum unique and finite on any graph: a trace that wins (or loses) every match, a
disconnected graph, or a trace with no comparison at all (it stays at 0, the group mean). Because the likelihood is
shift-invariant, the regularised optimum already has mean 0; the result is re-centred to remove round-off.

All groups are solved together by a damped Newton method: one ``(groups, items, items)`` Hessian per iteration,
assembled with ``np.bincount`` and factorised by a batched ``np.linalg.solve``. No per-comparison Python loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from arena_verl.core.options import DEFAULT_L2

__all__ = ["fit_bradley_terry", "fit_bradley_terry_batch", "bradley_terry_posterior", "as_comparison_array"]

Comparison = tuple[int, int, float]

_ARMIJO = 1e-4
_MAX_HALVINGS = 40
_SMALL_DECREMENT = 1e-8


def as_comparison_array(num_items: int, comparisons: Iterable[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Validate comparisons and return them as a float array of shape ``(m, 3)``.

    Raises
    ------
    ValueError
        If ``num_items`` is not a positive integer, a row is not ``(first, second, outcome)``, an index is not an
        integer in ``[0, num_items)``, ``first == second``, or an outcome is NaN or outside ``[0, 1]``.
    """
    _check_num_items(num_items)
    rows = _to_rows(comparisons)
    _check_rows(rows, np.full(len(rows), num_items), np.zeros(len(rows), dtype=np.int64))
    return rows


def _check_num_items(num_items: Any) -> None:
    if isinstance(num_items, bool) or not isinstance(num_items, (int, np.integer)) or num_items < 1:
        raise ValueError(f"num_items must be a positive integer, got {num_items!r}")


def _to_rows(comparisons: Any) -> np.ndarray:
    if not isinstance(comparisons, np.ndarray):
        comparisons = list(comparisons)
    try:
        rows = np.asarray(comparisons, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"comparisons must be (first, second, outcome) rows of numbers: {exc}") from None
    if rows.size == 0:
        return np.empty((0, 3))
    if rows.ndim != 2 or rows.shape[1] != 3:
        raise ValueError(f"comparisons must be (first, second, outcome) rows, got shape {rows.shape}")
    return rows


def _check_rows(rows: np.ndarray, num_items: np.ndarray, group: np.ndarray) -> None:
    """Vectorised validation of stacked rows; ``num_items`` and ``group`` are given per row."""
    pairs, outcomes = rows[:, :2], rows[:, 2]
    bad_index = ~np.isfinite(pairs).all(axis=1) | (pairs != np.round(pairs)).any(axis=1)
    bad_index |= (pairs < 0).any(axis=1) | (pairs >= num_items[:, None]).any(axis=1)
    self_match = pairs[:, 0] == pairs[:, 1]
    bad_outcome = ~np.isfinite(outcomes) | (outcomes < 0.0) | (outcomes > 1.0)
    bad = bad_index | self_match | bad_outcome
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    local = row - int(np.searchsorted(group, group[row]))
    where = f"group {int(group[row])}, comparison {local}"
    if bad_index[row]:
        first, second = (f"{x:g}" for x in pairs[row])
        raise ValueError(f"{where}: indices ({first}, {second}) are not integers in [0, {int(num_items[row])})")
    if self_match[row]:
        raise ValueError(f"{where}: an item cannot be compared with itself ({int(pairs[row, 0])})")
    raise ValueError(f"{where}: outcome {float(outcomes[row])} is not a finite number in [0, 1]")


def fit_bradley_terry(
    num_items: int,
    comparisons: Iterable[Sequence[float]] | np.ndarray,
    l2: float = DEFAULT_L2,
    order_effect: bool = False,
    *,
    return_order_effect: bool = False,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> np.ndarray | tuple[np.ndarray, float]:
    """Fit Bradley-Terry strengths for one group.

    Parameters
    ----------
    num_items : int
        Number of traces in the group (``>= 1``).
    comparisons : iterable of (first, second, outcome) or array of shape (m, 3)
        ``first`` is the index shown first; ``outcome`` is 1.0 if ``first`` won, 0.0 if ``second`` won, 0.5 for a
        tie (any value in [0, 1] is a fractional win). Exactly these comparisons are fitted: nothing is mirrored.
    l2 : float
        Strength of the L2 prior (``> 0``); see the module docstring for the objective.
    order_effect : bool
        Also fit one shared first-position bonus ``h`` (regularised by the same ``l2``), so that a judge's position
        bias is estimated and removed instead of being read as quality.
    return_order_effect : bool
        Return ``(theta, h)`` instead of ``theta`` (``h`` is 0.0 when ``order_effect`` is False).
    tol, max_iter
        Newton stops when the largest gradient entry is below ``tol`` or after ``max_iter`` iterations.

    Returns
    -------
    theta : numpy.ndarray of shape (num_items,)
        Strengths with mean 0.
    """
    thetas, order = fit_bradley_terry_batch(
        [(num_items, comparisons)],
        l2=l2,
        order_effect=order_effect,
        return_order_effect=True,
        tol=tol,
        max_iter=max_iter,
    )
    if return_order_effect:
        return thetas[0], float(order[0])
    return thetas[0]


def fit_bradley_terry_batch(
    groups: Sequence[tuple[int, Any]],
    l2: float = DEFAULT_L2,
    order_effect: bool = False,
    *,
    return_order_effect: bool = False,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> list[np.ndarray] | tuple[list[np.ndarray], np.ndarray]:
    """Fit many independent groups at once; same answer as :func:`fit_bradley_terry` on each.

    Parameters
    ----------
    groups : sequence of (num_items, comparisons)
        Groups may differ in size and in number of comparisons.
    l2, order_effect, tol, max_iter
        As in :func:`fit_bradley_terry`, shared by all groups.
    return_order_effect : bool
        Also return the array of fitted order effects, one per group.

    Returns
    -------
    thetas : list of numpy.ndarray
        One mean-0 strength vector per group, in input order.
    """
    _check_l2(l2)
    num_groups = len(groups)
    if num_groups == 0:
        return ([], np.zeros(0)) if return_order_effect else []
    sizes, problem, params = _solve(groups, l2, order_effect, tol, max_iter)
    thetas = []
    for g, n in enumerate(sizes):
        theta = params[g, :n]
        thetas.append(theta - theta.mean())
    if return_order_effect:
        return thetas, params[:, -1].copy()
    return thetas


def bradley_terry_posterior(
    num_items: int,
    comparisons: Iterable[Sequence[float]] | np.ndarray,
    l2: float = DEFAULT_L2,
    order_effect: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of the posterior over strengths: the MAP (as :func:`fit_bradley_terry`) and its
    covariance, the inverse Hessian of the objective at the MAP (order effect marginalised out when fitted).

    Used by adaptive schedulers to pick the comparisons whose outcome is least predictable.
    """
    _check_l2(l2)
    sizes, problem, params = _solve([(num_items, comparisons)], l2, order_effect, 1e-10, 100)
    _, hess = problem.gradient_hessian(params)
    cov = np.linalg.inv(hess[0])[:num_items, :num_items]
    theta = params[0, :num_items]
    return theta - theta.mean(), cov


def _check_l2(l2: Any) -> None:
    if not (isinstance(l2, (int, float, np.floating)) and np.isfinite(l2) and l2 > 0):
        raise ValueError(f"l2 must be a finite number > 0 (the prior keeps every fit finite), got {l2!r}")


def _solve(groups, l2, order_effect, tol, max_iter):
    num_groups = len(groups)
    sizes = np.empty(num_groups, dtype=np.int64)
    arrays = []
    for g, group in enumerate(groups):
        try:
            num_items, comparisons = group
        except (TypeError, ValueError):
            raise ValueError(f"group {g} must be a (num_items, comparisons) pair, got {group!r}") from None
        _check_num_items(num_items)
        sizes[g] = num_items
        arrays.append(_to_rows(comparisons))
    counts = np.array([len(a) for a in arrays], dtype=np.int64)
    stacked = np.concatenate(arrays)
    group = np.repeat(np.arange(num_groups), counts)
    _check_rows(stacked, sizes[group], group)

    width = int(sizes.max()) + 1  # the last column holds the order effect (pinned to 0 when it is not fitted)
    first = group * width + stacked[:, 0].astype(np.int64)
    second = group * width + stacked[:, 1].astype(np.int64)
    order_col = group * width + (width - 1)
    outcome = stacked[:, 2]

    params = np.zeros((num_groups, width))
    fitted = np.zeros((num_groups, width), dtype=bool)
    fitted[:, :-1] = np.arange(width - 1) < sizes[:, None]
    fitted[:, -1] = order_effect
    problem = _Problem(first, second, order_col if order_effect else None, outcome, l2, fitted)

    for _ in range(max_iter):
        grad, hess = problem.gradient_hessian(params)
        if np.abs(grad).max(initial=0.0) < tol:
            break
        step = -np.linalg.solve(hess, grad[..., None])[..., 0]
        params = problem.line_search(params, step, grad)
    else:
        grad, _ = problem.gradient_hessian(params)
        worst = float(np.abs(grad).max(initial=0.0))
        if worst >= tol:
            warnings.warn(
                f"Bradley-Terry fit stopped at max_iter={max_iter} with gradient {worst:.3g} >= tol={tol:g}; "
                "the strengths are not fully converged",
                RuntimeWarning,
                stacklevel=3,
            )

    return sizes, problem, params


class _Problem:
    """Objective, gradient and Hessian of all groups over a flat ``(groups * width)`` parameter index."""

    def __init__(self, first, second, order_col, outcome, l2, fitted):
        self.first, self.second, self.order_col = first, second, order_col
        self.outcome, self.l2, self.fitted = outcome, l2, fitted
        self.num_groups, self.width = fitted.shape
        self.group_of = first // self.width if len(first) else np.zeros(0, dtype=np.int64)

    def _margin(self, flat_params: np.ndarray) -> np.ndarray:
        margin = flat_params[self.first] - flat_params[self.second]
        if self.order_col is not None:
            margin = margin + flat_params[self.order_col]
        return margin

    def objective(self, params: np.ndarray) -> np.ndarray:
        margin = self._margin(params.ravel())
        loss = self.outcome * np.logaddexp(0.0, -margin) + (1.0 - self.outcome) * np.logaddexp(0.0, margin)
        per_group = np.bincount(self.group_of, weights=loss, minlength=self.num_groups).astype(np.float64, copy=False)
        return per_group + self.l2 * np.einsum("gp,gp->g", params, params)

    def gradient_hessian(self, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g_count, width = self.num_groups, self.width
        margin = self._margin(params.ravel())
        prob = _sigmoid(margin)
        resid = prob - self.outcome
        curv = prob * (1.0 - prob)

        cols = [self.first, self.second] + ([self.order_col] if self.order_col is not None else [])
        signs = [1.0, -1.0, 1.0][: len(cols)]
        grad = 2.0 * self.l2 * params.ravel()
        for col, sign in zip(cols, signs):
            grad = grad + np.bincount(col, weights=sign * resid, minlength=g_count * width).astype(
                np.float64, copy=False
            )
        rows, vals = [], []
        for col_a, sign_a in zip(cols, signs):
            for col_b, sign_b in zip(cols, signs):
                rows.append(self.group_of * width * width + (col_a % width) * width + (col_b % width))
                vals.append(sign_a * sign_b * curv)
        hess = np.bincount(np.concatenate(rows), weights=np.concatenate(vals), minlength=g_count * width * width)
        hess = hess.astype(np.float64, copy=False).reshape(g_count, width, width)  # bincount of nothing is int
        # Unfitted coordinates (padding, or the order column when it is off) get an identity row and zero gradient,
        # so their step is exactly 0.
        diag = np.where(self.fitted, 2.0 * self.l2, 1.0)
        hess[:, np.arange(width), np.arange(width)] += diag
        grad = np.where(self.fitted, grad.reshape(g_count, width), 0.0)
        return grad, hess

    def line_search(self, params: np.ndarray, step: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Backtracking (Armijo) per group: full Newton steps almost always pass; halve only where they do not."""
        slope = np.einsum("gp,gp->g", grad, step)
        # Near the optimum (small Newton decrement) the full step is safe and the objective's change is below
        # round-off, where an Armijo test would only halve the step for nothing.
        settled = -slope < _SMALL_DECREMENT
        if settled.all():
            return params + step
        current = self.objective(params)
        scale = np.ones(self.num_groups)
        for _ in range(_MAX_HALVINGS):
            trial = params + scale[:, None] * step
            accepted = settled | (self.objective(trial) <= current + _ARMIJO * scale * slope)
            if accepted.all():
                return trial
            scale = np.where(accepted, scale, 0.5 * scale)
        return params + scale[:, None] * step


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive number only, so no overflow warnings for large margins.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
