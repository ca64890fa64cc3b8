"""The documented entry point (``verl.plugins``: ``arena = "arena_verl.verl_plugin"``, or
``VERL_USE_EXTERNAL_MODULES=arena_verl.verl_plugin``): importing it installs the arena into verl
(:mod:`arena_verl.verl_edge.plugin`)."""

import arena_verl.verl_edge.plugin  # noqa: F401  (registers "arena" and installs the hooks)
