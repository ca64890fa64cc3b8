"""A judge that is gone (every call of a routed group fails): the group is a counted judge_error fallback with its
verifier rewards, not a "routed" group whose fit saw only ties."""

import asyncio

import pytest

from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.referee import FALLBACK_JUDGE_ERROR, Referee, Submission
from arena_verl.settings import ArenaSettings


class GoneJudge:
    """Every call fails: raises (connection refused) or answers None (no verdict)."""

    name = "gone"

    def __init__(self, raises: bool):
        self.raises = raises
        self.stats = JudgeStats()

    async def compare(self, *args, **kwargs):
        self.stats.calls += 1
        if self.raises:
            raise ConnectionRefusedError("judge server is gone")
        return None

    async def score(self, *args, **kwargs):
        return await self.compare()


class HalfJudge(GoneJudge):
    """Every other call fails."""

    async def compare(self, *args, **kwargs):
        self.stats.calls += 1
        return None if self.stats.calls % 2 else 1.0


def answer(judge, strategy, policy="tie", size=4):
    settings = ArenaSettings(group_size=size, strategy=strategy, on_judge_failure=policy, group_deadline_s=5.0)

    async def scenario():
        referee = Referee(settings, judge)
        subs = [
            Submission(uid="g", sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=0.0, step=3)
            for i in range(size)
        ]
        verdicts = await asyncio.gather(*(referee.submit(s) for s in subs))
        await referee.drain()
        return verdicts, referee.metrics(3)

    return asyncio.run(scenario())


@pytest.mark.parametrize("raises", [True, False])
@pytest.mark.parametrize("strategy", ["live", "round_robin", "paced"])
@pytest.mark.parametrize("policy", ["tie", "drop"])
def test_a_group_whose_every_call_failed_is_a_judge_error_fallback(raises, strategy, policy):
    verdicts, metrics = answer(GoneJudge(raises), strategy, policy)
    assert all(v.reward == 0.0 and v.fallback == FALLBACK_JUDGE_ERROR and not v.routed for v in verdicts)
    assert all(v.judge_calls == v.judge_failures > 0 for v in verdicts)
    assert metrics["arena/fallback_judge_error"] == 4 and metrics["arena/samples_routed"] == 0


def test_a_group_with_some_verdicts_is_routed_without_a_fallback():
    verdicts, metrics = answer(HalfJudge(raises=False), "round_robin")
    assert all(v.routed and v.fallback == 0 and 0 < v.judge_failures < v.judge_calls for v in verdicts)
    assert metrics["arena/fallback_judge_error"] == 0


class SlowedJudge(GoneJudge):
    """Answers at once until ``hang`` is set, then never."""

    hang = False

    async def compare(self, *args, **kwargs):
        self.stats.calls += 1
        if self.hang:
            await asyncio.sleep(3600)
        await asyncio.sleep(0.01)
        return 1.0


def group_of(uid, step, reward=1.0, size=4):
    return [
        Submission(uid=uid, sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=reward, step=step)
        for i in range(size)
    ]


def test_the_completion_grace_never_cuts_a_group_that_has_no_verdict_yet():
    """The grace (judge-call latencies, learnt from a fast judge: ~13 ms) cuts stragglers of a tournament with
    verdicts in hand. A group with none waits on for its calls, here until the tournament timeout, and is then a
    judge_error fallback: it is not thrown away at 13 ms."""
    settings = ArenaSettings(
        group_size=4, strategy="paced", completion_grace=1.3, group_deadline_s=60.0, tournament_timeout_s=1.5
    )
    judge = SlowedJudge(raises=False)

    async def scenario():
        referee = Referee(settings, judge)
        fast = await asyncio.gather(*(referee.submit(s) for s in group_of("fast", 1)))
        judge.hang = True
        started = asyncio.get_running_loop().time()
        slow = await asyncio.gather(*(referee.submit(s) for s in group_of("slow", 2)))
        return fast, slow, referee.metrics(2), asyncio.get_running_loop().time() - started

    fast, slow, metrics, elapsed = asyncio.run(scenario())
    assert all(v.routed and v.fallback == 0 for v in fast)  # the judge's latency is known from this group
    assert elapsed >= 1.5  # waited for the calls, to the tournament timeout, not cut at the grace
    assert all(v.reward == 1.0 and v.fallback == FALLBACK_JUDGE_ERROR and not v.routed for v in slow)
    assert metrics["arena/fallback_judge_error"] == 4


def test_the_latency_estimate_learns_from_calls_cancelled_unanswered():
    from arena_verl.core.referee.admission import LatencyEstimate

    estimate = LatencyEstimate()
    estimate.observe_unfinished(5.0)
    assert estimate.seconds is None  # nothing answered yet: no estimate (a complete group waits for all its calls)
    estimate.observe(0.01)
    estimate.observe_unfinished(0.005)  # cancelled sooner than the estimate: says nothing
    assert estimate.seconds == 0.01
    estimate.observe_unfinished(0.013)
    assert estimate.seconds == 0.026


def test_a_judge_that_became_slower_is_used_and_its_grace_catches_up():
    """A judge that answered in 10 ms and now takes 0.1 to 0.4 s: its first slow group keeps the verdicts that came
    first (the grace, computed from the old speed, cuts the others); the estimate follows the dropped calls, so that
    within a few groups no call is dropped again."""
    settings = ArenaSettings(
        group_size=4, strategy="paced", completion_grace=1.3, group_deadline_s=60.0, tournament_timeout_s=60.0
    )

    class SlowerJudge(GoneJudge):
        latencies_s = (0.01,)

        async def compare(self, *args, **kwargs):
            self.stats.calls += 1
            await asyncio.sleep(self.latencies_s[self.stats.calls % len(self.latencies_s)])
            return 1.0

    judge = SlowerJudge(raises=False)

    async def scenario():
        referee = Referee(settings, judge)
        dropped, routed = [], []
        for number in range(8):
            if number == 1:
                judge.latencies_s = (0.1, 0.4)  # every other call a straggler
            verdicts = await asyncio.gather(*(referee.submit(s) for s in group_of(f"g{number}", number)))
            routed.append(all(v.routed for v in verdicts))
            dropped.append(referee.metrics(number)["arena/judge_calls_dropped"])
        return dropped, routed

    dropped, routed = asyncio.run(scenario())
    assert all(routed), routed
    assert dropped[0] == 0 and dropped[1] > 0  # the first slow group: cut at the old speed's grace
    assert dropped[-3:] == [0, 0, 0], dropped  # caught up
