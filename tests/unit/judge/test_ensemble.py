"""Judge ensembles: members asked at once and combined, a dead or hung member counted as its own failure while the
others decide, the quorum, the same members for both orders of a pair, per-member figures in the referee's metrics,
and the settings that describe them."""

import asyncio

import numpy as np
import pytest

from arena_verl.core.judge_protocol import CallRecord, JudgeStats, recording_call
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.referee.members import member_counts, member_metrics
from arena_verl.judge import Trace, make_judge
from arena_verl.judge.ensemble import EnsembleJudge, Member, combine_outcomes, combine_scores
from arena_verl.settings import arena_settings
from arena_verl.settings_judge import ENSEMBLE_SLACK_S, judge_call_bound_s, judge_settings
from arena_verl.verl_edge.tracking import ArenaMetricsReader

STEP = "python"
STEP_JUDGE = "arena_verl.judge.programs.step_judge:judge"


class QualityJudge:
    """Prefers the trace with the larger number in its text (``t3`` beats ``t1``); ``flip`` says the opposite;
    ``first`` always prefers the trace shown first."""

    def __init__(self, name="quality", how="right", latency_s=0.0):
        self.name, self.how, self.latency_s = name, how, latency_s
        self.stats = JudgeStats()
        self.asked: list[tuple[str, str]] = []

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.stats.calls += 1
        self.asked.append((first.text, second.text))
        await asyncio.sleep(self.latency_s)
        if self.how == "first":
            return 1.0
        better = 1.0 if int(first.text[1:]) > int(second.text[1:]) else 0.0
        return 1.0 - better if self.how == "flip" else better

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        return int(trace.text[1:]) / 10


class DeadJudge:
    """Raises on every call (a crashed server), or never answers (``hang``)."""

    def __init__(self, hang=False):
        self.name, self.hang = "dead", hang
        self.stats = JudgeStats()

    async def compare(self, *args, **kwargs):
        self.stats.calls += 1
        if self.hang:
            await asyncio.sleep(3600)
        raise ConnectionError("judge server gone")

    async def score(self, *args, **kwargs):
        return await self.compare()


def test_mean_and_majority():
    assert combine_outcomes([1.0, 0.0, 1.0], "mean") == pytest.approx(2 / 3)
    assert combine_outcomes([1.0, 0.0, 1.0], "majority") == 1.0
    assert combine_outcomes([0.9, 0.2], "majority") == 0.5  # one each way: a tie
    assert combine_outcomes([0.5, 0.4, 0.5], "majority") == 0.0  # ties abstain
    assert combine_scores([0.0, 1.0, 1.0], "majority") == 1.0
    assert combine_scores([0.0, 1.0], "mean") == 0.5


def ensemble(*judges, bound_s=5.0, **options):
    return EnsembleJudge([Member(f"m{i}", judge, bound_s) for i, judge in enumerate(judges)], **options)


def ask(judge, first="t3", second="t1"):
    async def call():
        record = CallRecord()
        recording_call(record)
        outcome = await judge.compare("p", Trace(first), Trace(second), group="g")
        return outcome, record

    return asyncio.run(call())


@pytest.mark.parametrize("hang", [False, True], ids=["raises", "hangs"])
def test_a_dead_member_is_its_own_failure_and_the_others_decide(hang):
    judge = ensemble(QualityJudge(), DeadJudge(hang=hang), QualityJudge(how="flip"), bound_s=0.2, combine="mean")
    outcome, record = ask(judge)
    assert outcome == 0.5  # right (1) and flipped (0); the dead member's failure is not a vote
    assert record.members == {"m0": 1.0, "m1": None, "m2": 0.0}
    assert record.failed_attempts == 0  # the quorum (1) was met: the call did not fail
    assert (judge.stats.calls, judge.stats.failures) == (1, 0)


