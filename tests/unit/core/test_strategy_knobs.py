"""A strategy's knobs reach its scheduler from the settings as one mapping: only the scheduler (and the settings field
of the user-facing key) names a knob; TournamentOptions, the Tournament, the referee and the tools pass it through."""

import asyncio
import inspect
from dataclasses import dataclass

import pytest

from arena_verl.core.names import STRATEGIES
from arena_verl.core.options import STRATEGY_KNOBS, TournamentOptions, knob_defaults
from arena_verl.core.referee import Referee
from arena_verl.core.referee.groups import Group
from arena_verl.core.tournament import PacedScheduler, Tournament, make_scheduler, planned_calls, run_tournament
from arena_verl.core.tournament import schedulers as schedulers_module
from arena_verl.core.tournament.schedulers import SCHEDULERS
from arena_verl.judge.simulated.trace_judge import SimulatedTraceJudge
from arena_verl.settings import ArenaSettings, referee_options, tournament_options, validate


class SpreadScheduler(PacedScheduler):
    """The paced scheduler with one knob more, declared here alone (as a new knob is declared by its scheduler)."""

    knobs = {**PacedScheduler.knobs, "spread": 5}

    def __init__(self, num_items, budget=None, *, spread=knobs["spread"], **rest):
        super().__init__(num_items, budget, **rest)
        if spread < 1:
            raise ValueError(f"spread must be >= 1, got {spread!r}")
        self.spread = spread


@dataclass(frozen=True)
class SpreadSettings(ArenaSettings):
    spread: int = 5  # the user-facing key of the new knob


@pytest.fixture
def spread_knob(monkeypatch):
    monkeypatch.setitem(SCHEDULERS, "paced", SpreadScheduler)
    monkeypatch.setitem(STRATEGY_KNOBS, "paced", SpreadScheduler.knobs)


async def _tie(first: int, second: int) -> float:
    return 0.5


def test_a_new_knob_reaches_its_scheduler_from_the_settings_through_the_tournament(spread_knob):
    settings = SpreadSettings(strategy="paced", group_size=8, spread=7, final_calls=2)
    options = tournament_options(settings)
    assert options.strategy_knobs == {"final_calls": 2, "pace": 3.0, "spread": 7}
    tournament = Tournament(8, _tie, **options.tournament_kwargs())
    assert isinstance(tournament.scheduler, SpreadScheduler)
    assert (tournament.scheduler.spread, tournament.scheduler.final_calls) == (7, 2)
    # the public helpers pass the mapping through too, and the scheduler's own check applies
    assert planned_calls(8, "paced", strategy_knobs={"spread": 3}) == 18
    with pytest.raises(ValueError, match="spread must be >= 1"):
        asyncio.run(run_tournament(8, _tie, "paced", strategy_knobs={"spread": 0}))


def test_a_new_knob_reaches_the_referees_tournament(spread_knob):
    settings = SpreadSettings(strategy="paced", group_size=8, group_deadline_s=5.0, tournament_timeout_s=5.0, spread=9)

    async def scenario():
        referee = Referee(referee_options(settings), SimulatedTraceJudge(seed=1))
        return referee._new_tournament(Group(uid="g", size=8)).scheduler

    scheduler = asyncio.run(scenario())
    assert isinstance(scheduler, SpreadScheduler) and scheduler.spread == 9


def test_the_layers_between_settings_and_scheduler_name_no_knob():
    from arena_verl.core.referee import referee as referee_module
    from arena_verl.core.tournament import runner
    from arena_verl.tools.score import judging

    between = [runner, referee_module, judging, inspect.getsource(TournamentOptions)]
    for part in between:
        text = part if isinstance(part, str) else inspect.getsource(part)
        for knob in knob_defaults():
            assert knob not in text, (knob, getattr(part, "__name__", "TournamentOptions"))


def test_every_strategy_has_a_scheduler_and_the_knob_table_is_the_schedulers_declarations():
    assert set(SCHEDULERS) == set(STRATEGIES)
    assert PacedScheduler.knobs == STRATEGY_KNOBS["paced"]
    declared = {name: value for cls in SCHEDULERS.values() for name, value in cls.knobs.items()}
    assert declared == knob_defaults()
    defaults = ArenaSettings()
    for name, value in knob_defaults().items():  # each knob is the settings field of its name, with its default
        assert getattr(defaults, name) == value, name
    # the constructor's defaults are the declared ones
    signature = inspect.signature(PacedScheduler)
    assert {name: signature.parameters[name].default for name in PacedScheduler.knobs} == dict(PacedScheduler.knobs)


def test_make_scheduler_passes_each_scheduler_only_its_own_knobs():
    scheduler = make_scheduler("paced", 8, 18, knobs={"final_calls": 1, "pace": 2.0})
    assert (scheduler.final_calls, scheduler.pace) == (1, 2.0)
    live = make_scheduler("live", 8, knobs=knob_defaults())  # another strategy's knobs are left out
    assert type(live).__name__ == "LiveScheduler"
    with pytest.raises(ValueError, match="unknown strategy knobs"):
        make_scheduler("paced", 8, 18, knobs={"fianl_calls": 1})
    with pytest.raises(ValueError, match="final_calls"):  # the scheduler's own check
        make_scheduler("paced", 8, 18, knobs={"final_calls": 0})
    assert schedulers_module.make_scheduler is make_scheduler


def test_the_settings_keep_their_keys_and_messages():
    with pytest.raises(ValueError, match=r"reward\.arena\.final_calls must be >= 1, got 0"):
        validate(ArenaSettings(group_size=8, final_calls=0))
    with pytest.raises(ValueError, match=r"reward\.arena\.pace"):
        validate(ArenaSettings(group_size=8, pace=0.0))
    assert tournament_options(ArenaSettings(pace=1.5)).strategy_knobs == {"final_calls": 3, "pace": 1.5}
