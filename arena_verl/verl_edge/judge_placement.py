"""The judge served by verl itself (``reward.arena.judge.backend=openai reward.arena.judge.base_url=verl``): the
compositions of ``reward.reward_model.*`` under which that judge never answers, refused before a run starts.

What verl 0.9.1 does with a served reward model (paths under ``verl/``):

- ``experimental/reward_loop/reward_model.py``, ``RewardModelManager.__init__``: starts the replicas, then
  ``if self.config.rollout.free_cache_engine: self.sleep()``. ``free_cache_engine`` defaults to true
  (``trainer/config/reward/reward.yaml``).
- The V1 trainer (``trainer/ppo/v1/trainer_base.py``, ``init``; the legacy ``trainer/ppo/ray_trainer.py`` alike)
  hands the manager the ``reward_pool`` resource pool, so the replicas start with ``init_colocated``: the vLLM
  server honours ``sleep`` there (``workers/rollout/vllm_rollout/vllm_async_server.py``, ``vLLMHttpServer.sleep``:
  ``engine.sleep(level=1)``; a sleeping engine's scheduler is paused and queues requests, see vLLM's
  ``v1/engine/core.py``, ``EngineCore.sleep``).
- The only ``wake_up`` is in ``RewardLoopManager.compute_rm_score`` (``experimental/reward_loop/reward_loop.py``),
  which the trainers call only when ``reward_loop_worker_handles`` is None, i.e. only without
  ``enable_resource_pool``. With ``enable_resource_pool=true`` rewards stream from the agent loop and nothing ever
  wakes the judge: every judge call waits out its timeout and every routed group falls back at its deadline.
- Without ``enable_resource_pool`` the V1 trainer scores after replay-buffer sampling (``_compute_reward_colocate``)
  with only ``prompts``, ``responses``, ``attention_mask`` and ``raw_prompt``: the reward manager sees no ``uid``,
  ``data_source`` or ground truth, so no group reaches the referee and the verifier has nothing to check against.

So the judge needs its own pool and ``reward.reward_model.rollout.free_cache_engine=false`` (a dedicated pool never
frees its cache for the trainer; ``vLLMHttpServer.sleep`` is then a no-op too). The legacy trainer
(``trainer.use_v1=false``) without ``enable_resource_pool`` wakes the judge around each batch it scores and hands it
the whole batch: allowed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arena_verl.backend_registry import BACKENDS
from arena_verl.core.modes import needs_judge

__all__ = ["verl_placement_problems", "check_verl_placement", "RECIPE_OVERRIDES"]

# What the recipe's JUDGE_PLACEMENT=verl sets beside verl's reward-model keys for the judge to stay awake.
RECIPE_OVERRIDES = (
    "reward.reward_model.enable_resource_pool=True",
    "reward.reward_model.rollout.free_cache_engine=False",
)


def _get(config, key: str, default: Any = None) -> Any:
    from arena_verl.settings import config_value

    value = config_value(config, key)
    return default if value is None else value


def _flag(config, key: str, default: bool) -> bool:
    value = _get(config, key, default)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _served_by_verl(config, settings) -> bool:
    if settings is not None:
        # Only an endpoint backend's options have an address (vllm, transformers, python have none).
        mode, backend = settings.referee.mode, settings.judge.backend
        base_url = getattr(settings.judge.options, "base_url", None)
    else:  # the raw keys (with their parts' defaults): the rest of reward.arena need not be valid for this check
        from arena_verl.core.options import RefereeOptions
        from arena_verl.settings_judge import JudgeSettings

        mode = str(_get(config, "reward.arena.mode", RefereeOptions.mode))
        backend = str(_get(config, "reward.arena.judge.backend", JudgeSettings.backend))
        base_url = _get(config, "reward.arena.judge.base_url", None)
    return needs_judge(mode) and _takes_verl_router(backend) and base_url == "verl"


def _takes_verl_router(backend: str) -> bool:
    """Whether ``backend`` may name verl's router as its address (the registry's ``verl_router``: openai)."""
    entry = BACKENDS.get(backend)
    return entry is not None and entry.verl_router


def verl_placement_problems(config, settings=None) -> list[str]:
    """Why the judge verl serves would never answer under ``config`` (empty: it will, or no such judge is used).

    ``config`` is the composed trainer config (anything ``OmegaConf.select`` reads); ``settings`` its
    :class:`~arena_verl.settings.ArenaSettings` when the caller has them already."""
    if not _served_by_verl(config, settings):
        return []
    if not _flag(config, "reward.reward_model.enable", False):
        return [
            "reward.arena.judge.base_url=verl needs verl to serve the judge: set reward.reward_model.enable=true and "
            "reward.reward_model.model_path"
        ]
    problems = []
    if not _flag(config, "reward.reward_model.enable_resource_pool", False):
        if _flag(config, "trainer.use_v1", True):
            problems.append(
                "reward.arena.judge.base_url=verl with reward.reward_model.enable_resource_pool=false: verl's V1 "
                "trainer then scores after sampling and hands the reward manager no uid, data_source or ground truth "
                "(no group would reach the judge, the verifier would have nothing to check); give the judge its own "
                "pool: reward.reward_model.enable_resource_pool=true with reward.reward_model.nnodes/n_gpus_per_node"
            )
    elif _flag(config, "reward.reward_model.rollout.free_cache_engine", True):
        problems.append(
            "reward.arena.judge.base_url=verl with reward.reward_model.enable_resource_pool=true and "
            "reward.reward_model.rollout.free_cache_engine=true: verl puts the judge to sleep once its replicas "
            "start and wakes it only on its batch scoring path, which streaming rewards never take (every judge "
            "call would time out, every routed group fall back); set "
            "reward.reward_model.rollout.free_cache_engine=false (the judge's pool is its own)"
        )
    return problems


def check_verl_placement(config, settings=None) -> None:
    """Raise ``ValueError`` with :func:`verl_placement_problems`' reasons (for the reward manager's start)."""
    problems = verl_placement_problems(config, settings)
    if problems:
        raise ValueError("; ".join(problems))


def with_verl_router(settings, config, router_address: str | None):
    """``judge.backend=openai judge.base_url=verl``: the judge is the model verl serves (``reward.reward_model.*``),
    reached through the router address verl hands the reward manager; other settings come back unchanged."""
    judge = settings.judge
    if not _takes_verl_router(judge.backend) or judge.options.base_url != "verl":
        return settings
    # A composition in which verl's judge sleeps for good, or never streams, is refused at start, not found out
    # by every routed group falling back at its deadline.
    check_verl_placement(config, settings)
    if not router_address:
        raise ValueError(
            "reward.arena.judge.base_url=verl needs verl to serve the judge: set reward.reward_model.enable=true "
            "and reward.reward_model.model_path"
        )
    model = judge.options.model_path or config.reward.reward_model.model_path
    options = dataclasses.replace(judge.options, base_url=f"http://{router_address}/v1", model_path=model)
    return dataclasses.replace(settings, judge=dataclasses.replace(judge, options=options))
