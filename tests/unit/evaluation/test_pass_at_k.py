"""Unbiased pass@k against a brute-force count over every k-subset of the samples."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena_verl.evaluation import average_pass_ratio, pass_at_k


def brute_force(n: int, c: int, k: int) -> float:
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in subset) for subset in subsets) / len(subsets)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_matches_the_brute_force_count(case):
    n, c, k = case
    assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k), abs=1e-12)


def test_vectorised_edges_and_large_n():
    np.testing.assert_allclose(pass_at_k([16, 16, 16], [0, 16, 4], 1), [0.0, 1.0, 0.25])
    assert pass_at_k(16, 15, 2) == 1.0  # fewer wrong samples than k
    # n = 1024: the binomials overflow floats, the product form does not
    value = float(pass_at_k(1024, 1, 512))
    assert value == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(average_pass_ratio([16, 8], [4, 8]), [0.25, 1.0])


@pytest.mark.parametrize(
    "n, c, k, message", [(4, 5, 1, "between 0"), (4, -1, 1, "between 0"), (4, 2, 0, "positive"), (4, 2, 5, "at least")]
)
def test_bad_input_is_an_error(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)
