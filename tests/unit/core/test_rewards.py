"""Strength-to-reward mapping, and its behaviour under GRPO and Dr.GRPO normalisation."""

import numpy as np
import pytest

from arena_verl.core.tournament import strengths_to_rewards


def test_anchored_on_the_verifier_reward_and_bounded_by_half_the_scale():
    theta = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    for base in (0.0, 1.0):
        rewards = strengths_to_rewards(theta, base, scale=0.4)
        assert np.all(np.abs(rewards - base) < 0.2)
        assert np.all(np.diff(rewards) > 0)  # order of strengths is kept
        assert np.isfinite(rewards).all()


def test_formula_and_shift_invariance():
    theta = np.array([0.3, -0.7, 1.1])
    expected = 1.0 + 0.5 * (1.0 / (1.0 + np.exp(-(theta - theta.mean()))) - 0.5)
    np.testing.assert_allclose(strengths_to_rewards(theta, 1.0, 0.5), expected)
    np.testing.assert_allclose(strengths_to_rewards(theta + 5.0, 1.0, 0.5), expected)


def test_all_correct_group_stays_above_all_incorrect_for_scale_below_one():
    theta = np.array([-50.0, 50.0])
    assert strengths_to_rewards(theta, 0.0, 0.99).max() < strengths_to_rewards(theta, 1.0, 0.99).min()


def grpo_advantage(rewards, std_norm):
    centred = rewards - rewards.mean()
    return centred / (rewards.std(ddof=1) + 1e-6) if std_norm else centred


def test_under_grpo_the_scale_cancels_and_under_dr_grpo_it_sets_the_weight():
    theta = np.array([-1.0, -0.2, 0.4, 0.8])
    small, large = strengths_to_rewards(theta, 1.0, 0.1), strengths_to_rewards(theta, 1.0, 1.0)
    np.testing.assert_allclose(grpo_advantage(small, True), grpo_advantage(large, True), rtol=1e-4)
    np.testing.assert_allclose(grpo_advantage(large, False), 10 * grpo_advantage(small, False))
    assert np.abs(grpo_advantage(large, False)).max() < 0.5


def test_zero_scale_and_empty_group():
    np.testing.assert_array_equal(strengths_to_rewards(np.array([1.0, -1.0]), 1.0, 0.0), [1.0, 1.0])
    assert strengths_to_rewards(np.array([]), 1.0).size == 0


@pytest.mark.parametrize(
    "theta, base, scale",
    [([np.nan, 0.0], 1.0, 0.5), ([0.0, 1.0], np.inf, 0.5), ([0.0], 1.0, -1.0), ([[0.0]], 1.0, 1.0)],
)
def test_bad_input(theta, base, scale):
    with pytest.raises(ValueError):
        strengths_to_rewards(np.array(theta), base, scale)
