"""The group referee (pure asyncio) and the pure units it applies, one job each:

- :mod:`.groups`: what a sample submits and gets back, and the bookkeeping of open and answered groups;
- :mod:`.speculation`: whether a group still arriving is judged already (the live tournament);
- :mod:`.admission`: the judge pool's admission and load shedding, over plain numbers;
- :mod:`.answers`: the verdicts of each route and of every fallback;
- :mod:`.metrics`: the counters, their accounting per step, and the figures derived from them;
- :mod:`.referee`: the asyncio orchestration.

What the referee reads of the settings is :class:`~arena_verl.core.options.RefereeOptions` (built at the edge).
Every name imported from ``arena_verl.core.referee`` before the split is still importable from here. The names load
on first use (PEP 562, as in :mod:`arena_verl.judge`), so that importing a pure unit (the tracker reads
:mod:`.metrics`) does not import the asyncio referee.
"""

import importlib

_NAMES = "arena_verl.core.names"
_GROUPS, _METRICS = "arena_verl.core.referee.groups", "arena_verl.core.referee.metrics"
_EXPORTS = {
    "Referee": "arena_verl.core.referee.referee",
    "Submission": _GROUPS,
    "Verdict": _GROUPS,
    "group_key": _GROUPS,
    "stable_seed": _GROUPS,
    "COUNTERS": _METRICS,
    "derive_metrics": _METRICS,
    "grpo_advantages": _METRICS,
    "position_figures": _METRICS,
    "NEUTRAL_SCORE": "arena_verl.core.referee.answers",
    "SHED_SPECULATION_AT": "arena_verl.core.referee.admission",
    "SHED_BUDGET_AT": "arena_verl.core.referee.admission",
    "FALLBACK_REASONS": _NAMES,
    "FALLBACK_DEADLINE": _NAMES,
    "FALLBACK_JUDGE_ERROR": _NAMES,
    "FALLBACK_LATE": _NAMES,
    "FALLBACK_OVERFLOW": _NAMES,
    "FALLBACK_THIN": _NAMES,
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
