"""The group referee (pure asyncio, SIMULATED judge): every mode, speculation, deadlines, bad input, metrics."""

import asyncio
import dataclasses
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import kendalltau

from arena_verl.core.names import ROUTE_POINTWISE, ROUTE_TOURNAMENT, ROUTE_VERIFIER
from arena_verl.core.referee import (
    FALLBACK_DEADLINE,
    FALLBACK_JUDGE_ERROR,
    FALLBACK_LATE,
    FALLBACK_OVERFLOW,
    Referee,
    Submission,
)
from arena_verl.judge import SimulatedTraceJudge, Trace
from arena_verl.settings import arena_settings, judge_settings

# A judge whose call (2 s, no retries) fits the short tournament timeout these tests use: the settings refuse limits
# that contradict each other.
QUICK_JUDGE = dict(timeout_s=2.0, retries=0, parse_retries=0, backoff_s=0.0)


def settings(**overrides):
    base = dict(group_size=8, group_deadline_s=5.0, tournament_timeout_s=5.0, judge=judge_settings(**QUICK_JUDGE))
    base.update(overrides)
    return arena_settings(**base)


def past_its_limits(settings_, **referee_keys):
    """``settings_``'s referee parts with referee keys the settings would refuse with their judge (a referee must still
    survive them: a judge slower than promised)."""
    kwargs = settings_.referee_kwargs()
    return SimpleNamespace(referee_kwargs=lambda: {**kwargs, "options": replace(kwargs["options"], **referee_keys)})


def group(uid, rewards, qualities=None, step=None):
    qualities = np.linspace(-2, 2, len(rewards)) if qualities is None else qualities
    return [
        Submission(
            uid=uid,
            sample_key=str(i),
            problem=f"problem {uid}",
            trace=Trace(f"trace {uid} {i}", quality_hint=float(q)),
            verifier_reward=float(r),
            reference="42",
            step=step,
        )
        for i, (r, q) in enumerate(zip(rewards, qualities))
    ]


def run(referee_settings, submissions, judge=None, shuffle_seed=None):
    """Submit concurrently (optionally in a shuffled order); return verdicts in submission-list order."""

    async def scenario():
        referee = Referee(
            **(referee_settings).referee_kwargs(), judge=judge or SimulatedTraceJudge(sharpness=3.0, seed=1)
        )
        order = list(range(len(submissions)))
        if shuffle_seed is not None:
            np.random.default_rng(shuffle_seed).shuffle(order)
        tasks = {}
        for i in order:
            tasks[i] = asyncio.ensure_future(referee.submit(submissions[i]))
            await asyncio.sleep(0)
        verdicts = [await tasks[i] for i in range(len(submissions))]
        await referee.drain()
        return verdicts, referee

    return asyncio.run(scenario())


def test_arena_mode_diverse_keeps_verifier_uniform_goes_to_live_tournament():
    diverse = group("d", [1, 0, 1, 0, 0, 1, 1, 0])
    correct = group("c", [1.0] * 8)
    wrong = group("w", [0.0] * 8)
    verdicts, referee = run(settings(), diverse + correct + wrong, shuffle_seed=3)
    d, c, w = verdicts[:8], verdicts[8:16], verdicts[16:]
    assert [v.reward for v in d] == [1, 0, 1, 0, 0, 1, 1, 0]
    assert all(v.route == ROUTE_VERIFIER and not v.uniform for v in d)
    for members, verdict_list, base in ((correct, c, 1.0), (wrong, w, 0.0)):
        assert all(v.route == ROUTE_TOURNAMENT and v.judge_calls == 18 for v in verdict_list)
        rewards = np.array([v.reward for v in verdict_list])
        assert np.all(np.abs(rewards - base) < 0.25) and rewards.std() > 0
        quality = [m.trace.quality_hint for m in members]
        assert kendalltau(rewards, quality).statistic > 0.5
    metrics = referee.metrics()
    assert metrics["arena/groups"] == 3 and metrics["arena/groups_routed"] == 2
    assert metrics["arena/alpha_routed"] == pytest.approx(2 / 3)
    assert metrics["arena/all_correct_share_of_uniform"] == 0.5
    assert metrics["arena/judge_calls_per_routed_group"] == 18


@pytest.mark.parametrize("strategy, calls", [("live", 18), ("round_robin", 28), ("info_gain", 18), ("random", 18)])
def test_strategy_sets_the_calls_per_routed_group(strategy, calls):
    verdicts, _ = run(settings(strategy=strategy), group("g", [0.0] * 8))
    assert {v.judge_calls for v in verdicts} == {calls}


