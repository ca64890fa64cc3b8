"""A dump group's own rewards count as equal with the arena's diversity tolerance, as the referee counts them."""

from arena_verl.core.names import DIVERSITY_TOL
from arena_verl.evaluation.groups import Group


def group(scores):
    return Group(
        step=1, data_source="math", kind="math", correct=(True,) * len(scores), scores=scores, lengths=(1,) * 4
    )


def test_dumped_rewards_equal_within_the_diversity_tolerance_are_constant():
    assert group((0.7, 0.7, 0.7, 0.7)).dumped_constant
    assert group((0.7, 0.7 + DIVERSITY_TOL / 10, 0.7, 0.7)).dumped_constant  # float noise of a constant group
    assert not group((0.7, 0.7 + 10 * DIVERSITY_TOL, 0.7, 0.7)).dumped_constant
    assert not group((1.0, 0.0, 1.0, 1.0)).dumped_constant
