"""The arena's advantage estimator, ``algorithm.adv_estimator=arena_grpo`` (registered with verl's
``register_adv_est`` by the plugin, so both trainers call it as they call any estimator).

It computes verl's own GRPO advantages (``core_algos.compute_grpo_outcome_advantage``, with
``algorithm.norm_adv_by_std_in_grpo``), then multiplies each routed tournament group's by its certainty when
``reward.arena.certainty_weighting`` is on: GRPO's std normalisation cancels any per-group scale of the rewards, so a
judge with no signal would otherwise train its groups at the full weight of a verifier's real contrast. Every other
group (verifier-scored, an unknown uid, any group with weighting off) keeps GRPO's advantages exactly.

Why a lookup by uid: verl hands an estimator only the token-level rewards, the response mask, ``uid`` and
``config.algorithm`` (never ``reward_extra_info``), and a certainty carried in the rewards themselves could not tell a
routed group from a verifier group of small spread (partial-credit scorers) without changing the latter. The
referees remember every answered group (its route and certainty), so the estimator asks them, one call per shard per
step, as the tracker does. A referee that cannot be reached leaves its groups GRPO's advantages (logged once).

It also records, for the tracker, the mean |advantage| the trainer will use by route
(``arena/mean_abs_advantage_routed`` and ``_mixed``: routed groups, and diverse groups on their verifier rewards), each
absent in a step without such groups.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from arena_verl.settings import ARENA_ESTIMATOR, ArenaSettings, arena_settings

__all__ = [
    "ARENA_ESTIMATOR",
    "compute_arena_grpo_advantage",
    "install_advantage_estimator",
    "use_lookup",
    "use_settings",
    "pop_step_figures",
    "route_figures",
    "ROUTES",
]

logger = logging.getLogger(__name__)

_LOOKUP_TIMEOUT_S = 60.0
ROUTES = ("routed", "mixed")  # the route classes with a per-step mean |advantage| (Referee.advantage_groups)
_state: dict[str, Any] = {"settings": None, "figures": {}, "warned": False, "lookup": None}


def use_settings(settings: ArenaSettings | None) -> None:
    """The run's arena settings (the tracker hook passes them when the trainer starts): the referees' names."""
    _state["settings"] = settings


def use_lookup(lookup) -> None:
    """Where the estimator asks how groups were rewarded when its caller passes no ``lookup``: an in-process
    referee's ``advantage_groups`` (a one-process trainer); None: the referee actors."""
    _state["lookup"] = lookup


def pop_step_figures() -> dict[str, float]:
    """The last advantage computation's figures (once: the tracker logs them with the step)."""
    figures, _state["figures"] = _state["figures"], {}
    return figures


def route_figures(abs_advantages: Sequence[float], classes: Sequence[str | None]) -> dict[str, float]:
    """``arena/mean_abs_advantage_<route>`` over the samples of each route class present (``routed``, ``mixed``)."""
    values = np.asarray(abs_advantages, dtype=np.float64)
    labels = np.asarray(classes, dtype=object)
    out = {}
    for route in ROUTES:
        chosen = labels == route
        if chosen.any():
            out[f"arena/mean_abs_advantage_{route}"] = float(values[chosen].mean())
    return out


def compute_arena_grpo_advantage(
    token_level_rewards,
    response_mask,
    index: np.ndarray | None = None,
    config: Any = None,
    epsilon: float = 1e-6,
    lookup=None,
    **_: Any,
):
    """verl's estimator signature: returns ``(advantages, returns)``. ``lookup(uids) -> {uid: (route_class, weight)}``
    replaces the referees (tests); by default they are asked."""
    import torch
    from verl.trainer.ppo import core_algos

    norm = True if config is None else bool(config.get("norm_adv_by_std_in_grpo", True))
    advantages, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=token_level_rewards,
        response_mask=response_mask,
        index=index,
        epsilon=epsilon,
        norm_adv_by_std_in_grpo=norm,
    )
    if index is None or len(index) == 0:
        return advantages, advantages
    uids = list(index)
    groups = (lookup or _state["lookup"] or _ask_referees)(sorted(set(uids), key=str))
    weights = [groups[uid][1] if uid in groups else 1.0 for uid in uids]
    if any(weight != 1.0 for weight in weights):
        scale = torch.tensor(weights, dtype=advantages.dtype, device=advantages.device).unsqueeze(-1)
        advantages = advantages * scale
    mask = response_mask.to(advantages.dtype)
    per_sample = (advantages.abs() * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
    classes = [groups[uid][0] if uid in groups else None for uid in uids]
    _state["figures"] = route_figures(per_sample.detach().cpu().double().numpy(), classes)
    return advantages, advantages


def _ask_referees(uids: list) -> dict:
    """The referees' ``advantage_groups`` for ``uids``, each shard asked once; {} for a shard that cannot answer."""
    try:
        import ray

        from arena_verl.actors.referee_actor import shard_name

        if not ray.is_initialized():
            return {}
        settings = _state["settings"] or arena_settings(group_size=1)
        by_shard: dict[str, list] = {}
        for uid in uids:
            by_shard.setdefault(shard_name(settings, uid), []).append(uid)
        answers = {}
        for name, shard_uids in by_shard.items():
            actor = ray.get_actor(name)
            answers.update(ray.get(actor.advantage_groups.remote(shard_uids), timeout=_LOOKUP_TIMEOUT_S))
        return answers
    except Exception as exc:  # noqa: BLE001  (a referee lost: GRPO's advantages, never a failed step)
        if not _state["warned"]:
            _state["warned"] = True
            logger.warning("arena_grpo: the referees could not be asked (%r); GRPO's advantages used", exc)
        return {}


def install_advantage_estimator() -> None:
    """Register ``arena_grpo`` with verl (idempotent: verl refuses a second, different function under one name)."""
    from verl.trainer.ppo import core_algos

    if core_algos.ADV_ESTIMATOR_REGISTRY.get(ARENA_ESTIMATOR) is not compute_arena_grpo_advantage:
        core_algos.register_adv_est(ARENA_ESTIMATOR)(compute_arena_grpo_advantage)
