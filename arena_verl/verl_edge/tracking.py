"""Arena metrics in the user's tracker (wandb, tensorboard, console, ...).

verl 0.9.1 does not log a reward manager's extra info for training steps, and offers no hook to add metrics. The
plugin therefore wraps ``verl.utils.tracking.Tracking`` (the driver's logger): when the job's reward manager is
``arena`` and ``reward.arena.log_metrics`` is true, every training-step ``log`` call also carries the referees'
counters for that step (the change since the previous step), as ``arena/*``. Reading them never fails a step: an
unreachable referee only means no arena metrics for that step.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from arena_verl.core.names import FALLBACK_REASONS
from arena_verl.core.referee.members import is_member_counter
from arena_verl.core.referee.metrics import COUNTERS, derive_metrics
from arena_verl.settings import ArenaSettings, settings_from_config
from arena_verl.verl_edge.advantage import pop_step_figures, use_settings

logger = logging.getLogger(__name__)

# Counters that only ever grow while a referee lives: one of them going down means the referee restarted (for a
# referee that does not say when it started). Signed sums (order_effect_sum: a judge that favours the second trace
# fits a negative bonus) go down on their own.
RESTART_COUNTERS = ("samples", "groups", "judge_calls")
# Fallback reasons in the per-step warning, in this order.
_FALLBACKS = tuple(name for code, name in FALLBACK_REASONS.items() if code)

__all__ = [
    "install_tracking_hook",
    "ArenaMetricsReader",
    "degraded_step_warning",
    "generation_metrics",
    "DISCARDED_SAMPLE_KEYS",
]

# Prompt groups verl 0.9.1's V1 replay buffer generated for a step but did not train on
# (trainer/ppo/v1/replay_buffer.py; despite the "_samples" names, each counts prompt uids, i.e. groups of rollout.n):
# groups DAPO filtered out, surplus groups past the batch, stale groups, failed groups.
DISCARDED_SAMPLE_KEYS = (
    "training/filter_groups/evicted_samples",
    "training/filter_groups/discarded_surplus_samples",
    "training/off_policy/evicted_samples",
    "training/rollout_failure/evicted_samples",
)


def generation_metrics(data: dict, prompts_per_batch: int, group_size: int) -> dict[str, float]:
    """``arena/generations``: the rollouts a training step generated (the batch's ``train_batch_size * rollout.n``
    plus the rollouts of the groups the replay buffer discarded for that step), and ``arena/generations_discarded``.
    This is what the paper compares between RLVR + DAPO (which regenerates non-diverse groups) and the arena (which
    keeps them)."""
    discarded_groups = sum(float(data.get(key, 0.0) or 0.0) for key in DISCARDED_SAMPLE_KEYS)
    discarded = discarded_groups * group_size
    return {"arena/generations": prompts_per_batch * group_size + discarded, "arena/generations_discarded": discarded}


def _batch_shape(config: Any) -> tuple[int, int]:
    """(prompts per step, rollouts per prompt), or (0, 0) when the config lacks them (no generation count)."""
    try:  # verl hands Tracking a plain dict (or a DictConfig)
        return int(config["data"]["train_batch_size"]), int(config["actor_rollout_ref"]["rollout"]["n"])
    except Exception:  # noqa: BLE001
        return 0, 0


class ArenaMetricsReader:
    """Reads every referee shard's counters and returns what changed since the last read, summed over shards, plus
    ``arena/tail_after_last_sample_s``: the time from the arrival (at any referee) of the step's last sample to the
    answer of the step's last routed group (0 when nothing was routed), i.e. how long the reward stage kept the step
    waiting after rollout had produced its last sample. A "step" is what arrived between two training-step logs."""

    def __init__(
        self, settings: ArenaSettings, timeout_s: float = 10.0, restart_patience_s: float = 60.0, read_shard=None
    ):
        self.settings = settings
        # shard -> (counters, clock); by default the referee actors are asked (an in-process referee: its own)
        self._read = read_shard
        self.timeout_s = timeout_s
        # A referee that Ray is restarting answers ActorUnavailableError for a few seconds: its counters are waited
        # for (the step's samples are waiting for it too), so that they are not missing from this step's log.
        self.restart_patience_s = restart_patience_s
        self._previous: dict[int, dict[str, float]] = {}
        self._started_at: dict[int, float] = {}  # each shard's referee incarnation (its start time)

    def step_metrics(self) -> dict[str, float]:
        delta = {key: 0.0 for key in COUNTERS}
        last_arrival, last_routed_answer = 0.0, 0.0
        restarts = 0
        for shard in range(self.settings.num_referees):
            try:
                shard_metrics, clock = self._read(shard) if self._read else self._read_shard(shard)
            except Exception as exc:  # noqa: BLE001  (no referee yet, or unreachable: no metrics, no failure)
                logger.debug("arena metrics: referee shard %d unavailable: %r", shard, exc)
                continue
            now = {key: float(shard_metrics.get(f"arena/{key}", 0.0)) for key in COUNTERS}
            # a judge ensemble's per-member counters, where the referee has any
            members = {key.removeprefix("arena/"): v for key, v in shard_metrics.items() if key.startswith("arena/")}
            now.update({key: float(v) for key, v in members.items() if is_member_counter(key)})
            before = self._previous.get(shard, {})
            started_at = clock.get("started_at")
            known = self._started_at.get(shard)
            if (started_at is not None and known is not None and started_at != known) or any(
                now[key] < before.get(key, 0.0) for key in RESTART_COUNTERS
            ):
                # This referee restarted: its counters began again (what the lost one counted since the last read is
                # lost with it; the samples themselves kept their rewards).
                before = {}
                restarts += 1
            if started_at is not None:
                self._started_at[shard] = started_at
            for key in now:
                delta[key] = delta.get(key, 0.0) + now[key] - before.get(key, 0.0)
            self._previous[shard] = now
            if now["samples"] > before.get("samples", 0.0):
                last_arrival = max(last_arrival, clock["last_arrival"])
            if now["groups_routed"] > before.get("groups_routed", 0.0):
                last_routed_answer = max(last_routed_answer, clock["last_routed_answer"])
        metrics = derive_metrics(delta)
        routed = last_routed_answer > 0 and last_arrival > 0
        metrics["arena/tail_after_last_sample_s"] = max(0.0, last_routed_answer - last_arrival) if routed else 0.0
        metrics["arena/referee_restarts"] = float(restarts)
        return metrics

    def _read_shard(self, shard: int):
        import ray

        give_up_at = time.monotonic() + self.restart_patience_s
        while True:
            actor = ray.get_actor(f"{self.settings.referee_name}_{shard}")
            try:
                return ray.get([actor.metrics.remote(), actor.clock.remote()], timeout=self.timeout_s)
            except ray.exceptions.ActorUnavailableError:
                if time.monotonic() > give_up_at:
                    raise
                time.sleep(0.5)


def degraded_step_warning(step: Any, metrics: dict[str, float]) -> str | None:
    """One line for a step in which the arena could not do its work (samples given their verifier reward because
    the judge or a referee failed, judge calls without a verdict, a referee restart), or None for a healthy step.
    Logged once per step, beside the counters, so that a judge that is gone is seen in the log, not only in a plot."""
    samples = metrics.get("arena/samples", 0.0)
    fallbacks = {name: metrics.get(f"arena/fallback_{name}", 0.0) for name in _FALLBACKS}
    fell_back = sum(fallbacks.values())
    calls, failed = metrics.get("arena/judge_calls", 0.0), metrics.get("arena/judge_failures", 0.0)
    restarts = metrics.get("arena/referee_restarts", 0.0)
    opened, closed = metrics.get("arena/breaker_openings", 0.0), metrics.get("arena/breaker_closings", 0.0)
    if not (fell_back or failed or restarts or opened or closed):
        return None
    parts = []
    if fell_back:
        share = f" ({fell_back / samples:.0%})" if samples else ""
        reasons = ", ".join(_reason(name, count, metrics) for name, count in fallbacks.items() if count)
        parts.append(f"{fell_back:g} of {samples:g} samples{share} fell back to their verifier reward: {reasons}")
    if failed:
        parts.append(f"{failed:g} of {calls:g} judge calls gave no verdict")
    if restarts:
        parts.append(f"{restarts:g} referee restart(s): counters of the lost referee since the last step are lost")
    if opened:
        parts.append(
            f"the judge breaker opened {opened:g} time(s): the judge stopped answering, no call is sent and groups "
            "fall back at once (judge_down) until a probe answers"
        )
    if closed:
        parts.append(f"the judge breaker closed {closed:g} time(s): the judge answered a probe")
    return f"arena step {step}: " + "; ".join(parts)


def _reason(name: str, count: float, metrics: dict[str, float]) -> str:
    """One fallback reason of the warning line; a thin group's says what share of its planned verdicts it got."""
    verdict_share = metrics.get("arena/thin_verdict_share")
    if name == "thin" and verdict_share is not None:
        return f"thin {count:g} (their groups got {verdict_share:.0%} of their planned judge verdicts)"
    return f"{name} {count:g}"


