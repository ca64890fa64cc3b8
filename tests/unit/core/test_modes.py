"""The mode table (arena_verl/core/modes.py): one declaration per mode, read by routing, speculation and settings."""

import pytest

from arena_verl.core.modes import MODE_TABLE, Mode, default_strategy, mode_of, needs_judge
from arena_verl.core.names import MODES, ROUTE_POINTWISE, ROUTE_TOURNAMENT, ROUTE_VERIFIER
from arena_verl.core.referee.speculation import SPECULATIVE_MODES
from arena_verl.core.routing import route_of
from arena_verl.settings import arena_settings

# (mode, diverse group's route, non-diverse group's route): the rule the docs state
ROUTES = [
    ("rlvr", ROUTE_VERIFIER, ROUTE_VERIFIER),
    ("pointwise", ROUTE_POINTWISE, ROUTE_POINTWISE),
    ("tournament_all", ROUTE_TOURNAMENT, ROUTE_TOURNAMENT),
    ("adaptive_pointwise", ROUTE_VERIFIER, ROUTE_POINTWISE),
    ("arena", ROUTE_VERIFIER, ROUTE_TOURNAMENT),
]


def test_the_table_declares_every_mode_once():
    assert tuple(MODE_TABLE) == MODES
    assert all(name == mode.name for name, mode in MODE_TABLE.items())


@pytest.mark.parametrize(("mode", "diverse", "non_diverse"), ROUTES)
def test_routes(mode, diverse, non_diverse):
    assert route_of(mode, uniform=False) == diverse and route_of(mode, uniform=True) == non_diverse


def test_what_the_settings_and_speculation_read():
    assert [m for m in MODES if not needs_judge(m)] == ["rlvr"]
    assert SPECULATIVE_MODES == ("tournament_all", "arena")
    assert [m for m in MODES if mode_of(m).plays_tournaments] == ["tournament_all", "arena"]
    assert {m: default_strategy(m) for m in MODES if default_strategy(m) != "live"} == {"tournament_all": "round_robin"}
    assert (
        arena_settings(mode="tournament_all").tournament.strategy == "round_robin"
        and not arena_settings(mode="rlvr").uses_judge
    )


def test_unknown_modes():
    with pytest.raises(ValueError, match="unknown mode 'nope'"):
        route_of("nope", uniform=True)
    assert needs_judge("nope") and default_strategy("nope") == "live"  # the settings refuse it by name


def test_a_declaration_that_contradicts_itself_is_refused():
    with pytest.raises(ValueError, match="only a mode that plays tournaments speculates"):
        Mode("x", ROUTE_VERIFIER, ROUTE_POINTWISE, "anchored", speculates=True, default_strategy="live")
    with pytest.raises(ValueError, match="verifier rewards exactly when"):
        Mode("x", ROUTE_VERIFIER, ROUTE_VERIFIER, "judge", speculates=False, default_strategy="live")
