"""A strategy is one registration with its own options: a strategy defined in this file alone (its knob, its
scheduler) is set from ``+reward.arena.<knob>=...`` in a composed config and its knob reaches its scheduler in a
referee's tournament; no package file names it. A knob is one reward.arena key: checked once, by its declaration."""

import asyncio
import inspect
from dataclasses import dataclass

import pytest

from arena_verl.core.fields import Part, SettingError, setting
from arena_verl.core.options import TournamentOptions
from arena_verl.core.referee import Referee
from arena_verl.core.referee.groups import Group
from arena_verl.core.strategies import STRATEGY_REGISTRY, PacedOptions, Strategy, register_strategy, strategy_names
from arena_verl.core.tournament import PacedScheduler, Tournament, make_scheduler, planned_calls
from arena_verl.judge.simulated.trace_judge import SimulatedTraceJudge
from arena_verl.settings import arena_settings, settings_from_config
from arena_verl.tools.common.compose import compose_experiment


@dataclass(frozen=True)
class SpreadOptions(Part):
    spread: int = setting(5, low=1, high=64, help="`spread`: opponents of each arrival")


class SpreadScheduler(PacedScheduler):
    """The paced scheduler under another name, with a knob of its own."""

    def __init__(self, num_items, budget=None, *, options: SpreadOptions | None = None, **rest):
        super().__init__(num_items, budget, **rest)
        self.spread = (options or SpreadOptions()).spread


@pytest.fixture
def spread_strategy():
    register_strategy(Strategy("spread", SpreadScheduler, options=SpreadOptions))
    yield
    del STRATEGY_REGISTRY["spread"]


async def _tie(first: int, second: int) -> float:
    return 0.5


def test_a_users_strategy_knob_set_with_plus_reaches_its_scheduler_in_a_referee(spread_strategy):
    config = compose_experiment(
        "arena_ppo", ["reward.arena.strategy=spread", "+reward.arena.spread=7", "actor_rollout_ref.rollout.n=8"]
    )
    settings = settings_from_config(config)
    assert settings.tournament.strategy_options["spread"] == SpreadOptions(spread=7)
    assert "spread" in strategy_names()

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=SimulatedTraceJudge(seed=1))
        return referee._new_tournament(Group(uid="g", size=8)).scheduler

    scheduler = asyncio.run(scenario())
    assert isinstance(scheduler, SpreadScheduler) and scheduler.spread == 7
    tournament = Tournament(8, _tie, **settings.tournament.tournament_kwargs())
    assert tournament.scheduler.spread == 7


def test_a_users_knob_is_checked_once_by_its_declaration(spread_strategy):
    with pytest.raises(SettingError, match=r"reward\.arena\.spread must be in \[1, 64\], got 0"):
        arena_settings(group_size=8, strategy="spread", spread=0)
    with pytest.raises(SettingError, match=r"reward\.arena\.sprad is not a known key"):
        arena_settings(group_size=8, sprad=3)


def test_two_strategies_may_not_declare_one_knob():
    @dataclass(frozen=True)
    class Clash(Part):
        pace: float = setting(1.0, help="a knob paced declares already")

    with pytest.raises(ValueError, match="knob 'pace' is declared by strategy 'paced'"):
        register_strategy(Strategy("clash", PacedScheduler, options=Clash))
    assert "clash" not in STRATEGY_REGISTRY


def test_a_knob_that_names_another_key_is_refused_by_the_reader():
    @dataclass(frozen=True)
    class Shadow(Part):
        l2: float = setting(1.0, help="reward.arena.l2 is the fit's")

    register_strategy(Strategy("shadow", PacedScheduler, options=Shadow))
    try:
        with pytest.raises(SettingError, match=r"reward\.arena\.l2 is declared by two parts"):
            arena_settings(group_size=8)
    finally:
        del STRATEGY_REGISTRY["shadow"]


def test_pace_zero_is_refused_once_by_one_rule():
    """The paced knobs' range is their declaration's: the settings and the scheduler share it."""
    with pytest.raises(SettingError, match=r"reward\.arena\.pace must be in \(0, 100\], got 0"):
        arena_settings(group_size=8, pace=0)
    with pytest.raises(SettingError, match=r"reward\.arena\.pace"):
        PacedOptions(pace=0.0)
    with pytest.raises(SettingError, match=r"reward\.arena\.final_calls must be >= 1, got 0"):
        arena_settings(group_size=8, final_calls=0)
    assert "raise" not in inspect.getsource(PacedScheduler.__init__)  # no second rule in the scheduler


def test_make_scheduler_passes_a_strategy_its_own_options_whole():
    scheduler = make_scheduler("paced", 8, 18, options=PacedOptions(final_calls=1, pace=2.0))
    assert (scheduler.final_calls, scheduler.pace) == (1, 2.0)
    with pytest.raises(ValueError, match="has no options of its own"):
        make_scheduler("live", 8, options=PacedOptions())
    with pytest.raises(TypeError, match="takes PacedOptions"):
        make_scheduler("paced", 8, 18, options={"pace": 1.0})
    assert planned_calls(8, "paced", strategy_options=PacedOptions(final_calls=2)) == 18


def test_the_layers_between_settings_and_scheduler_name_no_knob():
    from arena_verl.core.referee import referee as referee_module
    from arena_verl.core.tournament import runner
    from arena_verl.tools.score import judging

    for part in (runner, referee_module, judging, TournamentOptions.tournament_kwargs):
        text = inspect.getsource(part)
        for knob in ("final_calls", "pace"):
            assert knob not in text, (knob, part)
