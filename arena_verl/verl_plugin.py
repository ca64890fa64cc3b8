"""Entry point of the ``verl.plugins`` group: ``import verl`` imports this module in the driver and in every Ray
worker, which registers the ``arena`` reward manager. Without the entry point (or with
``VERL_USE_EXTERNAL_PLUGINS=none``) use ``reward.reward_manager.source=importlib
reward.reward_manager.name=ArenaRewardManager reward.reward_manager.module.path=pkg://arena_verl.reward_manager``."""

from . import reward_manager  # noqa: F401  (registers "arena")
from .tracking import install_tracking_hook

install_tracking_hook()
