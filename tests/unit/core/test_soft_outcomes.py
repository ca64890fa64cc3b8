"""Soft outcomes through the core: a judge's P(first is better), a number in [0, 1], is a fractional win in the
Bradley-Terry fit (equal to choix on the same data replicated as integer wins), in mirroring, the order-effect fit,
two-sided judging, the schedulers that read verdicts (live's leaderboard, the posterior of info_gain and paced), the
tournament's tallies and the referee's position figures; hard verdicts are the special case 0 / 0.5 / 1. Anything else
a judge hands over (NaN, an infinity, a bool, a number outside [0, 1]) is a failed call, counted, never a win.
Judges here are scripted, or the SIMULATED judge in probability mode."""

from __future__ import annotations

import asyncio
import itertools

import choix
import numpy as np
import pytest
from scipy.special import expit

from arena_verl.core.judge_protocol import JudgeStats
from arena_verl.core.referee import Referee, Submission, derive_metrics, position_figures
from arena_verl.core.routing import tournament_rewards
from arena_verl.core.tournament import (
    InfoGainScheduler,
    LiveScheduler,
    fit_bradley_terry,
    live_call_count,
    mirror,
    run_tournament,
)
from arena_verl.judge import SimulatedTraceJudge, Trace
from arena_verl.judge.simulated.pairs import SimulatedJudge
from arena_verl.settings import arena_settings

# ------------------------------------------------------------------------------------------- the fit


def soft_rows(rng, num_items, count, denominator):
    """Comparisons whose outcomes are multiples of 1/denominator, and the same data as integer wins."""
    soft, wins = [], []
    for _ in range(count):
        first, second = (int(x) for x in rng.choice(num_items, size=2, replace=False))
        won = int(rng.integers(0, denominator + 1))
        soft.append((first, second, won / denominator))
        wins += [(first, second)] * won + [(second, first)] * (denominator - won)
    return soft, wins


@pytest.mark.parametrize("seed", range(6))
def test_a_soft_fit_is_choix_on_the_data_replicated_as_integer_wins(seed):
    rng = np.random.default_rng(seed)
    num_items, denominator, l2 = int(rng.integers(3, 9)), int(rng.integers(2, 6)), 0.1
    soft, wins = soft_rows(rng, num_items, int(rng.integers(4, 25)), denominator)
    ours = fit_bradley_terry(num_items, soft, l2=l2)
    # m copies of each comparison multiply the likelihood by m: the same optimum under m times the prior.
    reference = choix.opt_pairwise(num_items, wins, alpha=l2 * denominator, tol=1e-12)
    np.testing.assert_allclose(ours, reference - reference.mean(), atol=1e-6)
    assert not np.allclose(ours, 0.0)  # a fit with something to agree on


@pytest.mark.parametrize("mirrored", [False, True])
def test_the_order_effect_fit_and_mirroring_take_soft_outcomes_as_fractional_wins(mirrored):
    rng = np.random.default_rng(7)
    num_items, denominator, l2 = 6, 4, 0.05
    soft, _ = soft_rows(rng, num_items, 30, denominator)
    replicated = []  # each soft outcome as hard verdicts in its presentation order (the order effect needs it)
    for first, second, outcome in soft:
        won = round(outcome * denominator)
        replicated += [(first, second, 1.0)] * won + [(first, second, 0.0)] * (denominator - won)
    if mirrored:
        soft, replicated = mirror(soft), mirror(replicated)
        assert all(o2 == 1.0 - o1 for (_, _, o1), (_, _, o2) in zip(soft[::2], soft[1::2]))
    order_effect = not mirrored  # mirrored data carries no order effect (the settings refuse both)
    theta, h = fit_bradley_terry(num_items, soft, l2=l2, order_effect=order_effect, return_order_effect=True)
    ref_theta, ref_h = fit_bradley_terry(
        num_items, replicated, l2=l2 * denominator, order_effect=order_effect, return_order_effect=True
    )
    np.testing.assert_allclose(theta, ref_theta, atol=1e-9)
    assert h == pytest.approx(ref_h, abs=1e-9)


def test_exact_probabilities_recover_the_strengths_and_the_bias_from_one_call_per_order():
    """A judge that reports P(first wins) = sigmoid(theta_first - theta_second + h) exactly: one call per pair and
    order pins theta and h down (the likelihood's score vanishes at the truth), where hard verdicts need many."""
    truth, bias = np.array([-1.2, -0.4, 0.1, 0.6, 0.9]), 0.7
    truth = truth - truth.mean()
    rows = [(i, j, float(expit(truth[i] - truth[j] + bias))) for i, j in itertools.permutations(range(5), 2)]
    theta, h = fit_bradley_terry(5, rows, l2=1e-9, order_effect=True, return_order_effect=True)
    np.testing.assert_allclose(theta, truth, atol=1e-6)
    assert h == pytest.approx(bias, abs=1e-6)


