"""One declaration per key: the settings are composed of parts (the referee's, the tournament's, each strategy's
knobs, the judge's and each backend's own), and no reward.arena key is declared by two of them at one level."""

import dataclasses
from collections import Counter

from arena_verl.backend_registry import option_types
from arena_verl.core.fields import key_fields, part_keys
from arena_verl.core.options import RefereeOptions, TournamentOptions
from arena_verl.core.strategies import strategy_option_types
from arena_verl.settings import ArenaSettings, JudgeSettings


def test_no_reward_arena_key_is_declared_twice():
    flat = [f.name for f in part_keys(ArenaSettings)] + ["judge"]
    flat += [f.name for cls in strategy_option_types().values() for f in key_fields(cls)]
    assert [name for name, n in Counter(flat).items() if n > 1] == []
    assert set(f.name for f in key_fields(RefereeOptions)) <= set(flat)
    assert set(f.name for f in key_fields(TournamentOptions)) <= set(flat)


def test_a_backend_s_own_keys_are_not_common_judge_keys():
    common = {f.name for f in key_fields(JudgeSettings)}
    for name, cls in option_types().items():
        assert common.isdisjoint(f.name for f in key_fields(cls)), name


def test_the_parts_are_passed_whole_not_copied():
    settings = ArenaSettings()
    kwargs = settings.referee_kwargs()
    assert kwargs["options"] is settings.referee and kwargs["tournament"] is settings.tournament
    assert {f.name for f in dataclasses.fields(ArenaSettings)} >= {"referee", "tournament", "judge"}