def test_speculative_calls_on_a_group_that_turns_diverse_are_cancelled_and_counted():
    # The first five agree, so the live tournament starts; the sixth disagrees.
    members = group("g", [1, 1, 1, 1, 1, 0, 1, 1])
    judge = SimulatedTraceJudge(latency_s=0.001, seed=0)
    verdicts, referee = run(settings(), members, judge=judge)
    assert [v.reward for v in verdicts] == [1, 1, 1, 1, 1, 0, 1, 1]
    assert all(v.route == ROUTE_VERIFIER for v in verdicts)
    wasted = verdicts[0].judge_calls
    assert 0 < wasted <= 1 + 2 + 3 + 3  # at most the first five arrivals' matches
    assert referee.metrics()["arena/judge_calls_wasted"] == wasted


def test_without_speculation_no_call_is_made_for_diverse_groups():
    verdicts, referee = run(settings(speculative=False), group("g", [1, 1, 1, 1, 1, 0, 1, 1]))
    assert all(v.judge_calls == 0 for v in verdicts)
    assert referee.judge.stats.calls == 0


@pytest.mark.parametrize(
    "mode, diverse_route, uniform_route",
    [
        ("rlvr", ROUTE_VERIFIER, ROUTE_VERIFIER),
        ("pointwise", ROUTE_POINTWISE, ROUTE_POINTWISE),
        ("tournament_all", ROUTE_TOURNAMENT, ROUTE_TOURNAMENT),
        ("adaptive_pointwise", ROUTE_VERIFIER, ROUTE_POINTWISE),
        ("arena", ROUTE_VERIFIER, ROUTE_TOURNAMENT),
    ],
)
def test_every_mode_routes_as_documented(mode, diverse_route, uniform_route):
    verdicts, _ = run(settings(mode=mode), group("d", [1, 0] * 4) + group("u", [1.0] * 8))
    assert {v.route for v in verdicts[:8]} == {diverse_route}
    assert {v.route for v in verdicts[8:]} == {uniform_route}
    if diverse_route == ROUTE_VERIFIER:
        assert [v.reward for v in verdicts[:8]] == [1, 0] * 4


def test_pointwise_rewards_are_judge_scores_and_adaptive_pointwise_is_anchored():
    verdicts, _ = run(settings(mode="pointwise"), group("u", [1.0] * 8))
    assert {v.reward for v in verdicts} <= {0.0, 0.5, 1.0} and {v.fallback for v in verdicts} == {0}
    assert {v.judge_calls for v in verdicts} == {8}
    verdicts, _ = run(settings(mode="adaptive_pointwise", reward_scale=0.4), group("u", [0.0] * 8))
    assert {v.fallback for v in verdicts} == {0}
    assert {round(v.reward, 6) for v in verdicts} <= {-0.2, 0.0, 0.2}


def test_tournament_all_rewards_are_win_probabilities():
    verdicts, _ = run(settings(mode="tournament_all"), group("d", [1, 0] * 4))
    rewards = np.array([v.reward for v in verdicts])
    assert np.all((rewards > 0) & (rewards < 1))


def test_incomplete_group_is_answered_at_its_deadline():
    async def scenario():
        referee = Referee(**(settings(group_deadline_s=0.2)).referee_kwargs(), judge=SimulatedTraceJudge(seed=0))
        members = group("g", [1.0] * 8)[:5]
        verdicts = await asyncio.gather(*(referee.submit(m) for m in members))
        late = await referee.submit(group("g", [1.0] * 8)[6])
        return verdicts, late, referee

    verdicts, late, referee = asyncio.run(scenario())
    assert all(v.fallback == FALLBACK_DEADLINE and v.reward == 1.0 for v in verdicts)
    assert late.fallback == FALLBACK_LATE and late.reward == 1.0
    assert referee.metrics()["arena/fallback_deadline"] == 5


class BrokenJudge:
    name = "broken"

    def __init__(self):
        from arena_verl.judge import JudgeStats

        self.stats = JudgeStats()

    async def compare(self, *args, **kwargs):
        raise RuntimeError("judge backend is down")

    async def score(self, *args, **kwargs):
        raise RuntimeError("judge backend is down")


class HangingJudge(BrokenJudge):
    async def compare(self, *args, **kwargs):
        await asyncio.sleep(3600)

    async def score(self, *args, **kwargs):
        await asyncio.sleep(3600)


