"""The documented path of the ``arena`` reward manager (``reward.reward_manager.source=importlib
reward.reward_manager.module.path=pkg://arena_verl.reward_manager``, docs/reward_loop.md). The manager and its
parts live in :mod:`arena_verl.verl_edge` (:mod:`arena_verl.verl_edge.reward_manager`)."""

from arena_verl.verl_edge.extra_info import EXTRA_INFO_KEYS
from arena_verl.verl_edge.reward_manager import ArenaRewardManager

__all__ = ["ArenaRewardManager", "EXTRA_INFO_KEYS"]
