"""What each ``reward.arena.mode`` means, declared once: the route of a diverse and of a non-diverse group, how a
judged group's rewards are made, whether the referee judges a group while it arrives, and the tournament schedule
it uses when ``reward.arena.strategy`` is null. Routing, the referee, speculation, the settings, the placement,
DAPO's bound and the demo read this table; none of them compares mode names. Stdlib only (the settings import it).

============================  ===============  ====================  ===========  ==========  ===============
mode                          diverse group    non-diverse group     rewards      speculates  strategy
============================  ===============  ====================  ===========  ==========  ===============
``rlvr``                      verifier         verifier              verifier     no          live
``pointwise`` (RLAIF)         pointwise        pointwise             judge        no          live
``tournament_all`` (ArenaRL)  tournament       tournament            judge        yes         round_robin
``adaptive_pointwise``        verifier         pointwise             anchored     no          live
``arena``                     verifier         tournament            anchored     yes         live
============================  ===============  ====================  ===========  ==========  ===============

*judge* rewards are the judge's alone (a tournament's win probability against an average trace of the group, a
pointwise score); *anchored* ones are the verifier reward plus ``reward_scale`` times the judge's centred verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena_verl.core.names import MODES, ROUTE_POINTWISE, ROUTE_TOURNAMENT, ROUTE_VERIFIER

__all__ = ["Mode", "MODE_TABLE", "REWARDS", "mode_of", "needs_judge", "default_strategy"]

# How a judged group's rewards are made (see the module docstring); "verifier": the mode never asks a judge.
REWARDS = ("verifier", "judge", "anchored")


@dataclass(frozen=True)
class Mode:
    """One mode's declaration (see the module docstring's table)."""

    name: str
    diverse_route: int  # the route of a group whose verifier rewards differ
    non_diverse_route: int  # the route of a group whose verifier rewards agree (within diversity_tol)
    rewards: str  # one of REWARDS
    speculates: bool  # with reward.arena.speculative, a group is judged while its samples arrive
    default_strategy: str  # the tournament schedule when reward.arena.strategy is null

    def __post_init__(self):
        if self.rewards not in REWARDS:
            raise ValueError(f"mode {self.name}: rewards must be one of {REWARDS}, got {self.rewards!r}")
        if self.speculates and self.non_diverse_route != ROUTE_TOURNAMENT:
            raise ValueError(f"mode {self.name}: only a mode that plays tournaments speculates")
        if (self.rewards == "verifier") != (not self.needs_judge):
            raise ValueError(f"mode {self.name}: verifier rewards exactly when no route asks the judge")

    def route(self, uniform: bool) -> int:
        """The route of a complete group, given whether its verifier rewards agree."""
        return self.non_diverse_route if uniform else self.diverse_route

    @property
    def routes(self) -> tuple[int, int]:
        return self.diverse_route, self.non_diverse_route

    @property
    def needs_judge(self) -> bool:
        """Whether any group of this mode is judged."""
        return any(route != ROUTE_VERIFIER for route in self.routes)

    @property
    def plays_tournaments(self) -> bool:
        """Whether any group of this mode is judged in a tournament (what the tournament keys act on)."""
        return ROUTE_TOURNAMENT in self.routes

    @property
    def routes_by_diversity(self) -> bool:
        """Whether a group's route depends on its diversity (its speculation stops when it turns diverse)."""
        return self.diverse_route != self.non_diverse_route


MODE_TABLE: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("rlvr", ROUTE_VERIFIER, ROUTE_VERIFIER, "verifier", speculates=False, default_strategy="live"),
        Mode("pointwise", ROUTE_POINTWISE, ROUTE_POINTWISE, "judge", speculates=False, default_strategy="live"),
        # The paper's ArenaRL baseline is a full round robin.
        Mode("tournament_all", ROUTE_TOURNAMENT, ROUTE_TOURNAMENT, "judge", True, default_strategy="round_robin"),
        Mode("adaptive_pointwise", ROUTE_VERIFIER, ROUTE_POINTWISE, "anchored", False, default_strategy="live"),
        Mode("arena", ROUTE_VERIFIER, ROUTE_TOURNAMENT, "anchored", speculates=True, default_strategy="live"),
    )
}
if tuple(MODE_TABLE) != MODES:
    raise RuntimeError(f"core/names.py's MODES {MODES} and the mode table {tuple(MODE_TABLE)} must name the same modes")


def mode_of(name: str) -> Mode:
    """The declaration of mode ``name``; ValueError for a mode that does not exist."""
    try:
        return MODE_TABLE[name]
    except KeyError:
        raise ValueError(f"unknown mode {name!r}") from None


def needs_judge(name: str) -> bool:
    """Whether mode ``name`` asks a judge; an unknown mode is taken to (the settings refuse it by name)."""
    mode = MODE_TABLE.get(name)
    return mode is None or mode.needs_judge


def default_strategy(name: str) -> str:
    """The schedule mode ``name`` uses when reward.arena.strategy is null (live for a mode not in the table: the
    settings refuse it by name)."""
    mode = MODE_TABLE.get(name)
    return "live" if mode is None else mode.default_strategy
