"""The peers' formats as strategies: ``swiss`` (rounds of equal scores, never a pair twice, at a budget) and
``knockout`` (single elimination, N - 1 matches, ties and failed matches to the lower index)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from arena_verl.core.strategies import SwissOptions
from arena_verl.core.tournament import make_scheduler, planned_calls, run_tournament
from arena_verl.core.tournament.formats import KnockoutScheduler, SwissScheduler
from arena_verl.judge.simulated.pairs import SimulatedJudge
from arena_verl.settings import arena_settings


def better_index(first: int, second: int) -> float:
    """A consistent judge: the higher index is the better trace."""
    return float(first > second)


def run(n, strategy, judge=better_index, budget=None, **options):
    async def call(first, second):
        return judge(first, second)

    return asyncio.run(run_tournament(n, call, strategy, budget, seed=0, **options))


def pairs_of(result):
    return [tuple(sorted(c[:2])) for c in result.comparisons]


@pytest.mark.parametrize("n", [2, 3, 5, 8, 16])
@pytest.mark.parametrize("budget", [None, "min", "more"])
def test_swiss_spends_its_budget_never_judging_a_pair_twice(n, budget):
    spend = {None: 3 * n - 6 if n >= 3 else 1, "min": n - 1, "more": n * (n - 1) // 2 + 5}[budget]
    result = run(n, "swiss", budget=None if budget is None else spend)
    pairs = pairs_of(result)
    assert len(pairs) == len(set(pairs))  # no pair twice
    assert result.judge_calls == min(spend, n * (n - 1) // 2)  # the budget, or every pair once if it is larger
    assert planned_calls(n, "swiss", None if budget is None else spend) == result.judge_calls


def test_swiss_pairs_equal_scores_and_its_rounds_option_stops_it():
    scheduler = make_scheduler("swiss", 8, 18)
    for item in range(8):
        assert scheduler.on_arrival(item) == []  # the field is paired once complete
    scheduler.on_complete()
    first_round = scheduler.on_idle()
    assert first_round == [(0, 1), (2, 3), (4, 5), (6, 7)]  # all equal: the standings' order
    for a, b in first_round:
        scheduler.on_verdict(a, b, better_index(a, b))
    second_round = scheduler.on_idle()
    winners, losers = {1, 3, 5, 7}, {0, 2, 4, 6}
    assert all({a, b} <= winners or {a, b} <= losers for a, b in second_round)  # one score meets its own
    limited = run(8, "swiss", strategy_options=SwissOptions(swiss_rounds=2))
    assert limited.judge_calls == 8  # two rounds of four


def test_swiss_with_every_verdict_a_tie_still_finishes_without_repeats():
    result = run(8, "swiss", judge=lambda a, b: 0.5)
    assert result.judge_calls == 18 and len(set(pairs_of(result))) == 18


@pytest.mark.parametrize("n", range(1, 18))
def test_knockout_plays_n_minus_one_matches_and_the_best_trace_wins(n):
    result = run(n, "knockout")
    pairs = pairs_of(result)
    assert result.judge_calls == n - 1 == len(set(pairs)) and planned_calls(n, "knockout") == n - 1
    if n > 1:
        assert int(np.argmax(result.strengths)) == n - 1  # the consistent judge's best trace is the champion


def test_knockout_ties_and_failed_matches_go_to_the_lower_index_and_placement_follows_the_rounds():
    scheduler = KnockoutScheduler(4)
    for item in range(4):
        scheduler.on_arrival(item)
    scheduler.on_complete()
    assert scheduler.scheduled == {(0, 1), (2, 3)}  # first-round matches started on arrival
    scheduler.on_verdict(0, 1, 0.5)  # a tie
    scheduler.on_verdict(3, 2, None)  # a failed call: no verdict
    final = scheduler.on_idle()
    assert final == [(0, 2)]
    scheduler.on_verdict(2, 0, 1.0)
    assert scheduler.on_idle() == []
    assert scheduler.placement() == [2, 0, 1, 3]  # the champion, the finalist, then round one's losers by index


def test_knockout_has_a_fixed_count_and_swiss_its_own_knob_in_the_settings():
    with pytest.raises(ValueError, match="budget applies to the budgeted strategies, not 'knockout'"):
        arena_settings(group_size=8, strategy="knockout", budget=10)
    settings = arena_settings(group_size=8, strategy="swiss", swiss_rounds=3)
    assert settings.tournament.strategy_options["swiss"] == SwissOptions(swiss_rounds=3)
    with pytest.raises(ValueError, match=r"reward\.arena\.swiss_rounds must be in \[1, 64\], got 0"):
        arena_settings(group_size=8, strategy="swiss", swiss_rounds=0)
    assert isinstance(make_scheduler("swiss", 8, options=SwissOptions(swiss_rounds=1)), SwissScheduler)


def test_both_rank_a_simulated_judges_field():
    qualities = np.linspace(-2, 2, 8)
    for strategy in ("swiss", "knockout"):
        result = asyncio.run(run_tournament(8, SimulatedJudge(qualities, sharpness=3.0, seed=1), strategy, seed=0))
        assert int(np.argmax(result.strengths)) >= 5, strategy  # a top trace, from a noisy judge
