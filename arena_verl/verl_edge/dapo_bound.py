"""A bound on DAPO's dynamic sampling: ``algorithm.filter_groups.max_num_gen_batches`` for verl 0.9.1's V1 trainer.

With ``algorithm.filter_groups`` on, the V1 replay buffer evicts every group whose ``acc`` is uniform and asks the
trainer for more prompts (its ``refill_fn``) until a batch of diverse groups is together. verl 0.9.1 ignores
``max_num_gen_batches`` there (``trainer_base._resolve_filter_groups_metric`` only logs that it is ignored; the
legacy ``ray_trainer.py`` of 0.9.1 has no group filtering at all), so data that is too easy or too hard for the
policy keeps one step refilling forever.

The bound sits where every refill of the job happens: the trainer process, around the replay buffer's
``refill_fn`` (installed by the plugin when verl's V1 trainer module is imported; only for jobs whose reward manager
is ``arena`` and that enable ``filter_groups``). Per training step it counts the prompts generated for the step (its
first batch of ``train_batch_size`` plus every refill), i.e. the generation batches the step has consumed. Every
further batch's worth without the step completing logs a warning with the figures; the groups scored and kept so
far come from the referees' per-step counters (summed over shards: one count over every reward worker). When
``max_num_gen_batches > 0`` and a refill would take the step past it, the refill raises
:class:`GenerationLimitExceeded` instead: the exception leaves ``ReplayBuffer.sample``, the trainer's ``fit`` and
``TaskRunnerV1.run``, so ``main_ppo``'s ``ray.get`` raises it in the driver (its message in the driver's log) and the
run exits with an error. The reward manager cannot stop the run itself: a sample whose ``run_single`` raises makes
its group a failed group, which the sync replay buffer accepts into the batch (the step trains on what is left), and
which the async one (or ``sync_refill_failed_groups``) refills, again forever.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from arena_verl.core.modes import needs_judge
from arena_verl.verl_edge.import_hooks import after_import
from arena_verl.verl_edge.tracking import _uses_arena

logger = logging.getLogger(__name__)

__all__ = [
    "GenerationBound",
    "GenerationLimitExceeded",
    "bound_from_config",
    "filter_groups_enabled",
    "guard_replay_buffer",
    "install_dapo_bound",
    "referee_figures",
]

_TRAINER_MODULE = "verl.trainer.ppo.v1.trainer_base"
_FIGURES_TIMEOUT_S = 5.0


class GenerationLimitExceeded(RuntimeError):
    """A training step needed more generation batches than ``algorithm.filter_groups.max_num_gen_batches``."""


# The referees' count of one step's groups: {"scored": groups answered, "kept": of them, not uniform}, or None.
Figures = Callable[[int], "dict[str, int] | None"]


class GenerationBound:
    """Counts, per training step, the prompts generated for it; warns at every further batch's worth and raises
    :class:`GenerationLimitExceeded` before a refill that would pass ``max_num_gen_batches`` (<= 0: no limit).
    Called by one thread: the trainer's, where the replay buffer refills."""

    def __init__(
        self,
        train_batch_size: int,
        group_size: int,
        max_num_gen_batches: int = 0,
        label: str = "DAPO",
        figures: Figures | None = None,
    ):
        if train_batch_size < 1 or group_size < 1:
            raise ValueError(f"train_batch_size and rollout.n must be >= 1, got {train_batch_size}, {group_size}")
        self.train_batch_size, self.group_size = int(train_batch_size), int(group_size)
        self.max_num_gen_batches = int(max_num_gen_batches or 0)
        self.label, self.figures = label, figures
        self._step: int | None = None
        self._refilled = 0  # prompts refilled for the current step
        self._refills = 0  # refill calls for the current step
        self._warned_batches = 1  # the step's first batch is no warning

    def before_refill(self, step: int, num_prompts: int) -> str | None:
        """The replay buffer is about to generate ``num_prompts`` more prompts for ``step``. Raises when that would
        pass the limit (nothing is generated then); returns the warning it logged, if any."""
        if step != self._step:  # a new step begins with its own batch of train_batch_size prompts
            self._step, self._refilled, self._refills, self._warned_batches = step, 0, 0, 1
        generated = self.train_batch_size + self._refilled
        limit = self.max_num_gen_batches * self.train_batch_size
        if self.max_num_gen_batches > 0 and generated + num_prompts > limit:
            message = (
                f"{self.label}: run stopped at step {step}, which {self._figures_text(step, generated)}; "
                f"refilling {num_prompts} more prompts would pass algorithm.filter_groups.max_num_gen_batches="
                f"{self.max_num_gen_batches}: the data may be too easy or too hard for the policy. Use data that "
                "suits the policy, or raise max_num_gen_batches (0 = no limit)."
            )
            logger.error(message)
            raise GenerationLimitExceeded(message)
        self._refilled += num_prompts
        self._refills += 1
        generated += num_prompts
        batches = generated // self.train_batch_size
        if batches <= self._warned_batches:
            return None
        self._warned_batches = batches
        no_limit = ": no limit" if self.max_num_gen_batches <= 0 else ""
        message = (
            f"{self.label}: step {step} {self._figures_text(step, generated)}: the data may be too easy or too "
            f"hard for the policy (algorithm.filter_groups.max_num_gen_batches={self.max_num_gen_batches}{no_limit})"
        )
        logger.warning(message)
        return message

    def _figures_text(self, step: int, generated: int) -> str:
        batch = self.train_batch_size
        text = (
            f"has generated {round(generated / batch, 2):g} batches ({generated} prompts, "
            f"{generated * self.group_size} rollouts: its first batch and {self._refills} "
            f"refill{'' if self._refills == 1 else 's'} of "
            f"{self._refilled} prompts in all)"
        )
        figures = None
        if self.figures is not None:
            try:
                figures = self.figures(step)
            except Exception as exc:  # noqa: BLE001  (the figures are for the message only)
                logger.debug("DAPO bound: no referee figures for step %s: %r", step, exc)
        if figures is None:
            return f"{text}, groups kept so far unknown (no referee counts)"
        return f"{text}, {figures['kept']} of {batch} groups kept so far ({figures['scored']} groups scored)"


