"""arena-verl's verifier as a verl ``custom_reward_function`` (its documented path: ``arena_verl.verl_reward_fn``).

Needed in one setup only: when verl itself serves the judge (``reward.reward_model.enable=true``), verl 0.9.1 calls
a reward manager's ``run_single`` only if ``reward.custom_reward_function.path`` is set (otherwise it scores with
the reward model directly). Point it here to keep arena-verl's verifier:
``reward.custom_reward_function.path=pkg://arena_verl.verl_reward_fn reward.custom_reward_function.name=compute_score``.
The served judge also needs its own pool and ``reward.reward_model.rollout.free_cache_engine=false`` (else verl puts
it to sleep at start and the streaming reward path never wakes it): see :mod:`arena_verl.verl_edge.judge_placement`.
"""

from __future__ import annotations

from typing import Any

from arena_verl.verify.math_verifier import MathVerifier

__all__ = ["compute_score"]

_VERIFIER: MathVerifier | None = None


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None, **_) -> dict:
    """math-verify for every data source (this function only exists for math judging setups)."""
    global _VERIFIER
    if _VERIFIER is None:
        _VERIFIER = MathVerifier()
    result = _VERIFIER.score(solution_str, ground_truth)
    return {"score": result.score, "acc": result.score}
