"""The referee's metrics as a pure unit: counter accounting per step, the counts of one answered group, GRPO advantage
counting and the derived figures. No event loop, no referee."""

import subprocess
import sys

import numpy as np
import pytest

from arena_verl.core.names import (
    DIVERSITY_TOL,
    FALLBACK_DEADLINE,
    FALLBACK_JUDGE_ERROR,
    FALLBACK_REASONS,
    ROUTE_TOURNAMENT,
)
from arena_verl.core.referee.groups import Verdict
from arena_verl.core.referee.metrics import (
    COUNTERS,
    GRPO_STD_EPS,
    NONZERO_ADVANTAGE_TOL,
    StepCounters,
    derive_metrics,
    group_counts,
    grpo_advantages,
    position_figures,
    utilisation_counts,
)
from arena_verl.core.routing import is_uniform


def counts_of(verdicts, verifier, *, uniform, complete=True, position=None, order_effect=None, norm=True):
    return group_counts(
        verdicts,
        verifier,
        uniform=uniform,
        complete=complete,
        position=position or {},
        order_effect=order_effect,
        norm_by_std=norm,
    )


# -- per-step accounting ------------------------------------------------------------------------------------------


def test_counts_go_to_their_step_and_to_the_total():
    counters = StepCounters(kept=512)
    counters.add(1, "samples")
    counters.add(1, "samples", 2)
    counters.add(2, "groups")
    counters.add(None, "samples")  # no step (verl sent none): the total only
    assert counters.counts(1)["samples"] == 3.0 and counters.counts(1)["groups"] == 0.0
    assert counters.counts(2)["groups"] == 1.0 and counters.counts(2)["samples"] == 0.0
    assert counters.counts()["samples"] == 4.0 and counters.counts()["groups"] == 1.0
    assert set(counters.by_step) == {1, 2}


def test_every_answer_carries_every_counter_even_for_a_step_never_seen():
    counts = StepCounters(kept=512).counts(99)
    assert list(counts) == list(COUNTERS) and set(counts.values()) == {0.0}


def test_only_the_last_steps_are_kept_the_oldest_goes_first():
    counters = StepCounters(kept=3)
    for step in (5, 1, 7, 3):  # step 1 is the smallest, dropped when the fourth step arrives
        counters.add(step, "samples")
    assert sorted(counters.by_step) == [3, 5, 7]
    assert counters.counts(1)["samples"] == 0.0  # forgotten, not an error
    assert counters.counts()["samples"] == 4.0  # the total keeps everything


def test_add_all_adds_a_groups_counts_to_its_step():
    counters = StepCounters(kept=512)
    counters.add_all(4, {"groups": 1, "judge_calls": 12})
    counters.add_all(4, {"groups": 1, "judge_calls": 3})
    assert counters.counts(4)["groups"] == 2.0 and counters.counts(4)["judge_calls"] == 15.0


# -- one answered group -------------------------------------------------------------------------------------------


def test_a_routed_tournament_group_charges_its_calls_as_routed():
    verdicts = [
        Verdict(reward=1.0 + d, route=ROUTE_TOURNAMENT, uniform=True, judge_calls=12, judge_failures=2, routed=True)
        for d in (-0.1, 0.0, 0.1, 0.2)
    ]
    position = {"verdicts_decided": 10, "verdicts_first_won": 6, "order_pairs": 2, "order_pairs_consistent": 1}
    counts = counts_of(verdicts, [1.0] * 4, uniform=True, position=position, order_effect=0.3)
    assert counts["groups"] == 1 and counts["groups_routed"] == 1 and counts["samples_routed"] == 4
    assert counts["judge_calls"] == 12 and counts["judge_calls_routed"] == 12 and counts["judge_calls_wasted"] == 0
    assert counts["judge_failures"] == 2  # the group's, not summed over its verdicts
    assert counts["groups_uniform"] == 1 and counts["groups_all_correct"] == 1 and counts["groups_all_incorrect"] == 0
    assert counts["verdicts_decided"] == 10 and counts["order_pairs_consistent"] == 1
    assert counts["order_effect_sum"] == 0.3 and counts["order_effect_fits"] == 1