def test_below_the_quorum_the_call_fails_and_says_so_at_once():
    judge = ensemble(QualityJudge(), DeadJudge(), DeadJudge(), quorum=2)
    outcome, record = ask(judge)
    assert outcome is None
    assert record.failed_attempts == 1  # marked once the quorum was out of reach: a cut call is a failure
    assert (judge.stats.calls, judge.stats.failures) == (1, 1)


def test_both_orders_of_a_pair_go_to_the_same_members():
    members = [QualityJudge(name=f"q{i}") for i in range(5)]
    judge = ensemble(*members, per_comparison=2, seed=7)
    for a, b in [("t1", "t2"), ("t3", "t9"), ("t4", "t5"), ("t6", "t7")]:
        before = [len(m.asked) for m in members]
        ask(judge, a, b)
        ask(judge, b, a)
        grew = [len(m.asked) - n for m, n in zip(members, before)]
        assert sorted(grew) == [0, 0, 0, 2, 2]  # two members, each asked both orders
    assert sum(len(m.asked) > 0 for m in members) >= 3  # the choice varies with the pair


def test_member_figures_in_the_referee_metrics():
    """Two right members, a first-position-biased one and a dead one: every group routed, the dead member's calls
    all failures, the biased member always first, and the right member's certainty above the biased one's."""
    n, groups = 4, 6
    settings = arena_settings(group_size=n, strategy="round_robin", two_sided=True, group_deadline_s=10.0)
    judge = EnsembleJudge(
        [Member("right", QualityJudge(), 5.0), Member("right2", QualityJudge(), 5.0),
         Member("biased", QualityJudge(how="first"), 5.0), Member("dead", DeadJudge(), 5.0)],
        combine="mean",
    )  # fmt: skip

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=judge)
        subs = [
            Submission(uid=f"g{g}", sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=0.0, step=1)
            for g in range(groups)
            for i in range(n)
        ]
        verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in subs)), 30)
        await referee.drain()
        return verdicts, referee.metrics(1)

    verdicts, metrics = asyncio.run(scenario())
    calls = groups * n * (n - 1)  # round robin, both orders
    assert metrics["arena/judge_calls"] == calls and metrics["arena/judge_failures"] == 0
    assert all(v.routed for v in verdicts)
    member = "arena/judge_member/"
    assert metrics[member + "dead/calls"] == metrics[member + "dead/failures"] == calls
    assert metrics[member + "dead/failure_share"] == 1.0
    assert metrics[member + "dead/certainty"] == 0.0  # its failures count as ties (on_judge_failure): no contrast
    assert metrics[member + "biased/first_position_win_share"] == 1.0
    assert metrics[member + "right/first_position_win_share"] == pytest.approx(0.5)
    assert metrics[member + "right/certainty_groups"] == metrics[member + "biased/certainty_groups"] == groups
    assert metrics[member + "right/certainty"] > 0.3 > metrics[member + "biased/certainty"]
    # The mean of two right members and an always-first one: 1 when the first is better, 1/3 otherwise (sides).
    assert metrics[member + "right/agreement"] == pytest.approx(1.0)
    assert metrics[member + "biased/agreement"] == pytest.approx(0.5)


def test_the_tracker_sums_member_counters_over_shards_and_steps():
    settings = arena_settings(num_referees=2)
    reads = iter(
        [
            ({"arena/judge_member/a/calls": 4.0, "arena/judge_member/a/failures": 1.0}, {}),
            ({"arena/judge_member/a/calls": 2.0, "arena/judge_member/a/failures": 0.0}, {}),
            ({"arena/judge_member/a/calls": 10.0, "arena/judge_member/a/failures": 1.0}, {}),
            ({"arena/judge_member/a/calls": 2.0, "arena/judge_member/a/failures": 2.0}, {}),
        ]
    )
    reader = ArenaMetricsReader(settings, read_shard=lambda shard: next(reads))
    first, second = reader.step_metrics(), reader.step_metrics()
    assert first["arena/judge_member/a/calls"] == 6 and first["arena/judge_member/a/failure_share"] == 1 / 6
    assert second["arena/judge_member/a/calls"] == 6 and second["arena/judge_member/a/failures"] == 2