# -------------------------------------------------------------------------------- the tournament


class ExactProbabilityJudge:
    """Scripted soft judge over indices: P(first is better) = sigmoid(q_first - q_second + bias), no noise."""

    def __init__(self, quality, bias=0.0):
        self.quality, self.bias, self.calls = np.asarray(quality, dtype=float), bias, []

    def outcome(self, first, second):
        return float(expit(self.quality[first] - self.quality[second] + self.bias))

    async def __call__(self, first, second):
        self.calls.append((first, second))
        return self.outcome(first, second)


@pytest.mark.parametrize("strategy", ["round_robin", "live", "random", "info_gain", "paced"])
def test_every_strategy_runs_on_soft_outcomes_with_its_own_call_count(strategy):
    quality = np.linspace(-1.5, 1.5, 8)
    budget = None if strategy in ("round_robin", "live") else live_call_count(8)
    soft = ExactProbabilityJudge(quality, bias=0.3)
    result = asyncio.run(run_tournament(8, soft, strategy, budget, seed=3))
    hard = asyncio.run(run_tournament(8, SimulatedJudge(quality, seed=3), strategy, budget, seed=3))
    assert result.judge_calls == hard.judge_calls == len(result.comparisons) and result.failed_calls == 0
    for first, second, outcome in result.comparisons:  # every outcome as the judge gave it
        assert outcome == soft.outcome(first, second)
    wins = np.zeros(8)
    for first, second, outcome in result.comparisons:
        wins[first] += outcome
        wins[second] += 1.0 - outcome
    np.testing.assert_allclose(result.wins, wins)
    assert result.wins.sum() == pytest.approx(result.judge_calls)  # each call hands out one win in total
    assert np.argmax(result.strengths) == 7 and np.argmin(result.strengths) == 0


def test_two_sided_soft_judging_with_the_order_effect_fit_recovers_the_judge():
    quality = np.array([0.0, 0.3, 1.0, 2.0])
    judge = ExactProbabilityJudge(quality, bias=1.5)
    result = asyncio.run(run_tournament(4, judge, "round_robin", two_sided=True, order_effect=True, seed=0, l2=1e-9))
    assert result.judge_calls == 12 and sorted(judge.calls) == sorted(itertools.permutations(range(4), 2))
    # Every pair in both orders, each outcome the exact probability: the fit is the judge's own model.
    np.testing.assert_allclose(result.strengths, quality - quality.mean(), atol=1e-6)
    assert result.order_effect == pytest.approx(1.5, abs=1e-6)
    # Without the order-effect term the bias cannot favour a trace (each is shown first as often as second): the
    # order is right, and the gaps shrink (on the logistic curve the bias pulls a pair's two outcomes towards a tie).
    plain = asyncio.run(run_tournament(4, ExactProbabilityJudge(quality, 1.5), "round_robin", two_sided=True))
    assert list(np.argsort(plain.strengths)) == [0, 1, 2, 3]
    assert np.all(np.diff(plain.strengths) < np.diff(quality))


def test_mirror_augmentation_fits_the_complement_of_each_soft_outcome():
    judge = ExactProbabilityJudge(np.array([0.0, 0.5, 1.5]), bias=0.2)
    result = asyncio.run(run_tournament(3, judge, "round_robin", mirror_augment=True, seed=1))
    expected = fit_bradley_terry(3, mirror(result.comparisons), l2=0.1)
    np.testing.assert_allclose(result.strengths, expected, atol=1e-12)
    assert all(0.0 < o < 1.0 and o != 0.5 for *_, o in result.comparisons)


def test_the_live_leaderboard_ranks_by_fractional_wins():
    live = LiveScheduler(4)
    for item in range(3):
        live.on_arrival(item)
    for first, second, outcome in [(0, 1, 0.7), (1, 2, 0.6), (0, 2, 0.45)]:
        live.on_verdict(first, second, outcome)
    # win rates: 0 (0.7 + 0.45) / 2, 2 (0.4 + 0.55) / 2, 1 (0.3 + 0.6) / 2; rounding each verdict to its side of
    # 0.5 would give every trace one win in two and the order 0, 1, 2.
    assert live.leaderboard() == [0, 2, 1]
    assert live.on_arrival(3) == [(0, 3), (2, 3), (1, 3)]


