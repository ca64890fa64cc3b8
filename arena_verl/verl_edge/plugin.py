"""What ``import verl`` runs in the driver and in every Ray worker through the ``verl.plugins`` entry point
(:mod:`arena_verl.verl_plugin`): registers the ``arena`` reward manager and the ``arena_grpo`` advantage estimator,
and hooks the tracker (per-step ``arena/*`` metrics), the agent loop (validation samples are marked as such) and the
V1 trainer's replay buffer (DAPO's refills bounded by ``algorithm.filter_groups.max_num_gen_batches``, which verl
0.9.1 ignores). Without the entry point (or with ``VERL_USE_EXTERNAL_PLUGINS=none``) set
``VERL_USE_EXTERNAL_MODULES=arena_verl.verl_plugin``: verl then imports it in every process too."""

from arena_verl.verl_edge import reward_manager  # noqa: F401  (registers "arena")
from arena_verl.verl_edge.advantage import install_advantage_estimator
from arena_verl.verl_edge.dapo_bound import install_dapo_bound
from arena_verl.verl_edge.tracking import install_tracking_hook
from arena_verl.verl_edge.validation_signal import install_validation_signal

install_advantage_estimator()
install_tracking_hook()
install_validation_signal()
install_dapo_bound()