def referee_figures(settings, timeout_s: float = _FIGURES_TIMEOUT_S) -> Figures:
    """The step's groups as the referees counted them (every shard; mode rlvr counts without judging): scored, and
    kept (not uniform by the verifier's reward, which is DAPO's ``acc`` for 0/1 verifiers). None when no referee
    answers."""

    def figures(step: int) -> dict[str, int] | None:
        import ray

        if not ray.is_initialized():  # no job to ask (and never start one for a log message)
            return None
        scored = uniform = 0
        answered = False
        for shard in range(settings.num_referees):
            try:
                actor = ray.get_actor(f"{settings.referee_name}_{shard}")
                counts = ray.get(actor.metrics.remote(step), timeout=timeout_s)
            except Exception as exc:  # noqa: BLE001  (a shard not created yet, or unreachable)
                logger.debug("DAPO bound: referee shard %d unavailable: %r", shard, exc)
                continue
            answered = True
            scored += int(counts.get("arena/groups", 0))
            uniform += int(counts.get("arena/groups_uniform", 0))
        return {"scored": scored, "kept": scored - uniform} if answered else None

    return figures


def _get(config: Any, key: str, default: Any = None) -> Any:
    from arena_verl.settings import config_value

    value = config_value(config, key)
    return default if value is None else value


def filter_groups_enabled(config: Any) -> bool:
    return bool(_get(config, "algorithm.filter_groups.enable", default=False))


def bound_from_config(config: Any) -> GenerationBound | None:
    """The bound of an arena job with ``algorithm.filter_groups`` on; None for any other job."""
    if not (_uses_arena(config) and filter_groups_enabled(config)):
        return None
    from arena_verl.settings import settings_from_config

    max_batches = int(_get(config, "algorithm.filter_groups.max_num_gen_batches", default=0) or 0)
    train_batch_size = int(_get(config, "data.train_batch_size"))
    group_size = int(_get(config, "actor_rollout_ref.rollout.n"))
    try:
        settings = settings_from_config(config)
    except Exception as exc:  # noqa: BLE001  (bad settings are reported by the reward manager itself)
        logger.debug("DAPO bound without referee figures: %r", exc)
        settings = None
    mode = settings.referee.mode if settings is not None else "arena"
    label = f"{mode} + DAPO" if needs_judge(mode) else f"{mode}_dapo"  # rlvr_dapo: the baseline's config name
    figures = referee_figures(settings) if settings is not None else None
    return GenerationBound(train_batch_size, group_size, max_batches, label=label, figures=figures)


def guard_replay_buffer(buffer, bound: GenerationBound, step_of: Callable[[], int]):
    """Route ``buffer``'s refills through ``bound`` (``step_of()``: the trainer's current step)."""
    refill = getattr(buffer, "refill_fn", None)
    if refill is None or getattr(refill, "_arena_dapo_bound", False):
        return buffer

    def guarded_refill(num_prompts):
        bound.before_refill(int(step_of()), int(num_prompts))
        return refill(num_prompts)

    guarded_refill._arena_dapo_bound = True
    buffer.refill_fn = guarded_refill
    return buffer


def _patch_trainer(module) -> None:
    trainer_cls = getattr(module, "PPOTrainer", None)
    build = getattr(trainer_cls, "_build_replay_buffer", None)
    if build is None:
        logger.warning("arena: verl's V1 trainer has changed; algorithm.filter_groups.max_num_gen_batches not bound")
        return
    if getattr(build, "_arena_dapo_bound", False):
        return

    @functools.wraps(build)
    def _build_replay_buffer(self):
        buffer = build(self)
        try:
            bound = bound_from_config(self.config)
        except Exception:  # noqa: BLE001  (never fail the trainer's construction over the bound)
            logger.warning("arena: DAPO bound not installed", exc_info=True)
            return buffer
        if bound is not None:
            guard_replay_buffer(buffer, bound, lambda: getattr(self, "global_steps", 0))
            limit = bound.max_num_gen_batches
            logger.warning(
                "arena: algorithm.filter_groups.max_num_gen_batches=%s %s (verl's V1 replay buffer ignores it; "
                "arena-verl counts the generation batches of each step)",
                limit,
                "is enforced" if limit > 0 else "is 0: no limit, a warning per further batch",
            )
        return buffer

    _build_replay_buffer._arena_dapo_bound = True
    trainer_cls._build_replay_buffer = _build_replay_buffer


_installed = False


def install_dapo_bound() -> None:
    """Bound DAPO's refills in the trainer process, once verl's V1 trainer is imported there (once per process)."""
    global _installed
    if not _installed:
        _installed = True
        after_import(_TRAINER_MODULE, _patch_trainer)