def test_judge_errors_become_counted_ties_never_wins():
    verdicts, referee = run(settings(), group("g", [1.0] * 8), judge=BrokenJudge())
    assert all(v.reward == pytest.approx(1.0) and v.judge_failures == 18 for v in verdicts)
    assert referee.metrics()["arena/judge_failures"] == 18


def test_a_hanging_judge_is_cut_by_the_call_timeout():
    # The breaker off: it would open after one call's bound (0.05 s) and stop the calls this test counts.
    s = settings(
        breaker_open_after_s=0, judge=judge_settings(timeout_s=0.05, retries=0, parse_retries=0, backoff_s=0.0)
    )
    verdicts, _ = run(s, group("g", [0.0] * 8), judge=HangingJudge())
    assert all(v.reward == 0.0 and v.judge_failures == 18 for v in verdicts)


def test_a_tournament_past_its_timeout_falls_back_to_verifier_rewards():
    s = past_its_limits(settings(tournament_timeout_s=700.0, judge=judge_settings(timeout_s=100.0)),
                        tournament_timeout_s=0.1)  # fmt: skip
    verdicts, referee = run(s, group("g", [0.0] * 8), judge=HangingJudge())
    assert all(v.reward == 0.0 and v.fallback == FALLBACK_JUDGE_ERROR for v in verdicts)
    assert referee.metrics()["arena/fallback_judge_error"] == 8


def test_pointwise_failures_get_the_neutral_score_per_sample_and_count_as_not_routed():
    # RLAIF pointwise is a judge-only baseline: a failed score is 0.5, not the verifier's 1.0.
    verdicts, referee = run(settings(mode="pointwise"), group("g", [1.0] * 8), judge=BrokenJudge())
    assert all(v.reward == 0.5 and v.fallback == FALLBACK_JUDGE_ERROR and not v.routed for v in verdicts)
    # Adaptive pointwise: the neutral score leaves the verifier reward.
    verdicts, _ = run(settings(mode="adaptive_pointwise"), group("g", [1.0] * 8), judge=BrokenJudge())
    assert all(v.reward == 1.0 and not v.routed for v in verdicts)
    metrics = referee.metrics()
    assert metrics["arena/groups_routed"] == 0 and metrics["arena/samples_routed"] == 0
    assert metrics["arena/judge_calls_wasted"] == 8 and metrics["arena/fallback_judge_error"] == 8


class FlakyScorer(BrokenJudge):
    """Scores every other call, fails the rest."""

    def __init__(self):
        super().__init__()
        self.count = 0

    async def score(self, *args, **kwargs):
        self.count += 1
        if self.count % 2:
            raise RuntimeError("judge backend hiccup")
        return 1.0


def test_routed_is_per_sample_where_the_route_is_per_sample():
    verdicts, referee = run(settings(mode="pointwise"), group("g", [0.0] * 8), judge=FlakyScorer())
    assert sum(v.routed for v in verdicts) == 4
    metrics = referee.metrics()
    # One failed score does not unroute the group nor waste its calls.
    assert metrics["arena/groups_routed"] == 1 and metrics["arena/samples_routed"] == 4
    assert metrics["arena/judge_calls_routed"] == 8 and metrics["arena/judge_calls_wasted"] == 0


def test_a_tournament_whose_every_call_failed_is_not_routed():
    verdicts, referee = run(settings(), group("g", [1.0] * 8), judge=BrokenJudge())
    assert not any(v.routed for v in verdicts)
    metrics = referee.metrics()
    assert metrics["arena/alpha_routed"] == 0 and metrics["arena/judge_calls_wasted"] == 18


def test_duplicates_get_the_same_answer_and_overflow_gets_the_verifier_reward():
    members = group("g", [0.0] * 8)
    extra = dataclasses.replace(members[0], sample_key="extra", verifier_reward=0.0)
    verdicts, referee = run(settings(), members + [members[3], extra])
    assert verdicts[8] == verdicts[3]
    assert verdicts[9].fallback == FALLBACK_OVERFLOW and verdicts[9].reward == 0.0
    metrics = referee.metrics()
    assert metrics["arena/duplicates"] == 1 and metrics["arena/fallback_overflow"] == 1


