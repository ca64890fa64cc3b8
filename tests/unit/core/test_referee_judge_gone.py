"""A judge that is gone (every call of a routed group fails): the group is a counted judge_error fallback with its
verifier rewards, not a "routed" group whose fit saw only ties."""

import asyncio

import pytest

from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.referee import FALLBACK_JUDGE_ERROR, Referee, Submission
from arena_verl.settings import arena_settings


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
    settings = arena_settings(group_size=size, strategy=strategy, on_judge_failure=policy, group_deadline_s=5.0)

    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
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
    settings = arena_settings(
        group_size=4, strategy="paced", completion_grace=1.3, group_deadline_s=60.0, tournament_timeout_s=1.5
    )
    judge = SlowedJudge(raises=False)

    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
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


def test_the_latency_estimate_learns_from_timed_out_calls_only():
    from arena_verl.core.referee.admission import LATENCY_EMA, LatencyEstimate

    estimate = LatencyEstimate()
    estimate.observe_timeout(5.0)
    assert estimate.seconds is None  # nothing answered yet: no estimate (a complete group waits for all its calls)
    estimate.observe(0.01)
    estimate.observe_timeout(2.0)  # the whole call budget without an answer: a lower bound, averaged in
    assert estimate.seconds == pytest.approx(0.01 + LATENCY_EMA * (2.0 - 0.01))


def test_stragglers_cut_at_the_grace_do_not_inflate_the_latency_estimate():
    """A healthy judge with a slow tail: every other call takes 3x the others, and the grace cuts them. The estimate
    (the grace's unit) follows the answered calls, not the cut ones."""
    settings = arena_settings(
        group_size=4, strategy="paced", completion_grace=1.3, group_deadline_s=60.0, tournament_timeout_s=60.0
    )

    class TailJudge(GoneJudge):
        async def compare(self, *args, **kwargs):
            self.stats.calls += 1
            await asyncio.sleep((0.02, 0.06)[self.stats.calls % 2])
            return 1.0

    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=TailJudge(raises=False))
        dropped = []
        for number in range(8):
            verdicts = await asyncio.gather(*(referee.submit(s) for s in group_of(f"g{number}", number)))
            assert all(v.routed for v in verdicts)
            dropped.append(referee.metrics(number)["arena/judge_calls_dropped"])
        return dropped, referee._latency.seconds

    dropped, estimate = asyncio.run(scenario())
    # The grace stays at 1.3 typical (answered) latencies, so the 3x tail is still cut in the last groups; an
    # estimate inflated by the cut calls would have grown until the grace covered the tail.
    assert sum(dropped[-4:]) > 0, dropped
    assert estimate < 0.06  # never above the slowest answered call (a cut call is no measurement)


def test_a_group_without_a_verdict_at_its_deadline_makes_no_new_calls():
    """Past the grace with no verdict, the tournament waits for the calls in flight, not for new waves: a judge
    that answers nothing holds the group for one call, not for the whole budget."""
    from arena_verl.core.tournament import Tournament

    calls = []

    async def judge(first, second):
        calls.append((first, second))
        await asyncio.sleep(0.2)
        return None  # no verdict

    async def scenario():
        tournament = Tournament(8, judge, strategy="info_gain", budget=18, seed=0)
        for _ in range(8):
            tournament.add()
        started = asyncio.get_running_loop().time()
        result = await tournament.finish(deadline_s=0.01)
        return result, asyncio.get_running_loop().time() - started, len(calls)

    result, elapsed, made = asyncio.run(scenario())
    assert result.failed_calls == result.judge_calls == made and made < 18
    assert elapsed < 0.5  # one wave of 0.2 s calls, not the budget's waves


def two_steps_of_one_group(judge):
    """One non-diverse group of 4 at step 1 and one at step 2, round robin (6 calls each): the metrics of step 1,
    of step 2, and of all steps."""
    settings = arena_settings(group_size=4, strategy="round_robin", group_deadline_s=5.0)

    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
        for number in (1, 2):
            await asyncio.gather(*(referee.submit(s) for s in group_of(f"g{number}", number)))
        return referee.metrics(1), referee.metrics(2), referee.metrics()

    return asyncio.run(scenario())


def test_low_mass_calls_reach_the_step_counters():
    class LowMassJudge(GoneJudge):
        async def compare(self, *args, **kwargs):
            self.stats.calls += 1
            self.stats.low_mass += self.stats.calls % 2  # every other call spread little mass on the labels
            return 0.7

    judge = LowMassJudge(raises=False)
    first, second, total = two_steps_of_one_group(judge)
    assert first["arena/judge_calls_low_mass"] == 3 and second["arena/judge_calls_low_mass"] == 3  # 6 calls each
    assert total["arena/judge_calls_low_mass"] == judge.stats.low_mass == 6


def test_the_judges_token_counts_reach_the_step_counters():
    class EngineJudge(GoneJudge):
        """Each call: a 50-token prompt with 20 cached; the group's traces (3 tokens each) counted on first sight."""

        async def compare(self, first_problem, first, second, *args, group=None, **kwargs):
            self.stats.calls += 1
            self.stats.prompt_tokens += 50
            self.stats.cached_tokens += 20
            self.seen = getattr(self, "seen", set())
            for trace in (first, second):
                if (group, trace.text) not in self.seen:
                    self.seen.add((group, trace.text))
                    self.stats.trace_tokens += 3
            return 0.7

    judge = EngineJudge(raises=False)
    first, second, total = two_steps_of_one_group(judge)
    for step in (first, second):  # round robin at N=4: 6 calls a group
        assert step["arena/judge_prompt_tokens"] == 300 and step["arena/judge_cached_tokens"] == 120
        assert step["arena/judge_trace_tokens"] == 12 and step["arena/judge_computed_tokens"] == 180
        assert step["arena/judge_computed_per_trace_token"] == 15.0
    assert total["arena/judge_prompt_tokens"] == judge.stats.prompt_tokens == 600
