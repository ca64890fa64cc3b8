"""The core's own types for what it reads of ``reward.arena.*``, built once at the edge (:mod:`arena_verl.settings`:
:func:`~arena_verl.settings.tournament_options`, :func:`~arena_verl.settings.referee_options`), so that the core
never reads the settings' shape. :class:`TournamentOptions` steer a
:class:`~arena_verl.core.tournament.runner.Tournament`, in the referee (training) and in ``arena-verl score``
(offline), so that an offline replay schedules and fits as training does; its defaults are the arena's (the settings
take theirs from here). :class:`RefereeOptions` are the rest of what the referee needs, with no defaults of their own
(the settings' are the only ones). A leaf module (dataclasses only): the settings import it without the tournament's
numerics."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TournamentOptions", "RefereeOptions", "DEFAULT_L2", "STRATEGY_KNOBS", "knob_defaults"]

# The tournament's numeric default, written once: the fit, the schedulers, the runner and the settings read it.
DEFAULT_L2 = 0.1  # Bradley-Terry L2 prior (reward.arena.l2)

# Each strategy's own knobs (its scheduler's keyword arguments beyond the ones every scheduler gets) with their
# defaults, one flat ``reward.arena.<knob>`` key each. Written once, here, where the settings can read them without
# the tournament's numerics: the scheduler declares its knobs from this table (``Scheduler.knobs``) and checks their
# values; the settings take the defaults of their fields from it; everything between carries them as one mapping
# (``TournamentOptions.strategy_knobs``) without naming any.
STRATEGY_KNOBS: dict[str, dict[str, Any]] = {
    "paced": {
        "final_calls": 3,  # opponents of the last trace, judged in one round
        "pace": 3.0,  # how late the budget is spent while the group arrives (the quota's exponent; larger: later)
    },
}


def knob_defaults() -> dict[str, Any]:
    """Every strategy's knobs with their defaults, as one mapping (a knob name belongs to one strategy)."""
    return {name: value for knobs in STRATEGY_KNOBS.values() for name, value in knobs.items()}


@dataclass(frozen=True)
class TournamentOptions:
    """The tournament keys of ``reward.arena`` (see the settings for each one's meaning)."""

    strategy: str = "live"
    budget: int | None = None
    l2: float = DEFAULT_L2
    order_effect: bool = False
    two_sided: bool = False
    mirror_augment: bool = False
    on_failure: str = "tie"  # reward.arena.on_judge_failure
    prefix_aware: bool = False
    wait_for_verdicts: bool = False  # training's default: eager
    # every strategy's knobs by name (STRATEGY_KNOBS); the scheduler takes those it declares
    strategy_knobs: dict[str, Any] = field(default_factory=knob_defaults)

    def tournament_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``Tournament(num_items, judge, **kwargs, seed=..., idle_gate=...)``."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RefereeOptions:
    """The referee's keys of ``reward.arena`` (see the settings for each one's meaning and default).

    No field has a default: the settings' are the only ones, and
    :func:`~arena_verl.settings.referee_options` passes every value (a default here could differ from them)."""

    mode: str
    group_size: int
    diversity_tol: float
    speculative: bool
    group_deadline_s: float
    tournament_timeout_s: float
    completion_grace: float | None
    reward_scale: float
    min_verdict_share: float  # a routed group with fewer of its planned verdicts gets its verifier rewards
    certainty_weighting: bool  # the arena's estimator scales a routed group's advantages by its certainty
    advantage_norm_by_std: bool  # how the step's advantage figures are computed (verl's norm_adv_by_std)
    call_budget_s: float  # the longest one judge call may take (judge.call_budget_s)
    judge_slots: int  # this referee's share of the judge's concurrency (judge.max_concurrency / num_referees)
    tournament: TournamentOptions
