"""Presentation order: who is shown first, and the paper's mirror augmentation.

LLM judges favour the answer shown first. Drawing each pair's order at random turns that bias into noise instead of a
systematic advantage; mirroring a verdict enforces antisymmetry but adds no information and removes no bias. To
measure and remove the bias, judge both orders (``two_sided``) or fit the order effect (``order_effect``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["mirror", "present"]


def mirror(comparisons: Iterable[Sequence[float]]) -> list[tuple[int, int, float]]:
    """The paper's mirror augmentation: each ``(i, j, o)`` is followed by ``(j, i, 1 - o)``.

    Note that fitting mirrored data counts every verdict twice, which is the same as halving ``l2``.
    """
    out: list[tuple[int, int, float]] = []
    for first, second, outcome in comparisons:
        out.append((int(first), int(second), float(outcome)))
        out.append((int(second), int(first), 1.0 - float(outcome)))
    return out


def present(
    pairs: Iterable[tuple[int, int]], rng: np.random.Generator, two_sided: bool = False
) -> list[tuple[int, int]]:
    """Presentation orders for unordered pairs: a seeded coin flip each, or both orders when ``two_sided``."""
    shown: list[tuple[int, int]] = []
    for a, b in pairs:
        if two_sided:
            shown.extend([(a, b), (b, a)])
        else:
            shown.append((a, b) if rng.random() < 0.5 else (b, a))
    return shown
