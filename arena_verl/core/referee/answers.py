"""The referee's answers: the verdicts of a group from its route's outcome (a tournament's result, pointwise scores)
and the verifier-reward verdicts of every fallback. Pure functions of plain values."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from arena_verl.core.names import (
    FALLBACK_JUDGE_ERROR,
    FALLBACK_THIN,
    ROUTE_POINTWISE,
    ROUTE_TOURNAMENT,
    ROUTE_VERIFIER,
)
from arena_verl.core.referee.groups import Verdict
from arena_verl.core.routing import pointwise_reward

__all__ = [
    "NEUTRAL_SCORE",
    "verifier_verdicts",
    "tournament_verdicts",
    "pointwise_verdicts",
    "is_thin",
    "verdicts_needed",
]

NEUTRAL_SCORE = 0.5  # what a failed pointwise score counts as


def verifier_verdicts(
    verifier_rewards: Sequence[float],
    *,
    judge_calls: int = 0,
    judge_failures: int = 0,
    fallback: int = 0,
    route: int = ROUTE_VERIFIER,
    uniform: bool = False,
) -> list[Verdict]:
    """Every member gets its verifier reward: the verifier route, or a fallback (``fallback`` names its reason).
    ``judge_calls`` made before, and the ``judge_failures`` among them, are still charged to the group."""
    return [
        Verdict(
            reward=r,
            route=route,
            uniform=uniform,
            judge_calls=judge_calls,
            judge_failures=judge_failures,
            fallback=fallback,
        )
        for r in verifier_rewards
    ]


def verdicts_needed(planned: int, min_share: float) -> int:
    """The verdicts a tournament of ``planned`` calls needs to be trained on: ``min_share`` of them, rounded up."""
    return math.ceil(min_share * planned)


def is_thin(answered: int, planned: int, min_share: float) -> bool:
    """Whether a tournament answered with ``answered`` of its ``planned`` verdicts has too few to train on: fewer
    than :func:`verdicts_needed` (``min_share`` 0: never). Its fitted strengths would rest on one or two verdicts, yet
    GRPO's std normalisation would turn them into advantages as large as a verifier's real contrast."""
    return answered < verdicts_needed(planned, min_share)


def tournament_verdicts(
    result,
    rewards: np.ndarray,
    uniform: bool,
    verifier_rewards: Sequence[float],
    planned: int,
    min_share: float,
    certainty: float = -1.0,
) -> list[Verdict]:
    """A finished tournament's verdicts: each member's reward (``rewards``, from the fitted strengths), strength and
    win rate (-1 for a member that played no match). Routed when enough verdicts went into the fit; otherwise every
    member gets its verifier reward (of ``verifier_rewards``) as a fallback:

    - ``judge_error``: no verdict at all (every call failed, or was cut at the completion grace: a judge that is
      gone, or far slower than it was);
    - ``thin``: some verdicts, fewer than ``min_share`` of the ``planned`` calls (:func:`is_thin`).

    ``certainty``: the fit's certainty (:func:`~arena_verl.core.tournament.certainty.group_certainty`), on the
    verdicts of a routed group (-1 on a fallback's)."""
    win_rate = result.win_rate
    judged_nothing = result.judge_calls > 0 and result.answered_calls <= 0
    fallback = 0
    if judged_nothing:
        fallback = FALLBACK_JUDGE_ERROR
    elif is_thin(result.answered_calls, planned, min_share):
        fallback = FALLBACK_THIN
    given = [float(r) for r in (verifier_rewards if fallback else rewards)]
    return [
        Verdict(
            reward=given[i],
            route=ROUTE_TOURNAMENT,
            uniform=uniform,
            strength=float(result.strengths[i]),
            win_rate=float(win_rate[i]) if result.games[i] else -1.0,
            judge_calls=result.judge_calls,
            judge_failures=result.failed_calls,
            routed=not fallback,
            fallback=fallback,
            certainty=-1.0 if fallback else float(certainty),
        )
        for i in range(len(given))
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