def test_interleaved_groups_out_of_order_and_per_step_metrics():
    subs = []
    for g in range(6):
        rewards = [1.0] * 8 if g % 2 else [1, 0] * 4
        subs += group(f"g{g}", rewards, step=g % 2)
    verdicts, referee = run(settings(), subs, shuffle_seed=7)
    for g in range(6):
        routes = {v.route for v in verdicts[8 * g : 8 * g + 8]}
        assert routes == ({ROUTE_TOURNAMENT} if g % 2 else {ROUTE_VERIFIER})
    assert referee.metrics(step=1)["arena/groups_routed"] == 3
    assert referee.metrics(step=0)["arena/groups_routed"] == 0
    assert referee.metrics()["arena/groups"] == 6


def test_group_of_one_needs_no_judge():
    verdicts, _ = run(settings(group_size=1), group("g", [1.0]))
    assert verdicts[0].reward == 1.0 and verdicts[0].judge_calls == 0


def test_padding_copies_after_a_full_group_get_their_originals_answer():
    members = [dataclasses.replace(m, content_key=f"c{i}") for i, m in enumerate(group("g", [0.0] * 8))]
    copy = dataclasses.replace(members[2], sample_key="call-copy")
    identical = [dataclasses.replace(m, content_key="same") for m in group("h", [1.0] * 8)]
    verdicts, _ = run(settings(), members + [copy] + identical)
    assert verdicts[8] == verdicts[2] and verdicts[8].fallback == 0
    # Identical responses inside one group are separate samples: the group completes and is judged.
    assert all(v.route == ROUTE_TOURNAMENT and v.fallback == 0 for v in verdicts[9:])


def test_answered_groups_are_remembered_without_their_traces():
    async def scenario():
        referee = Referee(**(settings()).referee_kwargs(), judge=SimulatedTraceJudge(seed=0))
        members = group("g", [0.0] * 8)
        verdicts = await asyncio.gather(*(referee.submit(m) for m in members))
        await referee.drain()
        again = await referee.submit(members[5])
        extra = await referee.submit(dataclasses.replace(members[0], sample_key="new"))
        return verdicts, again, extra, referee

    verdicts, again, extra, referee = asyncio.run(scenario())
    assert again == verdicts[5]
    assert extra.fallback == FALLBACK_OVERFLOW
    assert referee._recent["g"].members == [] and referee._recent["g"].tournament is None


def test_the_referee_remembers_as_many_groups_and_steps_as_its_settings_say():
    async def scenario():
        small = settings(group_size=2, groups_remembered=2, steps_remembered=3)
        referee = Referee(**small.referee_kwargs(), judge=SimulatedTraceJudge(seed=0))
        for step in range(1, 6):
            await asyncio.gather(*(referee.submit(m) for m in group(f"g{step}", [1.0, 0.0], step=step)))
        await referee.drain()
        return referee

    referee = asyncio.run(scenario())
    assert list(referee._recent) == ["g4", "g5"]
    assert sorted(referee._step_counters) == [3, 4, 5]
    assert referee.metrics(3)["arena/samples"] == 2.0 and referee.metrics(1)["arena/samples"] == 0.0


def test_paced_through_the_referee_spends_the_live_budget_while_the_group_arrives():
    """Traces arrive slower than verdicts: paced judges between arrivals and leaves one round for the last trace."""
    judge = SimulatedTraceJudge(sharpness=3.0, seed=1, latency_s=0.002)

    async def scenario():
        referee = Referee(**(settings(strategy="paced", final_calls=2)).referee_kwargs(), judge=judge)
        tasks = []
        for submission in group("u", [0.0] * 8):
            tasks.append(asyncio.ensure_future(referee.submit(submission)))
            await asyncio.sleep(0.01)
            if len(tasks) == 8:
                break
            tournament = referee._groups["u"].tournament
            if tournament is not None:
                await tournament.settle()  # rollout is slower than the judge: every idle round runs before the next
            if len(tasks) == 7:
                before_last = tournament.judge_calls
        verdicts = await asyncio.gather(*tasks)
        return verdicts, before_last

    verdicts, before_last = asyncio.run(scenario())
    assert before_last == 18 - 2  # everything but the last trace's two calls was judged while the group arrived
    assert all(v.route == ROUTE_TOURNAMENT and v.judge_calls == 18 for v in verdicts)
    quality = np.linspace(-2, 2, 8)
    assert kendalltau([v.reward for v in verdicts], quality).statistic > 0.5


