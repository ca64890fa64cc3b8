"""run_tournament: presentation order, debiasing, failure accounting, reproducibility."""

import asyncio
import dataclasses

import numpy as np
import pytest
from scipy.stats import kendalltau

from arena_verl.tournament import SimulatedJudge, Tournament, fit_bradley_terry, mirror, run_tournament


def run(*args, **kwargs):
    return asyncio.run(run_tournament(*args, **kwargs))


def test_result_fields_are_consistent():
    judge = SimulatedJudge(np.arange(8.0), seed=1)
    result = run(8, judge, "live", seed=3)
    assert result.judge_calls == 18 == len(result.comparisons) == judge.calls
    assert result.failed_calls == 0
    np.testing.assert_allclose(result.strengths, fit_bradley_terry(8, result.comparisons))
    assert result.games.sum() == 2 * 18 and result.wins.sum() == pytest.approx(18)
    assert abs(result.strengths.mean()) < 1e-12


def test_same_seed_same_tournament_different_seed_different_order():
    def comparisons(seed):
        return run(8, SimulatedJudge(np.arange(8.0), seed=0, latency_mean=0.001), "info_gain", seed=seed).comparisons

    assert comparisons(5) == comparisons(5)
    assert comparisons(5) != comparisons(6)


def test_presentation_order_is_a_fair_coin():
    shown_first_was_lower = []
    for seed in range(40):
        for first, second, _ in run(8, SimulatedJudge(np.zeros(8), seed=seed), "round_robin", seed=seed).comparisons:
            shown_first_was_lower.append(first < second)
    share = np.mean(shown_first_was_lower)
    assert 0.45 < share < 0.55  # 1120 coin flips: 5 sigma is about 0.075


def test_two_sided_judges_both_orders_and_cancels_position_bias():
    # Equal traces and a judge that picks the first shown 95% of the time: with one random order per pair the
    # coin flips of the order become strengths; judging both orders turns most pairs into a 1-1 draw.
    spread = {False: [], True: []}
    for seed in range(20):
        for two_sided in (False, True):
            judge = SimulatedJudge(np.zeros(6), position_bias=3.0, seed=seed)
            result = run(6, judge, "round_robin", seed=seed, two_sided=two_sided)
            assert result.judge_calls == (30 if two_sided else 15)
            spread[two_sided].append(np.abs(result.strengths).mean())
            if two_sided:
                ordered = {(f, s) for f, s, _ in result.comparisons}
                assert all((s, f) in ordered for f, s in ordered)
    assert np.mean(spread[True]) < np.mean(spread[False]) / 3


def test_order_effect_term_measures_the_judges_position_bias():
    rng = np.random.default_rng(0)
    estimates = []
    for seed in range(30):
        judge = SimulatedJudge(rng.normal(size=16), position_bias=1.0, seed=seed)
        estimates.append(run(16, judge, "round_robin", seed=seed, order_effect=True).order_effect)
    assert np.mean(estimates) == pytest.approx(1.0, abs=0.15)
    plain = run(16, SimulatedJudge(np.zeros(16), position_bias=1.0), "round_robin")
    assert plain.order_effect == 0.0


def test_budget_counts_calls_and_two_sided_pairs_cost_two():
    judge = SimulatedJudge(np.arange(8.0))
    assert run(8, judge, "info_gain", budget=20).judge_calls == 20
    assert run(8, judge, "info_gain", budget=20, two_sided=True).judge_calls == 20


def test_mirror_adds_the_swapped_verdict():
    assert mirror([(0, 1, 1.0), (2, 0, 0.5)]) == [(0, 1, 1.0), (1, 0, 0.0), (2, 0, 0.5), (0, 2, 0.5)]
    result = run(5, SimulatedJudge(np.arange(5.0)), "round_robin", mirror_augment=True)
    np.testing.assert_allclose(result.strengths, fit_bradley_terry(5, mirror(result.comparisons)))
    # Mirroring counts every verdict twice: the same as halving the prior.
    np.testing.assert_allclose(result.strengths, fit_bradley_terry(5, result.comparisons, l2=0.05), atol=1e-8)