def test_a_diverse_groups_speculative_calls_are_wasted_and_its_position_figures_ignored():
    verdicts = [Verdict(reward=r, judge_calls=5) for r in (1.0, 0.0, 1.0, 0.0)]
    counts = counts_of(verdicts, [1.0, 0.0, 1.0, 0.0], uniform=False, position={"verdicts_decided": 3}, order_effect=1)
    assert counts["groups"] == 1 and counts["groups_routed"] == 0 and counts["samples_routed"] == 0
    assert counts["judge_calls"] == 5 and counts["judge_calls_wasted"] == 5 and counts["judge_calls_routed"] == 0
    assert counts["groups_uniform"] == 0
    assert counts["verdicts_decided"] == 0 and counts["order_effect_fits"] == 0  # only routed fits measure bias


def test_an_all_incorrect_uniform_group_is_counted_as_such():
    counts = counts_of([Verdict(reward=0.0) for _ in range(3)], [0.0] * 3, uniform=True)
    assert counts["groups_uniform"] == 1 and counts["groups_all_incorrect"] == 1 and counts["groups_all_correct"] == 0


def test_an_incomplete_group_is_neither_uniform_nor_in_the_advantage_figures():
    verdicts = [Verdict(reward=1.0, judge_calls=2, fallback=FALLBACK_DEADLINE) for _ in range(3)]
    counts = counts_of(verdicts, [1.0] * 3, uniform=True, complete=False)
    assert counts["fallback_deadline"] == 3  # one per sample
    assert counts["groups_uniform"] == 0 and counts["advantage_samples"] == 0
    assert counts["judge_calls_wasted"] == 2


def test_every_fallback_reason_has_its_counter():
    for code, name in FALLBACK_REASONS.items():
        if code:
            assert f"fallback_{name}" in COUNTERS
            counts = counts_of([Verdict(reward=0.0, fallback=code)], [0.0], uniform=True)
            assert counts[f"fallback_{name}"] == 1


def test_a_partly_failed_pointwise_group_is_routed_by_its_judged_samples():
    verdicts = [
        Verdict(reward=0.6, judge_calls=3, judge_failures=1, routed=True),
        Verdict(reward=0.6, judge_calls=3, judge_failures=1, routed=True),
        Verdict(reward=0.5, judge_calls=3, judge_failures=1, fallback=FALLBACK_JUDGE_ERROR),
    ]
    counts = counts_of(verdicts, [0.0] * 3, uniform=True)
    assert counts["samples_routed"] == 2 and counts["groups_routed"] == 1 and counts["fallback_judge_error"] == 1


def test_an_empty_answer_counts_a_group_and_nothing_else():
    counts = counts_of([], [], uniform=False, complete=False)
    assert counts["groups"] == 1 and counts["judge_calls"] == 0 and counts["judge_failures"] == 0


# -- advantages ---------------------------------------------------------------------------------------------------


def test_grpo_advantages_match_verls_estimator():
    rewards = [1.0, 0.0, 1.0, 0.0]
    std = np.std(rewards, ddof=1)
    expected = (np.asarray(rewards) - 0.5) / (std + GRPO_STD_EPS)
    np.testing.assert_allclose(grpo_advantages(rewards), expected)
    np.testing.assert_allclose(grpo_advantages(rewards, norm_by_std=False), [0.5, -0.5, 0.5, -0.5])
    assert grpo_advantages([0.7]).tolist() == [0.7]  # a group of one keeps its reward
    assert grpo_advantages([]).size == 0


def test_a_constant_group_of_non_dyadic_rewards_has_no_advantage_in_float64():
    assert np.abs(grpo_advantages([0.7] * 16)).max() <= NONZERO_ADVANTAGE_TOL
    assert utilisation_counts([0.7] * 16, [0.7] * 16, True)["nonzero_advantage"] == 0


def test_utilisation_counts_the_arenas_rewards_against_rlvrs():
    """A non-diverse group the arena spread: every sample moves the policy, none would under RLVR."""
    arena = [1.0 - 0.1, 1.0, 1.0 + 0.1, 1.0 + 0.2]
    counts = utilisation_counts(arena, [1.0] * 4, norm_by_std=True)
    assert counts["advantage_samples"] == 4
    assert counts["nonzero_advantage"] == 4 and counts["nonzero_advantage_rlvr"] == 0
    assert counts["abs_advantage_sum"] == pytest.approx(float(np.abs(grpo_advantages(arena)).sum()))
    assert counts["abs_advantage_sum_rlvr"] == 0.0