def test_completion_grace_answers_a_complete_group_without_its_stragglers():
    class Straggling(SimulatedTraceJudge):
        straggle, calls = False, 0

        async def compare(self, *args, **kwargs):
            Straggling.calls += 1
            slow = Straggling.straggle and Straggling.calls % 5 == 0
            await asyncio.sleep(5.0 if slow else 0.01)
            return await super().compare(*args, **kwargs)

    async def scenario():
        options = settings(strategy="round_robin", speculative=False, completion_grace=3.0, group_size=6,
                           judge=judge_settings(**{**QUICK_JUDGE, "timeout_s": 1.5}))  # fmt: skip
        referee = Referee(**options.referee_kwargs(), judge=Straggling(seed=1))
        loop = asyncio.get_running_loop()
        warm = await asyncio.gather(*(referee.submit(s) for s in group("warm", [0.0] * 6)))  # the typical latency
        Straggling.straggle = True
        started = loop.time()
        verdicts = await asyncio.gather(*(referee.submit(s) for s in group("g", [1.0] * 6)))
        return warm, verdicts, loop.time() - started, referee.metrics()

    warm, verdicts, took, metrics = asyncio.run(scenario())
    assert took < 2.0  # not the 5 s stragglers
    assert metrics["arena/judge_calls_dropped"] >= 1
    assert all(v.route == ROUTE_TOURNAMENT and v.routed for v in verdicts)
    assert all(np.isfinite(v.reward) for v in warm + verdicts)


def test_an_overloaded_judge_pool_sheds_load_and_every_sample_is_answered():
    judge = SimulatedTraceJudge(sharpness=3.0, seed=1, latency_s=0.01)
    subs = [s for g in range(12) for s in group(f"g{g}", [0.0] * 8)]
    np.random.default_rng(0).shuffle(subs)

    async def scenario():  # traces arrive over ~0.2 s, the judge answers one call per ~0.01 s: it falls behind
        busy = settings(strategy="paced", judge=judge_settings(max_concurrency=1, **QUICK_JUDGE))
        referee = Referee(**busy.referee_kwargs(), judge=judge)
        tasks = []
        for submission in subs:
            tasks.append(asyncio.ensure_future(referee.submit(submission)))
            await asyncio.sleep(0.002)
        verdicts = await asyncio.gather(*tasks)
        await referee.drain()
        return verdicts, referee

    verdicts, referee = asyncio.run(scenario())
    metrics = referee.metrics()
    assert len(verdicts) == len(subs) and all(np.isfinite(v.reward) for v in verdicts)
    # Speculation is held back when a group waits idle; the rest of a complete group's budget when far behind.
    assert metrics["arena/shed_speculation"] + metrics["arena/shed_budget"] > 0
    assert metrics["arena/judge_calls_per_routed_group"] < 18  # a smaller budget, not a fallback
    assert metrics["arena/groups_routed"] == 12 and metrics["arena/fallback_deadline"] == 0


def test_the_judge_pool_cap_is_shared_by_the_referee_shards():
    def capacity(**keys):
        return Referee(**settings(judge=judge_settings(max_concurrency=32, **QUICK_JUDGE), **keys).referee_kwargs(),
                       judge=None)._limiter.capacity  # fmt: skip

    assert capacity(num_referees=3) == 11 and capacity(num_referees=64) == 1


# -- sample utilisation and position bias (the paper's Figure 5 metrics) -------------------------------------------


def expected_utilisation(groups_rewards, norm=True):
    """Hand computation of GRPO's outcome advantage per group: (r - mean) / (unbiased std + 1e-6)."""
    nonzero, total = 0, 0.0
    for rewards in groups_rewards:
        r = np.asarray(rewards, dtype=float)
        adv = (r - r.mean()) / (r.std(ddof=1) + 1e-6) if norm else r - r.mean()
        nonzero += int((np.abs(adv) > 1e-6).sum())
        total += float(np.abs(adv).sum())
    return nonzero, total


@pytest.mark.parametrize("norm", [True, False])
def test_sample_utilisation_against_rlvr_on_a_hand_made_batch(norm):
    diverse = [1, 0, 1, 0, 0, 1, 1, 0]
    batch = group("d", diverse) + group("c", [1.0] * 8) + group("w", [0.0] * 8)
    verdicts, referee = run(settings(advantage_norm_by_std=norm), batch, shuffle_seed=5)
    arena = [[v.reward for v in verdicts[i : i + 8]] for i in (0, 8, 16)]
    m = referee.metrics()
    assert m["arena/advantage_samples"] == 24
    # RLVR: only the diverse group moves the policy; the arena also spreads the two non-diverse groups.
    rlvr_nonzero, rlvr_abs = expected_utilisation([diverse, [1.0] * 8, [0.0] * 8], norm)
    assert rlvr_nonzero == 8
    assert m["arena/nonzero_advantage_share_rlvr"] == pytest.approx(8 / 24)
    assert m["arena/mean_abs_advantage_rlvr"] == pytest.approx(rlvr_abs / 24)
    arena_nonzero, arena_abs = expected_utilisation(arena, norm)
    assert arena_nonzero == 24
    assert m["arena/nonzero_advantage_share"] == pytest.approx(1.0)
    assert m["arena/mean_abs_advantage"] == pytest.approx(arena_abs / 24)
    assert m["arena/alpha"] == pytest.approx(2 / 3)
    assert m["arena/all_correct_share"] == m["arena/all_incorrect_share"] == pytest.approx(1 / 3)


