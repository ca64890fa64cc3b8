"""The documented path of arena-verl's verifier as verl's ``custom_reward_function``
(``reward.custom_reward_function.path=pkg://arena_verl.verl_reward_fn``); defined in
:mod:`arena_verl.verl_edge.reward_fn`."""

from arena_verl.verl_edge.reward_fn import compute_score

__all__ = ["compute_score"]