def test_member_certainty_of_a_coin_is_below_a_consistent_members():
    rng = np.random.default_rng(0)
    pairs = [(a, b) for a in range(6) for b in range(6) if a != b]
    calls = [(a, b, None, {"right": float(a > b), "coin": float(rng.random() < 0.5)}) for a, b in pairs]
    counts = member_counts(6, calls, routed=True, l2=0.1, order_effect=False)
    figures = member_metrics(counts)
    assert figures["arena/judge_member/right/certainty"] > 0.8
    assert figures["arena/judge_member/coin/certainty"] < 0.3
    unrouted = member_counts(6, calls, routed=False, l2=0.1, order_effect=False)
    assert unrouted["judge_member/right/calls"] == len(pairs) and "judge_member/right/certainty_groups" not in unrouted


# --- settings ---


def test_members_read_on_top_of_the_judge_block():
    judge = judge_settings(
        backend=STEP,
        callable=STEP_JUDGE,
        timeout_s=30.0,
        ensemble={
            "members": [
                {"name": "noisy", "callable_kwargs": {"accuracy": 0.7, "position_bias": 0.3}},
                {"backend": "simulated", "timeout_s": 5.0},
            ],
            "combine": "majority",
        },
    )
    (n0, primary), (n1, noisy), (n2, sim) = judge.voters()
    assert (n0, n1, n2) == ("judge", "noisy", "member2")
    assert primary.ensemble.members == () and primary.key("callable") == STEP_JUDGE
    assert noisy.key("callable") == STEP_JUDGE and noisy.timeout_s == 30.0  # the block's keys, its own kwargs
    assert noisy.key("callable_kwargs") == {"accuracy": 0.7, "position_bias": 0.3}
    assert sim.backend == "simulated" and sim.timeout_s == 5.0  # another backend: the common keys only
    # The slowest member's bound (python: its timeout, 30 s; the simulated member: its retries', 46 s) and a second.
    assert judge_call_bound_s(primary) == 30.0 and judge_call_bound_s(sim) == 46.0
    assert judge_call_bound_s(judge) == 46.0 + ENSEMBLE_SLACK_S
    built = make_judge(judge)
    assert isinstance(built, EnsembleJudge) and [m.name for m in built.members] == ["judge", "noisy", "member2"]
    assert built.combine == "majority" and not built.simulated
    assert judge_settings(**judge.as_keys()).voters()[1][1] == noisy  # as_keys reads back


def test_one_judge_without_members_is_built_as_before():
    judge = judge_settings(backend="simulated")
    assert len(judge.voters()) == 1 and not isinstance(make_judge(judge), EnsembleJudge)
    assert "ensemble" not in judge.as_keys()