def test_a_diverse_group_counts_for_both_and_sums_its_absolute_advantages():
    counts = utilisation_counts([1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], norm_by_std=True)
    assert counts["nonzero_advantage"] == counts["nonzero_advantage_rlvr"] == 4
    assert counts["abs_advantage_sum_rlvr"] == pytest.approx(4 * 0.5 / (np.sqrt(1 / 3) + GRPO_STD_EPS))


def test_the_advantage_tolerance_is_not_the_reward_tolerance():
    """Rewards 1e-7 apart are equal for routing (diversity_tol), yet GRPO's std normalisation gives them an advantage
    well above the advantage tolerance; without the normalisation they give none."""
    rewards = [0.0, 1e-7]
    assert is_uniform(rewards, DIVERSITY_TOL)
    assert utilisation_counts(rewards, rewards, norm_by_std=True)["nonzero_advantage"] == 2
    assert utilisation_counts(rewards, rewards, norm_by_std=False)["nonzero_advantage"] == 0


# -- derived figures ----------------------------------------------------------------------------------------------


def test_derived_figures_with_nothing_counted_are_zero_and_position_bias_is_left_out():
    out = derive_metrics({})
    assert all(out[f"arena/{key}"] == 0.0 for key in COUNTERS)
    assert out["arena/alpha"] == 0.0 and out["arena/judge_calls_per_routed_group"] == 0.0
    for absent in ("arena/first_position_win_share", "arena/self_consistency", "arena/order_effect"):
        assert absent not in out  # a 0.0 would read as a measurement


def test_derived_ratios():
    counts = {
        "groups": 10,
        "groups_uniform": 4,
        "groups_all_correct": 1,
        "groups_all_incorrect": 3,
        "groups_routed": 4,
        "judge_calls_routed": 48,
        "advantage_samples": 80,
        "nonzero_advantage": 60,
        "nonzero_advantage_rlvr": 48,
        "abs_advantage_sum": 40.0,
        "verdicts_decided": 20,
        "verdicts_first_won": 15,
        "order_pairs": 4,
        "order_pairs_consistent": 3,
        "order_effect_sum": 1.0,
        "order_effect_fits": 4,
    }
    out = derive_metrics(counts)
    assert out["arena/alpha"] == 0.4 and out["arena/alpha_routed"] == 0.4
    assert out["arena/all_correct_share"] == 0.1 and out["arena/all_incorrect_share"] == 0.3
    assert out["arena/all_correct_share_of_uniform"] == 0.25
    assert out["arena/judge_calls_per_routed_group"] == 12.0
    assert out["arena/nonzero_advantage_share"] == 0.75 and out["arena/nonzero_advantage_share_rlvr"] == 0.6
    assert out["arena/mean_abs_advantage"] == 0.5 and out["arena/mean_abs_advantage_rlvr"] == 0.0
    assert out["arena/first_position_win_share"] == 0.75 and out["arena/self_consistency"] == 0.75
    assert out["arena/order_effect"] == 0.25
    assert out["arena/groups"] == 10.0


def test_position_figures_count_decided_verdicts_and_consistent_pairs():
    comparisons = [
        (0, 1, 1.0),  # 0 shown first wins
        (1, 0, 0.0),  # 0 wins again with 1 shown first: a consistent pair
        (2, 3, 1.0),  # 2 shown first wins
        (3, 2, 1.0),  # 3 shown first wins: the first position won both times, inconsistent
        (0, 2, 0.5),  # a tie: not decided
        (1, 2, None),  # a failed call: not decided
        (1, 3, 0.0),  # decided, judged in one order only
    ]
    assert position_figures(comparisons) == {
        "verdicts_decided": 5,
        "verdicts_first_won": 3,
        "order_pairs": 2,
        "order_pairs_consistent": 1,
    }
    assert position_figures([]) == {
        "verdicts_decided": 0,
        "verdicts_first_won": 0,
        "order_pairs": 0,
        "order_pairs_consistent": 0,
    }


def test_the_metrics_module_loads_without_the_asyncio_referee():
    """The tracker hook reads the counters from here; importing them must not import the referee's orchestration."""
    code = (
        "import sys; import arena_verl.core.referee.metrics; "
        "print('arena_verl.core.referee.referee' in sys.modules, 'asyncio' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
