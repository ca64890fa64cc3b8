"""Schedulers: call counts, the live leaderboard rule, budgets, connectivity as traces arrive one by one."""

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

from arena_verl.core.strategies import PacedOptions
from arena_verl.tournament import (
    STRATEGIES,
    InfoGainScheduler,
    LiveScheduler,
    PacedScheduler,
    SimulatedJudge,
    live_call_count,
    make_scheduler,
    round_robin_call_count,
    run_tournament,
)


def play(num_items, strategy="live", budget=None, seed=0, **judge_kwargs):
    judge = SimulatedJudge(np.random.default_rng(seed).normal(size=num_items), seed=seed, **judge_kwargs)
    return asyncio.run(run_tournament(num_items, judge, strategy, budget, seed=seed))


def is_connected(num_items, comparisons):
    adjacency = np.zeros((num_items, num_items))
    for first, second, _ in comparisons:
        adjacency[first, second] = adjacency[second, first] = 1
    return connected_components(adjacency, directed=False)[0] == 1


def test_strategies_are_the_documented_names():
    assert STRATEGIES == ("round_robin", "live", "random", "info_gain", "paced", "swiss", "knockout")


@pytest.mark.parametrize("num_items", range(1, 21))
def test_call_counts(num_items):
    rr = num_items * (num_items - 1) // 2
    live = rr if num_items < 3 else 1 + 2 + 3 * (num_items - 3)
    assert round_robin_call_count(num_items) == rr and live_call_count(num_items) == live
    assert play(num_items, "round_robin").judge_calls == rr
    assert play(num_items, "live").judge_calls == live
    for strategy in ("random", "info_gain", "paced"):
        assert play(num_items, strategy).judge_calls == live  # default budget: the live count
    assert live_call_count(8) == 18 and live_call_count(16) == 42


def test_round_robin_plays_every_pair_once():
    pairs = [tuple(sorted(c[:2])) for c in play(7, "round_robin").comparisons]
    assert sorted(pairs) == [(a, b) for a in range(7) for b in range(a + 1, 7)]


def reference_leaderboard(comparisons, num_ranked):
    """Independent restatement of the rule: win rate (ties half), unplayed = 0.5, ties by index."""
    rate = []
    for item in range(num_ranked):
        scores = [o if f == item else 1 - o for f, s, o in comparisons if item in (f, s)]
        rate.append(np.mean(scores) if scores else 0.5)
    return sorted(range(num_ranked), key=lambda i: (-rate[i], i))


