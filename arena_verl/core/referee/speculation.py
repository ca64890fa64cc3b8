"""The speculation policy: while a group's samples arrive, whether the referee judges them already (the live
tournament), so that a non-diverse group's tournament is mostly done when its last sample comes."""

from __future__ import annotations

import enum

__all__ = ["Speculation", "speculation_step", "SPECULATIVE_MODES"]

SPECULATIVE_MODES = ("arena", "tournament_all")  # the modes that may route a group to a tournament


class Speculation(enum.Enum):
    SKIP = "skip"  # nothing to do for this arrival
    STOP = "stop"  # the group turned out diverse: cancel its tournament (its calls so far are wasted)
    JUDGE = "judge"  # start the group's tournament if none runs, and add the traces that arrived


def speculation_step(mode: str, speculative: bool, uniform_so_far: bool, judging: bool, members: int) -> Speculation:
    """What to do when a sample joins a group still arriving.

    Parameters
    ----------
    mode : str
        ``reward.arena.mode``. In ``tournament_all`` every group plays; in ``arena`` only a non-diverse one.
    speculative : bool
        ``reward.arena.speculative``.
    uniform_so_far : bool
        Whether the verifier rewards of the samples so far are equal within ``diversity_tol`` (read in ``arena``
        only).
    judging : bool
        Whether the group has a tournament running.
    members : int
        Samples of the group so far, this one included.
    """
    if not speculative or mode not in SPECULATIVE_MODES:
        return Speculation.SKIP
    if mode == "arena" and not uniform_so_far:
        return Speculation.STOP
    if not judging and members > 1 and mode == "arena":
        return Speculation.SKIP  # speculation was cancelled before: a diverse group never becomes uniform again
    return Speculation.JUDGE