@pytest.mark.parametrize(
    "ensemble, message",
    [
        ({"members": [{"backend": "nope"}]}, "members[0].backend must be one of"),
        ({"members": [{"timeout_s": -1}]}, "members[0].timeout_s must be in"),
        ({"members": [{"name": "judge"}]}, "two members are named 'judge'"),
        ({"members": [{"name": "a b"}]}, "member name 'a b'"),
        ({"members": [{}], "per_comparison": 3}, "per_comparison=3 is more than"),
        ({"members": [{}], "quorum": 3}, "quorum=3 is more than"),
        ({"members": ["simulated"]}, "members must be a list of mappings"),
        ({"members": [{"ensemble": {"members": [{}]}}]}, "members do not nest"),
        ({"members": [{"backend": "python"}], "combine": "vote"}, "combine must be one of"),
        ({"members": [{"backend": "python", "verdict": "probability"}]}, "members[0].verdict=probability"),
    ],
)
def test_bad_members_are_refused_by_key(ensemble, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        judge_settings(backend="simulated", ensemble=ensemble)


def test_a_member_missing_what_its_backend_needs_is_named():
    judge = judge_settings(ensemble={"members": [{"backend": "openai"}]})
    with pytest.raises(ValueError, match=r"members\[0\]\.base_url is required"):
        judge.require()


# --- what the review found ---


def test_a_hung_member_runs_out_its_own_bound_before_the_ensemble_call_does():
    """Members built from settings, the call bounded as the referee bounds it (judge_call_bound_s): a member that
    never answers fails alone, and the step judge's verdict is the call's."""
    from arena_verl.core.tournament.judge_call import CallBounds, bounded_call

    settings = judge_settings(
        backend=STEP,
        callable=STEP_JUDGE,
        timeout_s=0.3,
        ensemble={"members": [{"name": "hung", "callable_kwargs": {"latency_s": 3600}}]},
    )
    judge = make_judge(settings)

    async def call():
        record = CallRecord()
        recording_call(record)
        problem = "Compute 2+3 step by step."
        compare = judge.compare(problem, Trace("2+3=5\nAnswer: 5"), Trace("2+3=6\nAnswer: 6"))
        outcome = await bounded_call(compare, CallBounds(deadline_s=judge_call_bound_s(settings)))
        await judge.close()
        return outcome, record

    outcome, record = asyncio.run(call())
    assert outcome == 1.0 and record.members == {"judge": 1.0, "hung": None}


def test_once_the_quorum_is_out_of_reach_the_call_fails_without_waiting():
    import time

    judge = ensemble(DeadJudge(), DeadJudge(hang=True), QualityJudge(), bound_s=30.0, quorum=3)
    started = time.monotonic()
    outcome, record = ask(judge)
    assert outcome is None and record.failed_attempts == 1
    assert time.monotonic() - started < 5  # not the hung member's 30 s
    assert record.members["m1"] is None  # cancelled: no verdict


def test_a_member_that_raises_before_awaiting_is_its_own_failure():
    class Rude(QualityJudge):
        def compare(self, *args, **kwargs):  # not a coroutine function: raises at the call
            raise RuntimeError("bad deploy")

    outcome, record = ask(ensemble(QualityJudge(), Rude()))
    assert outcome == 1.0 and record.members == {"m0": 1.0, "m1": None}


def test_ready_and_close_reach_every_member():
    class Engine(QualityJudge):
        def __init__(self, fail=False):
            super().__init__()
            self.fail, self.events = fail, []

        async def ready(self):
            self.events.append("ready")

        async def close(self):
            self.events.append("close")
            if self.fail:
                raise OSError("engine already gone")

    members = [Engine(fail=True), Engine(), QualityJudge()]
    judge = ensemble(*members)

    async def lifecycle():
        await judge.ready()
        await judge.close()

    asyncio.run(lifecycle())
    assert members[0].events == members[1].events == ["ready", "close"]


def test_a_member_with_its_own_address_inherits_no_url_file():
    judge = judge_settings(
        backend="openai",
        model_path="judge",
        base_url_file="/shared/judge_url",
        ensemble={"members": [{"name": "b", "base_url": "http://b:8000/v1"}, {"name": "c"}]},
    )
    (_, _), (_, b), (_, c) = judge.voters()
    assert (b.key("base_url"), b.key("base_url_file")) == ("http://b:8000/v1", None)
    assert c.key("base_url_file") == "/shared/judge_url" and b.key("model_path") == "judge"


def test_soft_member_verdicts_count_by_weight_and_failures_as_ties():
    calls = [(0, 1, 0.65, {"soft": 0.7, "gone": None}), (1, 0, 0.6, {"soft": 0.6, "gone": None})]
    counts = member_counts(2, calls, routed=True, l2=0.1, order_effect=False)
    assert counts["judge_member/soft/first_won"] == pytest.approx(1.3) and counts["judge_member/soft/decided"] == 2
    figures = member_metrics(counts)
    assert figures["arena/judge_member/gone/certainty"] == 0.0  # counted in the group, without a verdict
    assert figures["arena/judge_member/gone/certainty_groups"] == 1
