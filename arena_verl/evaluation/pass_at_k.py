"""Unbiased pass@k (Chen et al., 2021) and the average pass ratio, from n samples per problem of which c are correct.

verl reports a bootstrap best@k; the paper's tables use the unbiased estimator

    pass@k = 1 - C(n - c, k) / C(n, k)

averaged over problems, and the average pass ratio ``mean(c / n)`` (the "avg@n" of math and GPQA tables). The
ratio of binomials is evaluated as a product, ``prod_{i=n-c+1}^{n} (1 - k / i)``, which stays finite and exact to
rounding for any n (binomials of n = 1024 overflow floats).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pass_at_k", "average_pass_ratio"]


def pass_at_k(num_samples, num_correct, k: int) -> np.ndarray:
    """Unbiased pass@k per problem.

    Parameters
    ----------
    num_samples, num_correct : array_like of int
        n and c per problem (broadcast together), with ``0 <= c <= n``.
    k : int
        ``1 <= k <= n`` for every problem.

    Returns
    -------
    ndarray of float
        The probability that at least one of k samples drawn without replacement from the n is correct.
    """
    n = np.asarray(num_samples, dtype=np.int64)
    c = np.asarray(num_correct, dtype=np.int64)
    n, c = np.broadcast_arrays(n, c)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("num_correct must be between 0 and num_samples for every problem")
    if np.any(n < k):
        raise ValueError(f"every problem needs at least k={k} samples, got min n={int(n.min())}")
    out = np.empty(n.shape, dtype=float)
    for index in np.ndindex(n.shape):
        ni, ci = int(n[index]), int(c[index])
        if ni - ci < k:
            out[index] = 1.0  # every k-subset holds a correct sample
        else:
            i = np.arange(ni - ci + 1, ni + 1, dtype=float)
            out[index] = 1.0 - float(np.prod(1.0 - k / i))
    return out


def average_pass_ratio(num_samples, num_correct) -> np.ndarray:
    """``c / n`` per problem (average it over problems for avg@n)."""
    n = np.asarray(num_samples, dtype=float)
    c = np.asarray(num_correct, dtype=float)
    if np.any(n <= 0) or np.any(c < 0) or np.any(c > n):
        raise ValueError("need 0 <= num_correct <= num_samples and num_samples > 0")
    return c / n