def test_info_gain_and_paced_read_a_soft_outcome_as_the_uncertainty_it_reports():
    """Ten verdicts of 0.55 leave a pair uncertain, where ten hard wins settle it: the posterior that picks the next
    pair sees the difference. The pair (1, 2) is judged 0.8 ten times: with hard wins on (0, 1) it is the one left
    most uncertain, so no tie between equal posteriors decides the pick (one rounding order would)."""
    picks = {}
    for outcome in (1.0, 0.55):
        scheduler = InfoGainScheduler(3, budget=31)
        for item in range(3):
            scheduler.on_arrival(item)
        for _ in range(10):
            scheduler.on_verdict(0, 1, outcome)
            scheduler.on_verdict(1, 2, 0.8)
            scheduler.on_verdict(0, 2, 1.0)
        scheduler.scheduled = [(0, 1), (1, 2), (0, 2)] * 10
        scheduler.on_complete()
        picks[outcome] = scheduler.on_idle()
    assert picks[0.55] == [(0, 1)] and picks[1.0] == [(1, 2)]


@pytest.mark.parametrize("strategy", ["info_gain", "paced"])
def test_a_soft_tie_schedules_as_a_hard_tie(strategy):
    """0.5 is 0.5: a judge that always reports no preference schedules exactly as one that always says tie."""

    async def tie(first, second):
        return 0.5

    async def soft_tie(first, second):
        return np.float64(0.5)

    results = [asyncio.run(run_tournament(7, judge, strategy, live_call_count(7), seed=5)) for judge in (tie, soft_tie)]
    assert results[0].comparisons == results[1].comparisons
    assert results[1].rounds_after_last_arrival == results[0].rounds_after_last_arrival


# ---------------------------------------------------------------------------- the judge boundary

NOT_OUTCOMES = [
    float("nan"),
    float("inf"),
    float("-inf"),
    np.float64("nan"),
    np.float32("inf"),
    True,
    False,
    np.bool_(False),
    1.0 + 1e-12,
    -1e-300,
    2,
    np.int64(-1),
    "0.7",
    b"1",
    complex(0.5, 0.0),
    [0.7],
]


@pytest.mark.parametrize("policy", ["tie", "drop"])
@pytest.mark.parametrize("value", NOT_OUTCOMES, ids=repr)
def test_anything_but_a_number_in_the_unit_interval_is_a_failed_call_never_a_win(value, policy):
    async def judge(first, second):
        return value

    result = asyncio.run(run_tournament(5, judge, "live", on_failure=policy, seed=0))
    assert result.failed_calls == result.judge_calls == live_call_count(5)
    assert np.all(result.strengths == 0.0)
    if policy == "tie":
        assert {o for *_, o in result.comparisons} == {0.5}
    else:
        assert result.comparisons == []


def test_failed_calls_among_soft_verdicts_are_counted_one_by_one():
    answers = itertools.cycle([0.8, float("nan"), 0.35, True, 1.5, np.float32(0.6)])

    async def judge(first, second):
        return next(answers)

    result = asyncio.run(run_tournament(6, judge, "round_robin", on_failure="drop", seed=0))
    assert result.judge_calls == 15 and result.failed_calls == 15 * 3 // 6
    assert sorted({o for *_, o in result.comparisons}) == [0.35, float(np.float32(0.6)), 0.8]


# ------------------------------------------------------------------------------ position figures


def test_position_figures_of_soft_outcomes():
    figures = position_figures(
        [
            (0, 1, 0.7), (1, 0, 0.4),  # both prefer 0: consistent
            (0, 2, 0.6), (2, 0, 0.55),  # 0 shown first preferred, then 2 shown first preferred: inconsistent
            (1, 2, 0.5), (2, 1, 0.8),  # 0.5 exactly is undecided: one order decided only, not an order pair
            (1, 3, None),  # a failed call
        ]
    )  # fmt: skip
    assert figures["verdicts_decided"] == 5
    assert figures["verdicts_first_won"] == pytest.approx(0.7 + 0.4 + 0.6 + 0.55 + 0.8)
    assert (figures["order_pairs"], figures["order_pairs_consistent"]) == (2, 1)
    derived = derive_metrics(figures)
    assert derived["arena/first_position_win_share"] == pytest.approx(3.05 / 5)
    assert derived["arena/self_consistency"] == 0.5


def test_hard_verdicts_are_the_special_case():
    hard = [(0, 1, 1.0), (1, 0, 1.0), (0, 2, 0.5), (2, 0, 0.0), (1, 2, 0.0), (2, 1, 1.0)]
    assert position_figures(hard) == {
        "verdicts_decided": 5,
        "verdicts_first_won": 3,
        "order_pairs": 2,
        "order_pairs_consistent": 1,
    }
    # A verdict a hair off 0.5 is decided, with the preference of its side.
    assert position_figures([(0, 1, 0.5000001), (1, 0, 0.4999999)])["order_pairs_consistent"] == 1


# ------------------------------------------------------------------------------------- the referee