class BrokenJudge:
    """Fails in every way a judge can, deterministically by pair."""

    def __init__(self):
        self.calls = 0

    async def __call__(self, first, second):
        self.calls += 1
        kind = (first + second) % 5
        if kind == 0:
            raise TimeoutError("judge timed out")
        if kind == 1:
            return None
        if kind == 2:
            return float("nan")
        if kind == 3:
            return 7
        return "first"


@pytest.mark.parametrize("policy", ["tie", "drop"])
def test_a_judge_failure_never_becomes_a_win(policy):
    result = run(8, BrokenJudge(), "round_robin", on_failure=policy)
    assert result.judge_calls == 28 and result.failed_calls == 28
    if policy == "tie":
        assert all(outcome == 0.5 for _, _, outcome in result.comparisons) and len(result.comparisons) == 28
    else:
        assert result.comparisons == []
    np.testing.assert_allclose(result.strengths, 0.0, atol=1e-12)


def test_failures_are_counted_and_the_rest_still_ranks():
    quality = np.linspace(-2, 2, 8)
    judge = SimulatedJudge(quality, sharpness=3.0, parse_failure_rate=0.3, seed=2)
    result = run(8, judge, "round_robin", on_failure="drop")
    assert result.failed_calls == judge.parse_failures > 0
    assert len(result.comparisons) == 28 - result.failed_calls
    assert kendalltau(result.strengths, quality).statistic > 0.6


def test_concurrency_is_capped():
    in_flight, peak = 0, 0

    async def judge(first, second):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return 1.0 if first < second else 0.0

    run(10, judge, "round_robin", max_concurrency=3)
    assert peak == 3


def test_bad_arguments():
    judge = SimulatedJudge(np.zeros(4))
    with pytest.raises(ValueError, match="on_failure"):
        run(4, judge, on_failure="win")
    with pytest.raises(ValueError, match="budget"):
        run(4, judge, "info_gain", budget=-1)
    with pytest.raises(ValueError, match=r"strategy must be one of \(.*\), got "):
        run(4, judge, "elo_ladder")


def test_single_trace_needs_no_judge():
    result = run(1, BrokenJudge(), "info_gain")
    assert result.judge_calls == 0 and result.strengths.tolist() == [0.0]


def test_incremental_tournament_overlaps_arrivals_and_matches_live_counts():
    from arena_verl.core.tournament import Tournament

    async def scenario():
        judge = SimulatedJudge(np.arange(8.0), latency_mean=0.002, seed=0)
        tournament = Tournament(8, judge, "live", seed=0)
        for _ in range(8):
            tournament.add()
            await asyncio.sleep(0.001)  # the next trace arrives while earlier matches may still be judged
        return await tournament.finish()

    result = asyncio.run(scenario())
    assert result.judge_calls == 18 and len(result.comparisons) == 18
    assert np.argmax(result.strengths) >= 5  # the simulated judge's best traces come out on top


def test_cancel_stops_calls_in_flight_and_keeps_what_was_judged():
    from arena_verl.core.tournament import Tournament

    started, finished = [], []

    async def slow_judge(first, second):
        started.append((first, second))
        await asyncio.sleep(0.05 if first + second > 3 else 0)
        finished.append((first, second))
        return 1.0

    async def scenario():
        tournament = Tournament(6, slow_judge, "round_robin")
        for _ in range(4):
            tournament.add()
        await asyncio.sleep(0.01)
        tournament.cancel()
        await tournament.settle()
        return tournament.result()

    result = asyncio.run(scenario())
    assert len(result.comparisons) == len(finished) < len(started) == result.judge_calls


def test_finish_before_every_arrival_is_an_error():
    from arena_verl.core.tournament import Tournament

    async def scenario():
        tournament = Tournament(3, SimulatedJudge(np.zeros(3)))
        tournament.add()
        await tournament.finish()

    with pytest.raises(ValueError, match="1 of 3"):
        asyncio.run(scenario())


