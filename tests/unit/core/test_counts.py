import pytest

from arena_verl.core.counts import is_count


@pytest.mark.parametrize("value", [0, 1, 10**12])
def test_non_negative_integers_are_counts(value):
    assert is_count(value)


@pytest.mark.parametrize("value", [-1, True, False, 1.0, "3", None, float("nan"), [1]])
def test_anything_else_is_not_a_count(value):
    assert not is_count(value)
