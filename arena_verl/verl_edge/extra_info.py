"""What the ``arena`` manager returns for each sample: the reward and the extra-info schema verl reads.

verl takes the key list from the first sample, so every sample returns exactly :data:`EXTRA_INFO_KEYS`, all
numeric (verl's validation metrics average them)."""

from __future__ import annotations

import logging
import math
import uuid
from typing import Any

from arena_verl.core.referee import Verdict
from arena_verl.verify.math_verifier import STATUSES, VerifyResult

logger = logging.getLogger(__name__)

__all__ = ["EXTRA_INFO_KEYS", "reward_answer", "sample_key"]

EXTRA_INFO_KEYS = (
    "arena/verifier_reward",  # the verifier's score
    "arena/verify_status",  # index into arena_verl.verify.math_verifier.STATUSES
    "arena/validation",  # 1 = validation sample (never judged)
    "arena/routed",  # 1 = the reward came from judge verdicts
    "arena/route",  # 0 verifier, 1 tournament, 2 pointwise
    "arena/uniform_group",  # 1 = every verifier reward of the group was equal
    "arena/strength",  # Bradley-Terry strength (0 when not in a tournament)
    "arena/win_rate",  # tournament win rate, -1 when the sample played no match
    "arena/judge_calls",  # judge calls charged to the sample's group
    "arena/judge_failures",  # of those, calls without a usable verdict
    "arena/fallback",  # 0 none, 1 deadline, 2 judge_error, 3 referee_lost, 4 overflow, 5 late, 6 thin
    "arena/certainty",  # the routed group's certainty in [0, 1] (core/tournament/certainty.py); -1 when not routed
    "acc",  # 1 if the verifier said correct: verl's DAPO filter (filter_groups.metric=acc) and val-core acc metrics
)


def reward_answer(verified: VerifyResult, verdict: Verdict, validation: bool) -> dict:
    """``{"reward_score", "reward_extra_info"}`` of one sample, as verl's ``run_single`` returns it."""
    info = {
        "arena/verifier_reward": float(verified.score),
        "arena/verify_status": float(STATUSES.index(verified.status)),
        "arena/validation": float(validation),
        "arena/routed": float(verdict.routed),
        "arena/route": float(verdict.route),
        "arena/uniform_group": float(verdict.uniform),
        "arena/strength": float(verdict.strength),
        "arena/win_rate": float(verdict.win_rate),
        "arena/judge_calls": float(verdict.judge_calls),
        "arena/judge_failures": float(verdict.judge_failures),
        "arena/fallback": float(verdict.fallback),
        "arena/certainty": float(verdict.certainty),
        "acc": float(verified.status == "correct"),
    }
    reward = float(verdict.reward)
    if not math.isfinite(reward):  # never reached through the referee (it cleans its inputs); a last safety net
        logger.warning("non-finite reward %r replaced by the verifier reward", reward)
        reward = float(verified.score) if math.isfinite(verified.score) else 0.0
    return {"reward_score": reward, "reward_extra_info": info}


def sample_key(session_id: Any) -> str:
    """A sample's key within its group. verl's V1 trainer numbers the samples of a group (``session_id``); without
    it (legacy trainer, batch path) every call is a sample of its own, and the referee recognises the batch path's
    padding copies by their content."""
    return f"session-{session_id}" if session_id is not None else f"call-{uuid.uuid4().hex}"
