"""Presentation order: who is shown first, and the paper's mirror augmentation.

LLM judges favour the answer shown first. Drawing each pair's order at random turns that bias into noise instead of a
systematic advantage; mirroring a verdict enforces antisymmetry but adds no information and removes no bias. To
measure and remove the bias, judge both orders (``two_sided``) or fit the order effect (``order_effect``). Both take
soft outcomes (numbers in [0, 1]) as they take hard ones: two-sided judging fits the two outcomes of a pair as two
fractional wins, and the order effect is fitted by :func:`~arena_verl.core.tournament.bradley_terry.
fit_bradley_terry` on the same fractional likelihood.
"""

from __future__ import annotations

import collections
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
) -> list[tuple[int, int]]:
    """Presentation orders for unordered pairs judged together.

    Default: a seeded coin flip per pair. ``balance`` (a dict of times shown first minus times shown second per
    trace, updated in place, kept across calls by the caller): each pair shows first the trace that has been shown
    first less often (a coin flip when even), so that every trace meets the judge's position bias about as often
    first as second and the bias cancels within its strength instead of adding noise to it (with a handful of games
    per trace, coin flips leave some traces shown first in most of them). ``two_sided``: both orders of every pair.
    ``prefix_aware``: one coin flip for the whole batch decides whether the batch's most frequent trace (a live
    arrival, which plays all of its batch) is shown first in all of its pairs, and calls that show the same first
    trace are put next to each other, so that an engine's prefix cache serves the shared head (instructions,
    problem, first trace) once. The bias of each call is still randomised, but the calls of a batch share it: fit
    ``order_effect`` or judge ``two_sided`` when that matters.
    """
    pairs = list(pairs)
    if two_sided:
        shown = [order for a, b in pairs for order in ((a, b), (b, a))]
    elif not prefix_aware and balance is not None:
        shown = []
        for a, b in pairs:
            lead_a, lead_b = balance.get(a, 0), balance.get(b, 0)
            first, second = (a, b) if lead_a < lead_b or (lead_a == lead_b and rng.random() < 0.5) else (b, a)
            balance[first] = balance.get(first, 0) + 1
            balance[second] = balance.get(second, 0) - 1
            shown.append((first, second))
    elif not prefix_aware:
        shown = [(a, b) if rng.random() < 0.5 else (b, a) for a, b in pairs]
    else:
        counts = collections.Counter(item for pair in pairs for item in pair)
        hub = max(counts, key=lambda item: (counts[item], item)) if counts else None
        hub_first = rng.random() < 0.5
        shown = []
        for a, b in pairs:
            if hub in (a, b):
                other = b if a == hub else a
                shown.append((hub, other) if hub_first else (other, hub))
            else:
                shown.append((a, b) if rng.random() < 0.5 else (b, a))
    if prefix_aware:
        shown.sort(key=lambda pair: pair[0])  # stable: same first trace, consecutive calls
    return shown
