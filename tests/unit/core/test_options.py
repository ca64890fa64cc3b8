"""One source of defaults: the settings' (``arena_verl.settings``). The core's option types restate none that differ."""

import dataclasses

import pytest

from arena_verl.core.options import RefereeOptions, TournamentOptions
from arena_verl.settings import ArenaSettings, referee_options, tournament_options


def test_referee_options_have_no_defaults_of_their_own():
    """RefereeOptions needs every value: the only defaults are the settings', passed by referee_options."""
    with pytest.raises(TypeError):
        RefereeOptions()
    defaulted = [
        f.name
        for f in dataclasses.fields(RefereeOptions)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ]
    assert defaulted == []
    # The defaults as settings_from_config resolves them (group_size from rollout.n, the GRPO norm from verl's).
    settings = ArenaSettings(group_size=8, advantage_norm_by_std=True)
    options = referee_options(settings)
    shared = {f.name for f in dataclasses.fields(RefereeOptions)} & {f.name for f in dataclasses.fields(ArenaSettings)}
    assert {name: getattr(options, name) for name in shared} == {name: getattr(settings, name) for name in shared}


def test_tournament_options_defaults_are_the_settings_defaults():
    """TournamentOptions() is what the default settings build; the settings' tournament keys take their defaults
    from it (written once)."""
    assert TournamentOptions() == tournament_options(ArenaSettings())
    defaults = ArenaSettings()
    for f in dataclasses.fields(TournamentOptions):
        if f.name == "strategy_knobs":  # one mapping: each knob is the settings field of its name
            for knob, value in TournamentOptions().strategy_knobs.items():
                assert value == getattr(defaults, knob), knob
            continue
        key = "on_judge_failure" if f.name == "on_failure" else f.name
        assert getattr(TournamentOptions(), f.name) == getattr(defaults, key), key