@pytest.mark.parametrize("seed", range(5))
def test_live_opponents_are_best_median_and_worst_of_the_live_leaderboard(seed):
    rng = np.random.default_rng(seed)
    num_items = 12
    scheduler = LiveScheduler(num_items)
    for item in range(num_items):
        pairs = scheduler.on_arrival(item)
        if item >= 3:
            board = reference_leaderboard(scheduler.comparisons, item)
            assert pairs == [(board[0], item), (board[(item - 1) // 2], item), (board[-1], item)]
            assert len(set(pairs)) == 3
        else:
            assert pairs == [(earlier, item) for earlier in range(item)]
        for a, b in pairs:
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            scheduler.on_verdict(first, second, float(rng.choice([0.0, 0.5, 1.0])))
    scheduler.on_complete()
    assert scheduler.on_idle() == []


def test_live_leaderboard_breaks_ties_by_arrival():
    scheduler = LiveScheduler(5)
    for item in range(3):
        scheduler.on_arrival(item)
    # 0 beat 1, 1 beat 2, 2 beat 0: every win rate is 0.5, so the order is by index.
    for first, second in ((0, 1), (1, 2), (2, 0)):
        scheduler.on_verdict(first, second, 1.0)
    assert scheduler.leaderboard() == [0, 1, 2]
    assert scheduler.on_arrival(3) == [(0, 3), (1, 3), (2, 3)]


def test_a_failed_verdict_is_not_recorded():
    scheduler = LiveScheduler(3)
    scheduler.on_arrival(0)
    scheduler.on_arrival(1)
    scheduler.on_verdict(0, 1, None)
    assert scheduler.comparisons == []


@settings(max_examples=40, deadline=None)
@given(
    num_items=st.integers(2, 14),
    extra=st.integers(0, 30),
    seed=st.integers(0, 1000),
    strategy=st.sampled_from(["random", "info_gain", "paced"]),
)
def test_budgeted_strategies_spend_exactly_their_budget_and_stay_connected(num_items, extra, seed, strategy):
    budget = min(num_items - 1 + extra, round_robin_call_count(num_items))
    result = play(num_items, strategy, budget, seed=seed)
    assert result.judge_calls == budget
    assert is_connected(num_items, result.comparisons)


@pytest.mark.parametrize("strategy", ["live", "round_robin"])
@pytest.mark.parametrize("num_items", [2, 3, 8, 16])
def test_fixed_strategies_stay_connected(strategy, num_items):
    assert is_connected(num_items, play(num_items, strategy).comparisons)


def test_info_gain_connects_each_arrival_before_the_group_completes():
    scheduler = InfoGainScheduler(8, budget=18)
    for item in range(8):
        pairs = scheduler.on_arrival(item)
        assert len(pairs) == (0 if item == 0 else 1) and all(item in p and max(p) == item for p in pairs)
        for a, b in pairs:
            scheduler.on_verdict(a, b, 1.0)
        assert scheduler.on_idle() == []  # the rest waits for the complete group
    scheduler.on_complete()
    total = 7
    while pairs := scheduler.on_idle():
        assert len({x for p in pairs for x in p}) == 2 * len(pairs)  # a round is made of disjoint pairs
        assert len(pairs) <= 4
        total += len(pairs)
        for a, b in pairs:
            scheduler.on_verdict(a, b, 0.0)
    assert total == 18


def drive_paced(num_items=8, budget=18, final_calls=3, pace=3.0, idle_rounds_between_arrivals=100):
    """Feed a PacedScheduler arrivals, with up to ``idle_rounds_between_arrivals`` idle rounds in each gap (every
    verdict: the lower index wins); returns the calls made per phase."""
    scheduler = PacedScheduler(num_items, budget, options=PacedOptions(final_calls=final_calls, pace=pace))
    per_arrival, idle_before_completion = [], []
    for item in range(num_items):
        pairs = scheduler.on_arrival(item)
        assert all(item in p for p in pairs)
        per_arrival.append(len(pairs))
        for a, b in pairs:
            scheduler.on_verdict(a, b, 1.0)
        idle = 0
        for _ in range(idle_rounds_between_arrivals):
            pairs = scheduler.on_idle()
            if not pairs:
                break
            assert max(max(p) for p in pairs) <= item  # only traces that are there
            idle += len(pairs)
            for a, b in pairs:
                scheduler.on_verdict(a, b, 1.0)
        idle_before_completion.append(idle)
    scheduler.on_complete()
    after = 0
    pairs = scheduler.on_idle()  # the rest of the budget, one round
    after += len(pairs)
    for a, b in pairs:
        scheduler.on_verdict(a, b, 0.0)
    assert scheduler.on_idle() == []
    return scheduler, per_arrival, idle_before_completion, after


@pytest.mark.parametrize(("num_items", "final_calls"), [(8, 3), (8, 1), (16, 2), (4, 3), (3, 3)])
def test_paced_spends_while_arriving_and_leaves_one_round_for_the_last_trace(num_items, final_calls):
    budget = live_call_count(num_items)
    scheduler, per_arrival, idle, after = drive_paced(num_items, budget, final_calls)
    # Every arrival connects at once; the last plays min(final_calls, what is left) in one round; nothing after.
    assert per_arrival[0] == 0 and all(c == 1 for c in per_arrival[1:-1])
    assert 1 <= per_arrival[-1] <= max(final_calls, 1) and idle[-1] == 0 and after == 0
    assert len(scheduler.scheduled) == budget
    # The quota grows with the traces present: nothing is spent early that the cumulative quota does not allow.
    spent = np.cumsum([a + i for a, i in zip(per_arrival, idle)])
    for present in range(2, num_items - 1):
        assert spent[present - 1] <= max(scheduler.quota(present), present - 1)


def test_paced_spends_the_rest_with_the_last_arrival_when_traces_came_faster_than_verdicts():
    scheduler, per_arrival, idle, after = drive_paced(8, 18, 3, idle_rounds_between_arrivals=0)
    assert sum(idle) == 0 and per_arrival == [0] + [1] * 6 + [3]  # no idle time: one connecting call each
    assert after == 18 - 9  # the rest of the budget: asked for once the group is complete, in one round
    assert len(set(scheduler.scheduled)) == 18  # on distinct pairs
    result = play(8, "paced", 18)  # through the driver, which asks for the rest with the last arrival's calls
    assert result.judge_calls == 18 and result.rounds_after_last_arrival == 1


def test_paced_is_a_budgeted_strategy_with_checked_options():
    with pytest.raises(ValueError, match="final_calls"):  # its options check themselves, once
        PacedOptions(final_calls=0)
    with pytest.raises(ValueError, match="pace"):
        PacedOptions(pace=float("nan"))
    with pytest.raises(ValueError, match="cannot connect"):
        make_scheduler("paced", 8, budget=6)


def test_info_gain_prefers_uncertain_pairs_over_settled_ones():
    scheduler = InfoGainScheduler(3, budget=3)
    for item in range(3):
        scheduler.on_arrival(item)
    # 0 beat 1 ten times; 2 was compared once with 1 (a tie): (0, 2) or (1, 2) should be preferred to (0, 1).
    for _ in range(10):
        scheduler.on_verdict(0, 1, 1.0)
    scheduler.on_verdict(1, 2, 0.5)
    scheduler.scheduled = [(0, 1), (1, 2)]
    scheduler.on_complete()
    assert scheduler.on_idle() == [(0, 2)]


def test_scheduler_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"strategy must be one of \(.*\), got "):
        make_scheduler("elo_ladder", 8)
    with pytest.raises(ValueError, match="fixed number of calls"):
        make_scheduler("live", 8, budget=10)
    with pytest.raises(ValueError, match="cannot connect"):
        make_scheduler("info_gain", 8, budget=6)
    with pytest.raises(ValueError, match="num_items"):
        make_scheduler("live", 0)
    scheduler = make_scheduler("live", 3)
    with pytest.raises(ValueError, match="expected item 0"):
        scheduler.on_arrival(1)
    with pytest.raises(ValueError, match="complete after 0 of 3"):
        scheduler.on_complete()
