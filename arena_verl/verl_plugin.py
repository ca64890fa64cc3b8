"""Entry point of the ``verl.plugins`` group: ``import verl`` imports this module in the driver and in every Ray
worker, which registers the ``arena`` reward manager, hooks the tracker (per-step ``arena/*`` metrics) and the agent
loop (validation samples are marked as such). Without the entry point (or with ``VERL_USE_EXTERNAL_PLUGINS=none``)
set ``VERL_USE_EXTERNAL_MODULES=arena_verl.verl_plugin``: verl then imports this module in every process too."""

from . import reward_manager  # noqa: F401  (registers "arena")
from .tracking import install_tracking_hook
from .validation_signal import install_validation_signal

install_tracking_hook()
install_validation_signal()
