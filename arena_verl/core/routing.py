"""Which reward a group gets: the routing rule of every mode, and the reward of each route. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
    """The route of a complete group under ``mode``, given whether its verifier rewards agree.

    ============================  ===============  ====================
    mode                          diverse group    non-diverse group
    ============================  ===============  ====================
    ``rlvr``                      verifier         verifier
    ``pointwise``                 pointwise        pointwise
    ``tournament_all``            tournament       tournament
    ``adaptive_pointwise``        verifier         pointwise
    ``arena``                     verifier         tournament
    ============================  ===============  ====================
    """
    if mode == "rlvr":
        return ROUTE_VERIFIER
    if mode == "pointwise":
        return ROUTE_POINTWISE
    if mode == "tournament_all":
        return ROUTE_TOURNAMENT
    if mode == "adaptive_pointwise":
        return ROUTE_POINTWISE if uniform else ROUTE_VERIFIER
    if mode == "arena":
        return ROUTE_TOURNAMENT if uniform else ROUTE_VERIFIER
    raise ValueError(f"unknown mode {mode!r}")


def tournament_rewards(mode: str, strengths: np.ndarray, verifier_rewards: Sequence[float], scale: float) -> np.ndarray:
    """``arena``: anchored on the (common) verifier reward, ``r + scale * (sigmoid(theta - mean) - 0.5)``.
    ``tournament_all`` (ArenaRL): the judge alone, ``sigmoid(theta - mean)``, the win probability against an
    average trace of the group."""
    if mode == "tournament_all":
        return strengths_to_rewards(strengths, 0.5, 1.0)
    return strengths_to_rewards(strengths, np.asarray(verifier_rewards, dtype=np.float64), scale)


def pointwise_reward(mode: str, judge_score: float, verifier_reward: float, scale: float) -> float:
    """``pointwise`` (RLAIF): the judge's score in [0, 1] (a grade in {0, 0.5, 1}, or the expected grade of a
    probability verdict). ``adaptive_pointwise``: anchored like the arena,
    ``verifier + scale * (score - 0.5)``."""
    if mode == "pointwise":
        return float(judge_score)
    return float(verifier_reward + scale * (judge_score - 0.5))