def _live_batches(n: int) -> list[list[tuple[int, int]]]:
    """Live's pairs as the runner hands them over: each arrival plays every trace before it, in one batch."""
    return [[(old, new) for old in range(new)] for new in range(1, n)]


def _shown_first_from_cache(n: int, prefix_aware: bool, seed: int) -> tuple[float, dict[int, int]]:
    from arena_verl.core.tournament import present

    rng = np.random.default_rng(seed)
    balance, cached, hits, calls = {}, set(), 0, 0
    for batch in _live_batches(n):
        before = set(cached)
        shown = present(batch, rng, prefix_aware=prefix_aware, balance=balance, cached=cached if prefix_aware else None)
        assert sorted(tuple(sorted(p)) for p in shown) == sorted(batch)
        if prefix_aware:
            assert [f for f, _ in shown] == sorted(f for f, _ in shown)  # the same first trace: consecutive calls
        hits += sum(first in before for first, _ in shown)
        calls += len(shown)
        cached.update(first for first, _ in shown)  # (what the engine holds either way)
    return hits / calls, balance


@pytest.mark.parametrize("n", [8, 16])
def test_the_prefix_aware_order_reuses_cached_heads_within_the_first_position_balance(n):
    """Where the balance leaves the order open, the trace whose head the engine holds goes first: more calls start
    from a cached head than under the balance's coin, and no trace gets further than one call from even."""
    aware, plain = [], []
    for seed in range(50):
        share, balance = _shown_first_from_cache(n, True, seed)
        assert all(abs(lead) <= 1 for lead in balance.values()), balance
        aware.append(share)
        share, balance = _shown_first_from_cache(n, False, seed)
        assert all(abs(lead) <= 1 for lead in balance.values()), balance
        plain.append(share)
    assert np.mean(aware) > np.mean(plain) + 0.02


def test_the_prefix_aware_order_is_balanced_without_a_callers_balance():
    from arena_verl.core.tournament import present

    shown = present([(0, 5), (2, 5), (4, 5)], np.random.default_rng(0), prefix_aware=True)
    leads = {}
    for first, second in shown:
        leads[first] = leads.get(first, 0) + 1
        leads[second] = leads.get(second, 0) - 1
    assert all(abs(lead) <= 1 for lead in leads.values())  # the hub is not shown first (or second) in all three


def test_prefix_aware_live_tournament_keeps_its_call_count():
    judge = SimulatedJudge(np.arange(8.0), seed=0)
    from arena_verl.core.tournament import Tournament

    async def scenario():
        tournament = Tournament(8, judge, "live", prefix_aware=True)
        for _ in range(8):
            tournament.add()
            await tournament.settle()
        return await tournament.finish()

    assert asyncio.run(scenario()).judge_calls == 18


def _pairs_played(wait_for_verdicts: bool, n: int = 8, latency: float = 0.01):
    """A burst: every trace arrives at once while the judge takes ``latency`` per call."""
    qualities = BURST_QUALITIES

    async def judge(first, second):
        await asyncio.sleep(latency)
        return 1.0 if qualities[first] > qualities[second] else 0.0

    async def scenario():
        tournament = Tournament(n, judge, "live", seed=3, wait_for_verdicts=wait_for_verdicts)
        for _ in range(n):
            tournament.add()
        result = await tournament.finish()
        return sorted(tuple(sorted((int(a), int(b)))) for a, b, _ in result.comparisons), result

    return asyncio.run(scenario())


# Arrival order unrelated to quality: the verdicts, not the arrival positions, decide who is best, median, worst.
BURST_QUALITIES = np.array([-1.0, 0.5, 2.0, -2.0, 1.0, 0.0, -0.5, 1.5])