def _uses_arena(config: Any) -> bool:
    try:
        reward_manager = ((config or {}).get("reward") or {}).get("reward_manager") or {}
        return reward_manager.get("name") in ("arena", "ArenaRewardManager")
    except Exception:  # noqa: BLE001
        return False


def reader_from_config(config: Any) -> ArenaMetricsReader | None:
    try:
        if not _uses_arena(config):
            return None
        settings = settings_from_config(config)
    except Exception as exc:  # noqa: BLE001  (bad settings are reported by the reward manager itself)
        logger.debug("arena metrics disabled: %r", exc)
        return None
    use_settings(settings)  # the arena's advantage estimator asks these referees (same process as the tracker)
    return ArenaMetricsReader(settings) if settings.log_metrics else None


def install_tracking_hook() -> None:
    from verl.utils.tracking import Tracking

    if getattr(Tracking, "_arena_hook", False):
        return
    original_init, original_log = Tracking.__init__, Tracking.log

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        config = kwargs.get("config", args[3] if len(args) > 3 else None)
        self._arena_metrics = reader_from_config(config)
        self._arena_batch_shape = _batch_shape(config) if _uses_arena(config) else (0, 0)

    def log(self, data, step, backend=None):
        if "training/global_step" in data:
            reader = getattr(self, "_arena_metrics", None)
            try:
                prompts, group_size = getattr(self, "_arena_batch_shape", (0, 0))
                if prompts and group_size:
                    data = {**data, **generation_metrics(data, prompts, group_size)}
                if reader is not None:
                    arena = reader.step_metrics()
                    data = {**data, **arena, **pop_step_figures()}
                    warning = degraded_step_warning(step, arena)
                    if warning:
                        logger.warning(warning)
            except Exception as exc:  # noqa: BLE001
                logger.warning("arena metrics not logged for step %s: %r", step, exc)
        return original_log(self, data, step, backend)

    Tracking.__init__, Tracking.log = __init__, log
    Tracking._arena_hook = True