def test_rlvr_mode_counts_what_the_arena_would_route_without_a_judge():
    class ExplodingJudge(SimulatedTraceJudge):
        async def compare(self, *args, **kwargs):
            raise AssertionError("rlvr must not judge")

    batch = group("d", [1, 0, 1, 0, 0, 1, 1, 0]) + group("c", [1.0] * 8) + group("w", [0.0] * 8)
    verdicts, referee = run(settings(mode="rlvr"), batch, judge=ExplodingJudge())
    assert [v.reward for v in verdicts] == [s.verifier_reward for s in batch]
    m = referee.metrics()
    assert m["arena/groups"] == 3 and m["arena/groups_uniform"] == 2 and m["arena/alpha"] == pytest.approx(2 / 3)
    assert m["arena/groups_all_correct"] == 1 and m["arena/groups_all_incorrect"] == 1
    assert m["arena/groups_routed"] == 0 and m["arena/judge_calls"] == 0
    assert m["arena/nonzero_advantage_share"] == m["arena/nonzero_advantage_share_rlvr"] == pytest.approx(1 / 3)


class FirstAlwaysWins(SimulatedTraceJudge):
    """A judge that always prefers the trace shown first: every verdict is position, none is quality."""

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.stats.calls += 1
        return 1.0


def test_position_bias_and_self_consistency_are_measured():
    verdicts, referee = run(settings(two_sided=True), group("w", [0.0] * 8), judge=FirstAlwaysWins())
    m = referee.metrics()
    calls = verdicts[0].judge_calls
    assert calls == 2 * 18 and m["arena/verdicts_decided"] == calls
    assert m["arena/first_position_win_share"] == 1.0
    # Each pair judged in both orders: the first-shown trace won both times, so never the same trace.
    assert m["arena/order_pairs"] == 18 and m["arena/self_consistency"] == 0.0
    assert "arena/order_effect" not in m  # not fitted

    _, unbiased = run(settings(two_sided=True), group("w", [0.0] * 8, qualities=np.linspace(-9, 9, 8)))
    u = unbiased.metrics()
    assert u["arena/self_consistency"] > 0.9  # qualities far apart: the better trace wins in both orders
    assert 0.3 < u["arena/first_position_win_share"] < 0.7


def test_fitted_order_effect_is_logged_when_enabled():
    round_robin = settings(order_effect=True, strategy="round_robin")
    _, referee = run(round_robin, group("w", [0.0] * 8), judge=FirstAlwaysWins())
    m = referee.metrics()
    assert m["arena/order_effect_fits"] == 1 and m["arena/order_effect"] > 1.0  # a strong first-position bonus
    assert "arena/self_consistency" not in m  # one order per pair


def test_position_figures_counts_ties_and_failures_as_undecided():
    from arena_verl.core.referee import position_figures

    figures = position_figures([(0, 1, 1.0), (1, 0, 1.0), (0, 2, 0.5), (2, 0, 0.0), (1, 2, 0.0), (2, 1, 1.0)])
    # (0,1): 0 first won, 1 first won -> different winners; (0,2): a tie, then 0 won -> one order decided only;
    # (1,2): 2 won both times -> consistent.
    assert figures == {"verdicts_decided": 5, "verdicts_first_won": 3, "order_pairs": 2, "order_pairs_consistent": 1}


def test_observe_returns_at_once_and_the_group_is_counted():
    async def scenario():
        referee = Referee(**(settings(mode="rlvr")).referee_kwargs(), judge=SimulatedTraceJudge(seed=0))
        for sub in group("c", [1.0] * 8):
            assert referee.observe(sub) is None  # nothing to wait for
        await referee.drain()
        return referee.metrics()

    m = asyncio.run(scenario())
    assert m["arena/groups"] == 1 and m["arena/groups_all_correct"] == 1 and m["arena/samples"] == 8
