"""The referee's answers: the verdicts of a group from its route's outcome (a tournament's result, pointwise scores)
and the verifier-reward verdicts of every fallback. Pure functions of plain values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena_verl.core.names import FALLBACK_JUDGE_ERROR, ROUTE_POINTWISE, ROUTE_TOURNAMENT, ROUTE_VERIFIER
from arena_verl.core.referee.groups import Verdict
from arena_verl.core.routing import pointwise_reward

__all__ = ["NEUTRAL_SCORE", "verifier_verdicts", "tournament_verdicts", "pointwise_verdicts"]

NEUTRAL_SCORE = 0.5  # what a failed pointwise score counts as


def verifier_verdicts(
    verifier_rewards: Sequence[float],
    *,
    judge_calls: int = 0,
    fallback: int = 0,
    route: int = ROUTE_VERIFIER,
    uniform: bool = False,
) -> list[Verdict]:
    """Every member gets its verifier reward: the verifier route, or a fallback (``fallback`` names its reason).
    ``judge_calls`` made before are still charged to the group."""
    return [
        Verdict(reward=r, route=route, uniform=uniform, judge_calls=judge_calls, fallback=fallback)
        for r in verifier_rewards
    ]


def tournament_verdicts(result, rewards: np.ndarray, uniform: bool) -> list[Verdict]:
    """A finished tournament's verdicts: each member's reward (``rewards``, from the fitted strengths), strength and
    win rate (-1 for a member that played no match). Routed when at least one verdict went into the fit."""
    win_rate = result.win_rate
    # Every call failed or was cancelled at the completion grace (a judge that is gone, or far slower than it was):
    # no verdict reached the fit, the rewards are the verifier's, and the group is a judge_error fallback.
    judged_nothing = result.judge_calls > 0 and result.failed_calls + result.dropped_calls >= result.judge_calls
    return [
        Verdict(
            reward=float(rewards[i]),
            route=ROUTE_TOURNAMENT,
            uniform=uniform,
            strength=float(result.strengths[i]),
            win_rate=float(win_rate[i]) if result.games[i] else -1.0,
            judge_calls=result.judge_calls,
            judge_failures=result.failed_calls,
            routed=not judged_nothing,
            fallback=FALLBACK_JUDGE_ERROR if judged_nothing else 0,
        )
        for i in range(len(rewards))
    ]


def pointwise_verdicts(
    mode: str, scores: Sequence, verifier_rewards: Sequence[float], scale: float, uniform: bool
) -> list[Verdict]:
    """Pointwise verdicts from one judge score per member (a float in [0, 1]: a grade in {0, 0.5, 1}, or an
    expected score from the grades' probabilities; anything else, validated by the caller, is a failed call).

    A failed score is the middle of the judge's scale, ``NEUTRAL_SCORE``: neutral (the verifier reward in
    ``adaptive_pointwise``, 0.5 in the judge-only ``pointwise`` baseline, which must not fall back on the verifier),
    and counted as a judge error."""
    failures = sum(1 for x in scores if not isinstance(x, float))
    verdicts = []
    for value, verifier_reward in zip(scores, verifier_rewards):
        judged = isinstance(value, float)
        score = value if judged else NEUTRAL_SCORE
        verdicts.append(
            Verdict(
                reward=pointwise_reward(mode, score, verifier_reward, scale),
                route=ROUTE_POINTWISE,
                uniform=uniform,
                judge_calls=len(scores),
                judge_failures=failures,
                fallback=0 if judged else FALLBACK_JUDGE_ERROR,
                routed=judged,
            )
        )
    return verdicts
