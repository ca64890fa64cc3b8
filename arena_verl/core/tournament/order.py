"""Presentation order: who is shown first, and the paper's mirror augmentation.

LLM judges favour the answer shown first. Drawing each pair's order at random turns that bias into noise instead of a
systematic advantage; mirroring a verdict enforces antisymmetry but adds no information and removes no bias. To
measure and remove the bias, judge both orders (``two_sided``) or fit the order effect (``order_effect``). Both take
soft outcomes (numbers in [0, 1]) as they take hard ones: two-sided judging fits the two outcomes of a pair as two
fractional wins, and the order effect is fitted by :func:`~arena_verl.core.tournament.bradley_terry.
fit_bradley_terry` on the same fractional likelihood.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["mirror", "present"]


def mirror(comparisons: Iterable[Sequence[float]]) -> list[tuple[int, int, float]]:
    """The paper's mirror augmentation: each ``(i, j, o)`` is followed by ``(j, i, 1 - o)``, for any outcome in
    [0, 1] (a soft outcome's complement is the second trace's share).

    Note that fitting mirrored data counts every verdict twice, which is the same as halving ``l2``.
    """
    out: list[tuple[int, int, float]] = []
    for first, second, outcome in comparisons:
        out.append((int(first), int(second), float(outcome)))
        out.append((int(second), int(first), 1.0 - float(outcome)))
    return out


def present(
    pairs: Iterable[tuple[int, int]],
    rng: np.random.Generator,
    two_sided: bool = False,
    prefix_aware: bool = False,
    balance: dict[int, int] | None = None,
    cached: set[int] | None = None,
) -> list[tuple[int, int]]:
    """Presentation orders for unordered pairs judged together.

    Default: a seeded coin flip per pair. ``balance`` (a dict of times shown first minus times shown second per
    trace, updated in place, kept across calls by the caller): each pair shows first the trace that has been shown
    first less often (a coin flip when even), so that every trace meets the judge's position bias about as often
    first as second and the bias cancels within its strength instead of adding noise to it (with a handful of games
    per trace, coin flips leave some traces shown first in most of them). ``two_sided``: both orders of every pair.

    ``prefix_aware`` (with ``balance``; a fresh one when None): the same balance, and where it leaves the order open
    (both traces shown first equally often) the trace whose prompt prefix the engine already holds goes first instead
    of a coin deciding. ``cached`` (updated in place, kept across calls): the traces shown first in an earlier call of
    the group, i.e. whose head (instructions, problem, that trace) the engine that serves every call of the group has
    computed; a coin decides between two cached or two new ones. Calls that show the same first trace are put next to
    each other. Every trace stays within one call of even, so the order effect stays identifiable and the judge's
    first-position bias zero-mean noise, as under ``balance`` alone.
    """
    pairs = list(pairs)
    if prefix_aware and balance is None:
        balance = {}
    if two_sided:
        shown = [order for a, b in pairs for order in ((a, b), (b, a))]
    elif balance is not None:
        shown = []
        for a, b in pairs:
            first, second = _balanced_order(a, b, balance, cached if prefix_aware else None, rng)
            balance[first] = balance.get(first, 0) + 1
            balance[second] = balance.get(second, 0) - 1
            shown.append((first, second))
    else:
        shown = [(a, b) if rng.random() < 0.5 else (b, a) for a, b in pairs]
    if prefix_aware:
        if cached is not None:
            cached.update(first for first, _ in shown)
        shown.sort(key=lambda pair: pair[0])  # stable: same first trace, consecutive calls
    return shown


def _balanced_order(a: int, b: int, balance: dict[int, int], cached: set[int] | None, rng) -> tuple[int, int]:
    """The less often first-shown of ``a`` and ``b`` first; when even, a cached one (``cached``), else a coin."""
    lead_a, lead_b = balance.get(a, 0), balance.get(b, 0)
    if lead_a != lead_b:
        return (a, b) if lead_a < lead_b else (b, a)
    if cached is not None and (a in cached) != (b in cached):
        return (a, b) if a in cached else (b, a)
    return (a, b) if rng.random() < 0.5 else (b, a)
