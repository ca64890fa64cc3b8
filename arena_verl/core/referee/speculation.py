"""The speculation policy: while a group's samples arrive, whether the referee judges them already (the live
tournament), so that a non-diverse group's tournament is mostly done when its last sample comes."""

from __future__ import annotations

import enum

from arena_verl.core.modes import MODE_TABLE, mode_of

__all__ = ["Speculation", "speculation_step", "SPECULATIVE_MODES"]

# The modes that judge a group while it arrives (the mode table's ``speculates``: those that may route it to a
# tournament).
SPECULATIVE_MODES = tuple(name for name, mode in MODE_TABLE.items() if mode.speculates)


class Speculation(enum.Enum):
    SKIP = "skip"  # nothing to do for this arrival
    STOP = "stop"  # the group turned out diverse: cancel its tournament (its calls so far are wasted)
    JUDGE = "judge"  # start the group's tournament if none runs, and add the traces that arrived


def speculation_step(mode: str, speculative: bool, uniform_so_far: bool, judging: bool, members: int) -> Speculation:
    """What to do when a sample joins a group still arriving.

    Parameters
    ----------
    mode : str
        ``reward.arena.mode`` (:mod:`arena_verl.core.modes`): a mode that does not speculate skips; in one whose
        route does not depend on diversity (``tournament_all``) every group plays; in one whose does (``arena``)
        only a group that is non-diverse so far.
    speculative : bool
        ``reward.arena.speculative``.
    uniform_so_far : bool
        Whether the verifier rewards of the samples so far are equal within ``diversity_tol`` (read only in a mode
        whose route depends on diversity).
    judging : bool
        Whether the group has a tournament running.
    members : int
        Samples of the group so far, this one included.
    """
    declared = mode_of(mode)
    if not speculative or not declared.speculates:
        return Speculation.SKIP
    if declared.routes_by_diversity and not uniform_so_far:
        return Speculation.STOP
    if not judging and members > 1 and declared.routes_by_diversity:
        return Speculation.SKIP  # speculation was cancelled before: a diverse group never becomes uniform again
    return Speculation.JUDGE