def test_waiting_for_verdicts_reproduces_the_sequential_live_rule_under_a_burst():
    qualities = BURST_QUALITIES

    async def judge(first, second):
        return 1.0 if qualities[first] > qualities[second] else 0.0

    sequential = asyncio.run(run_tournament(8, judge, "live", seed=3))
    reference = sorted(tuple(sorted((int(a), int(b)))) for a, b, _ in sequential.comparisons)
    faithful, result = _pairs_played(wait_for_verdicts=True)
    eager, _ = _pairs_played(wait_for_verdicts=False)
    assert faithful == reference  # opponents chosen on the leaderboard with every earlier verdict in
    assert eager != reference  # a burst scheduled on a stale leaderboard plays other pairs
    assert len(faithful) == len(eager) == 18
    # The price: the held arrivals are judged one round after another after the last trace arrived.
    assert result.rounds_after_last_arrival > 1


def test_finish_with_a_deadline_answers_with_the_verdicts_in_hand():
    """A slow verdict past the deadline is dropped (cancelled, counted, not a failure, not in the fit)."""

    async def judge(first, second):
        if {first, second} == {0, 3}:
            await asyncio.sleep(30)  # a straggler
        return 1.0 if first < second else 0.0

    async def scenario():
        tournament = Tournament(4, judge, "round_robin", seed=0)
        for _ in range(4):
            tournament.add()
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await tournament.finish(deadline_s=0.2)
        return result, loop.time() - started

    result, took = asyncio.run(scenario())
    assert took < 2.0
    assert result.judge_calls == 6 and result.dropped_calls == 1 and result.failed_calls == 0
    assert len(result.comparisons) == 5 and {frozenset(c[:2]) for c in result.comparisons} == {
        frozenset(p) for p in [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
    }


def test_the_idle_gate_holds_back_speculation_and_then_the_rest_of_the_budget():
    judge = SimulatedJudge(np.arange(8.0), seed=0)
    asked = []

    def gate(complete):
        asked.append(complete)
        return complete  # no speculation while arriving; the rest of the budget after completion

    async def scenario(gate):
        tournament = Tournament(8, judge, "paced", 18, seed=0, idle_gate=gate)
        for _ in range(8):
            tournament.add()
            await tournament.settle()
        return await tournament.finish()

    held = asyncio.run(scenario(gate))
    assert held.skipped_idle_rounds > 0 and False in asked
    assert held.judge_calls == 18 and held.rounds_after_last_arrival == 1  # spent late, in the last round
    shed = asyncio.run(scenario(lambda complete: False))
    assert shed.judge_calls == 6 + 3 and shed.skipped_idle_rounds > 0  # connecting calls, the final calls only
    free = asyncio.run(scenario(None))
    assert free.judge_calls == 18 and free.rounds_after_last_arrival == 1 and free.skipped_idle_rounds == 0


def test_a_judge_that_keeps_raising_does_not_flood_the_log(caplog):
    from arena_verl.core.tournament import judge_call

    log = judge_call._RateLimitedFailureLog(full=2, interval_s=3600)

    async def boom():
        raise RuntimeError("judge down")

    async def scenario():
        for _ in range(50):
            assert await judge_call.contained(boom(), "judge call") is None

    original = judge_call._FAILURE_LOG
    judge_call._FAILURE_LOG = log
    try:
        with caplog.at_level("WARNING", logger="arena_verl.core.tournament.judge_call"):
            asyncio.run(scenario())
    finally:
        judge_call._FAILURE_LOG = original
    records = [r for r in caplog.records if "judge call failed" in r.getMessage()]
    assert len(records) == 3  # two with a traceback, then one line for the rest of the hour
    assert records[0].exc_info and not records[2].exc_info and log.suppressed == 47


def first_minus_second(comparisons, num_items):
    lead = np.zeros(num_items, dtype=int)
    for first, second, _ in comparisons:
        lead[first] += 1
        lead[second] -= 1
    return lead


def test_paced_shows_every_trace_first_about_as_often_as_second():
    """With ~5 games per trace, coin flips leave some traces shown first in most of them; the paced schedule's
    balanced presentation keeps every trace's first-minus-second count near even, so the judge's bias cancels."""
    paced_leads, live_leads = [], []
    for seed in range(20):
        paced = asyncio.run(run_tournament(16, SimulatedJudge(np.linspace(-1, 1, 16), seed=seed), "paced", seed=seed))
        live = asyncio.run(run_tournament(16, SimulatedJudge(np.linspace(-1, 1, 16), seed=seed), "live", seed=seed))
        paced_leads.append(np.abs(first_minus_second(paced.comparisons, 16)))
        live_leads.append(np.abs(first_minus_second(live.comparisons, 16)))
    assert max(lead.max() for lead in paced_leads) <= 3  # greedy balancing: measured max 3 (coin flips: up to 9)
    assert np.mean(paced_leads) < 0.5 * np.mean(live_leads)  # measured 0.67 against 1.8
    # Balanced still chooses at random between two traces with the same lead: both orders occur for a pair.
    assert (
        0.3
        < np.mean(
            [
                c[0] < c[1]
                for s in range(20)
                for c in asyncio.run(
                    run_tournament(8, SimulatedJudge(np.zeros(8), seed=s), "paced", seed=s)
                ).comparisons
            ]
        )
        < 0.7
    )


def test_the_tournament_part_is_read_from_its_flat_keys_and_passed_whole():
    """The settings' tournament part is the core's type, read from its reward.arena keys; its kwargs are the
    Tournament's."""
    import inspect

    from arena_verl.core.options import TournamentOptions
    from arena_verl.core.strategies import PacedOptions, SwissOptions
    from arena_verl.settings import ArenaSettings, arena_settings

    settings = arena_settings(
        strategy="paced", budget=20, l2=0.3, order_effect=True, two_sided=True, on_judge_failure="drop",
        prefix_aware=True, wait_for_verdicts=True, final_calls=2, pace=1.5,
    )  # fmt: skip
    options = settings.tournament
    knobs = {"paced": PacedOptions(final_calls=2, pace=1.5), "swiss": SwissOptions()}
    assert options == TournamentOptions("paced", 20, 0.3, True, True, False, "drop", True, True, knobs)
    kwargs = options.tournament_kwargs()
    assert set(kwargs) <= set(inspect.signature(Tournament).parameters)
    assert kwargs["strategy_options"] is options.strategy_options["paced"]  # the strategy's own part, whole
    assert ArenaSettings().tournament.wait_for_verdicts is False  # training's default: eager


def test_the_referee_gets_the_settings_parts_whole_with_one_set_of_defaults():
    """The referee reads its parts, never the settings; the parts' defaults are the only ones."""
    from arena_verl.core.options import RefereeOptions, TournamentOptions
    from arena_verl.settings import ArenaSettings, arena_settings, judge_settings

    assert ArenaSettings().tournament == dataclasses.replace(TournamentOptions(), strategy="live")
    settings = arena_settings(
        mode="adaptive_pointwise", group_size=6, diversity_tol=0.2, speculative=False, group_deadline_s=30.0,
        tournament_timeout_s=40.0, completion_grace=2.0, reward_scale=0.3, min_verdict_share=0.25,
        advantage_norm_by_std=False,
        num_referees=4, judge=judge_settings(max_concurrency=32, timeout_s=5.0, retries=0), strategy="paced", pace=2.0,
    )  # fmt: skip
    kwargs = settings.referee_kwargs()
    assert kwargs["options"] == RefereeOptions(
        mode="adaptive_pointwise", group_size=6, diversity_tol=0.2, speculative=False, group_deadline_s=30.0,
        tournament_timeout_s=40.0, completion_grace=2.0, reward_scale=0.3, min_verdict_share=0.25,
        advantage_norm_by_std=False,
    )  # fmt: skip
    assert kwargs["options"] is settings.referee and kwargs["tournament"] is settings.tournament
    assert (kwargs["call_budget_s"], kwargs["judge_slots"]) == (settings.judge.call_budget_s, 8)
