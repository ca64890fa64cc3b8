"""The tournament strategies (``reward.arena.strategy``), one entry each: its scheduler (by import path, loaded when a
tournament is built), whether its call count is fixed by the group size, and its own options (a :class:`Part` whose
keys are flat ``reward.arena.<knob>`` keys, read with the rest of the settings and passed whole to its scheduler).

Adding a strategy is its scheduler module and one :func:`register_strategy` call (a user's package does it at import;
:mod:`arena_verl.core.plugin_loader` imports it in every process). Its knobs share ``reward.arena``'s one namespace,
so a knob another strategy declares already is refused at registration (and one that names another key, by the
reader). Stdlib only: the settings read it without the tournament's numerics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena_verl.core.fields import Part, setting

__all__ = [
    "Strategy",
    "PacedOptions",
    "SwissOptions",
    "register_strategy",
    "strategy_of",
    "strategy_names",
    "strategy_option_types",
    "STRATEGY_REGISTRY",
]


@dataclass(frozen=True)
class PacedOptions(Part):
    """The ``paced`` strategy's knobs (:class:`~arena_verl.core.tournament.schedulers.PacedScheduler`)."""

    final_calls: int = setting(3, low=1, help="`paced`: opponents of the last trace, judged in one round after it")
    pace: float = setting(
        3.0,
        low=0.0,
        high=100.0,
        low_open=True,
        help="`paced`: how late the budget is spent while the group arrives (the quota's exponent; larger: later)",
    )


@dataclass(frozen=True)
class SwissOptions(Part):
    """The ``swiss`` strategy's knob (:class:`~arena_verl.core.tournament.formats.SwissScheduler`)."""

    swiss_rounds: int | None = setting(
        None,
        low=1,
        high=64,
        help="`swiss`: rounds to play (each pairs traces of equal running score, no pair twice); null: as many as "
        "the budget allows",
    )


@dataclass(frozen=True)
class Strategy:
    """One strategy: its name, its scheduler (a class, or its path ``"package.module:Class"``), and its facts."""

    name: str
    scheduler: str | Callable[..., Any]
    fixed_count: bool = False  # its call count follows from the group size: a budget is refused
    options: type | None = None  # its knobs (a Part; its scheduler's ``options`` argument), or none


STRATEGY_REGISTRY: dict[str, Strategy] = {}


def register_strategy(entry: Strategy) -> Strategy:
    """Add ``entry``. A name taken already, or a knob another strategy declares, is an error."""
    if entry.name in STRATEGY_REGISTRY:
        raise ValueError(f"strategy {entry.name!r} is registered already")
    if entry.options is not None:
        if not (dataclasses.is_dataclass(entry.options) and issubclass(entry.options, Part)):
            raise TypeError(f"strategy {entry.name!r}: options must be a Part dataclass, got {entry.options!r}")
        mine = {f.name for f in dataclasses.fields(entry.options)}
        for other in STRATEGY_REGISTRY.values():
            shared = mine & {f.name for f in dataclasses.fields(other.options)} if other.options else set()
            if shared:
                raise ValueError(
                    f"strategy {entry.name!r}: knob {sorted(shared)[0]!r} is declared by strategy {other.name!r} "
                    "already (every knob is one reward.arena key: choose another name)"
                )
    STRATEGY_REGISTRY[entry.name] = entry
    return entry


def _plugins() -> None:
    from arena_verl.core.plugin_loader import load_plugins

    load_plugins()


def strategy_of(name: str) -> Strategy:
    """The entry of ``name``; a ``ValueError`` naming the key and the registered names."""
    _plugins()
    try:
        return STRATEGY_REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"reward.arena.strategy must be one of {strategy_names()}, got {name!r}") from None


def strategy_names() -> tuple[str, ...]:
    _plugins()
    return tuple(STRATEGY_REGISTRY)


def strategy_option_types() -> dict[str, type]:
    """Each strategy's options type, for the strategies that have one."""
    _plugins()
    return {name: entry.options for name, entry in STRATEGY_REGISTRY.items() if entry.options is not None}


_SCHEDULERS = "arena_verl.core.tournament.schedulers"
for _entry in (
    Strategy("round_robin", f"{_SCHEDULERS}:RoundRobinScheduler", fixed_count=True),
    Strategy("live", f"{_SCHEDULERS}:LiveScheduler", fixed_count=True),
    Strategy("random", f"{_SCHEDULERS}:RandomScheduler"),
    Strategy("info_gain", f"{_SCHEDULERS}:InfoGainScheduler"),
    Strategy("paced", f"{_SCHEDULERS}:PacedScheduler", options=PacedOptions),
    # The peers' formats (core/tournament/formats.py): ArenaRL's Swiss rounds, Tournament-GRPO's knockout.
    Strategy("swiss", "arena_verl.core.tournament.formats:SwissScheduler", options=SwissOptions),
    Strategy("knockout", "arena_verl.core.tournament.formats:KnockoutScheduler", fixed_count=True),
):
    register_strategy(_entry)
del _entry
