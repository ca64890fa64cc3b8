"""How a group's tournament is run, read once from the arena settings: the one mapping from ``reward.arena.*`` to a
:class:`~arena_verl.core.tournament.runner.Tournament`, used by the referee (training) and by ``arena-verl score``
(offline), so that an offline replay schedules and fits as training does."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["TournamentOptions"]


@dataclass(frozen=True)
class TournamentOptions:
    """The tournament keys of ``reward.arena`` (see the settings for each one's meaning)."""

    strategy: str = "live"
    budget: int | None = None
    l2: float = 0.1
    order_effect: bool = False
    two_sided: bool = False
    mirror_augment: bool = False
    on_failure: str = "tie"  # reward.arena.on_judge_failure
    prefix_aware: bool = False
    wait_for_verdicts: bool = False  # training's default: eager
    final_calls: int = 3
    pace: float = 3.0

    @classmethod
    def from_settings(cls, settings: Any, **changes: Any) -> TournamentOptions:
        """From an :class:`~arena_verl.settings.ArenaSettings` (read by attribute: the core does not import the
        settings), with ``changes`` applied on top."""
        values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(cls) if f.name != "on_failure"}
        values["on_failure"] = settings.on_judge_failure
        return dataclasses.replace(cls(**values), **changes)

    def tournament_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``Tournament(num_items, judge, **kwargs, seed=..., idle_gate=...)``."""
        return dataclasses.asdict(self)
