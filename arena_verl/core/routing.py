"""Which reward a group gets: the route of a group under its mode (the mode table, :mod:`arena_verl.core.modes`), and
the reward of each route. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena_verl.core.modes import mode_of
from arena_verl.core.names import ROUTE_POINTWISE, ROUTE_TOURNAMENT, ROUTE_VERIFIER
from arena_verl.core.tournament import strengths_to_rewards

__all__ = [
    "ROUTE_VERIFIER",
    "ROUTE_TOURNAMENT",
    "ROUTE_POINTWISE",
    "is_uniform",
    "decide_route",
    "route_of",
    "pointwise_reward",
]


def is_uniform(verifier_rewards: Sequence[float], tol: float) -> bool:
    """A non-diverse group: every verifier reward equal within ``tol`` (its GRPO advantage would be zero)."""
    rewards = np.asarray(verifier_rewards, dtype=np.float64)
    return rewards.size == 0 or float(rewards.max() - rewards.min()) <= tol


def decide_route(mode: str, verifier_rewards: Sequence[float], tol: float) -> int:
    """The route of a complete group under ``mode`` (:func:`route_of` its :func:`is_uniform`)."""
    return route_of(mode, is_uniform(verifier_rewards, tol))


def route_of(mode: str, uniform: bool) -> int:
    """The route of a complete group under ``mode``, given whether its verifier rewards agree (the mode table:
    :mod:`arena_verl.core.modes`); ValueError for an unknown mode."""
    return mode_of(mode).route(uniform)


def tournament_rewards(mode: str, strengths: np.ndarray, verifier_rewards: Sequence[float], scale: float) -> np.ndarray:
    """A tournament's rewards, made as ``mode`` makes them. Anchored (``arena``): on the (common) verifier reward,
    ``r + scale * (sigmoid(theta - mean) - 0.5)``. The judge's alone (``tournament_all``, ArenaRL):
    ``sigmoid(theta - mean)``, the win probability against an average trace of the group."""
    if mode_of(mode).rewards == "judge":
        return strengths_to_rewards(strengths, 0.5, 1.0)
    return strengths_to_rewards(strengths, np.asarray(verifier_rewards, dtype=np.float64), scale)


def pointwise_reward(mode: str, judge_score: float, verifier_reward: float, scale: float) -> float:
    """A pointwise score's reward, made as ``mode`` makes it. The judge's alone (``pointwise``, RLAIF): its score in
    [0, 1] (a grade in {0, 0.5, 1}, or the expected grade of a probability verdict). Anchored
    (``adaptive_pointwise``): ``verifier + scale * (score - 0.5)``."""
    if mode_of(mode).rewards == "judge":
        return float(judge_score)
    return float(verifier_reward + scale * (judge_score - 0.5))