def submissions(uid, qualities, reward=0.0):
    return [
        Submission(
            uid=uid,
            sample_key=str(i),
            problem="p",
            trace=Trace(f"trace {uid} {i}", quality_hint=float(q)),
            verifier_reward=reward,
        )
        for i, q in enumerate(qualities)
    ]


def referee_run(settings, subs, judge):
    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
        verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in subs)), 30)
        await referee.drain()
        return verdicts, referee

    return asyncio.run(scenario())


def test_soft_verdicts_reach_the_rewards_and_the_position_metrics_of_the_referee():
    """Two-sided round robin with the SIMULATED judge in probability mode without noise: every outcome is the law's
    probability, so the strengths, first-position share and self-consistency are known in closed form."""
    quality, sharpness, bias = np.array([0.0, 0.2, 1.0, 1.1, 2.5]), 2.0, 0.5
    judge = SimulatedTraceJudge(
        sharpness=sharpness, position_bias=bias, verdict="probability", concentration=float("inf"), seed=0
    )
    settings = arena_settings(group_size=5, strategy="round_robin", two_sided=True, tournament_timeout_s=10.0)
    verdicts, referee = referee_run(settings, submissions("g", quality), judge)

    def p(i, j):
        return float(expit(sharpness * (quality[i] - quality[j]) + bias))

    rows = [(i, j, p(i, j)) for i, j in itertools.permutations(range(5), 2)]
    strengths = fit_bradley_terry(5, rows, l2=settings.tournament.l2)
    np.testing.assert_allclose([v.strength for v in verdicts], strengths, atol=1e-9)
    rewards = tournament_rewards("arena", strengths, [0.0] * 5, settings.referee.reward_scale)
    np.testing.assert_allclose([v.reward for v in verdicts], rewards, atol=1e-9)
    m = referee.metrics()
    assert m["arena/judge_calls"] == 20 and m["arena/judge_failures"] == 0
    assert m["arena/verdicts_decided"] == 20
    assert m["arena/first_position_win_share"] == pytest.approx(np.mean([o for *_, o in rows]))
    # A pair is consistent when both orders prefer the same trace: |sharpness * gap| > bias.
    gaps = [abs(quality[i] - quality[j]) for i, j in itertools.combinations(range(5), 2)]
    assert m["arena/order_pairs"] == 10
    assert m["arena/self_consistency"] == pytest.approx(np.mean([sharpness * g > bias for g in gaps]))
    assert 0.0 < m["arena/self_consistency"] < 1.0  # the example has pairs of both kinds


class ScriptedJudge:
    """Answers every compare with ``outcome``; scores trace ``i`` (its text ends with ``i``) with ``scores[i]``."""

    name = "scripted"

    def __init__(self, outcome=None, scores=()):
        self.outcome, self.scores, self.stats = outcome, list(scores), JudgeStats()

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        return self.outcome

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        return self.scores[int(trace.text.rsplit(" ", 1)[1])]


@pytest.mark.parametrize("value", NOT_OUTCOMES, ids=repr)
def test_the_referee_counts_a_bad_outcome_as_a_failed_call(value):
    settings = arena_settings(group_size=4, tournament_timeout_s=10.0)
    verdicts, referee = referee_run(settings, submissions("g", [0, 1, 2, 3]), ScriptedJudge(outcome=value))
    assert all(v.judge_failures == v.judge_calls == live_call_count(4) for v in verdicts)
    assert len({v.reward for v in verdicts}) == 1 and all(v.strength == 0.0 for v in verdicts)
    m = referee.metrics()
    assert m["arena/judge_failures"] == live_call_count(4) and m["arena/verdicts_decided"] == 0


@pytest.mark.parametrize("mode", ["pointwise", "adaptive_pointwise"])
def test_pointwise_takes_expected_scores_and_refuses_bad_ones(mode):
    scores = [0.8, 0.25, float("nan"), np.float32(0.6)]
    settings = arena_settings(group_size=4, mode=mode, tournament_timeout_s=10.0)
    subs = submissions("g", [0, 1, 2, 3], reward=1.0 if mode == "adaptive_pointwise" else 0.0)
    verdicts, referee = referee_run(settings, subs, ScriptedJudge(scores=scores))
    neutral = 0.5
    expected = [0.8, 0.25, neutral, float(np.float32(0.6))]
    if mode == "adaptive_pointwise":
        expected = [1.0 + settings.referee.reward_scale * (s - 0.5) for s in expected]
    assert [v.reward for v in verdicts] == pytest.approx(expected)
    assert [v.routed for v in verdicts] == [True, True, False, True]
    assert all(v.judge_failures == 1 for v in verdicts)
    assert referee.metrics()["arena/judge_failures"] == 1
