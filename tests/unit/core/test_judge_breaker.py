"""The judge breaker (core/referee/breaker.py): a judge that stops answering costs one call budget, not one per group
or step; only transport failures and timeouts open it; a probe's answer closes it; 0 turns it off."""

import asyncio
import time

import pytest

from arena_verl.core.judge_protocol import JudgeStats, report_failed_attempt, report_transport_failure
from arena_verl.core.names import FALLBACK_JUDGE_DOWN
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.referee.breaker import JudgeBreaker
from arena_verl.judge import Trace
from arena_verl.settings import arena_settings


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_spell_without_answers_opens_it_and_an_answer_closes_it():
    clock = Clock()
    breaker = JudgeBreaker(open_after_s=60, probe_every_s=30, clock=clock)
    assert not breaker.failed(started_at=99.0)  # a refused connection: a spell starts
    clock.now = 150.0
    assert not breaker.failed(started_at=149.0)  # 51 s without an answer
    assert breaker.answered() is False and breaker.silent_for_s() == 0  # an answer ends the spell
    clock.now = 300.0
    assert breaker.failed(started_at=300.0 - 736)  # a call that ran out its 736 s budget: at once
    assert breaker.is_open and breaker.openings == 1
    assert not breaker.failed(started_at=299.0)  # already open
    assert breaker.answered() and not breaker.is_open and breaker.closings == 1


def test_how_long_until_a_spell_opens_it():
    clock = Clock()
    breaker = JudgeBreaker(open_after_s=60, probe_every_s=30, clock=clock)
    assert breaker.opens_in_s() is None and not breaker.overdue()  # no spell
    breaker.failed(started_at=90.0)
    assert breaker.opens_in_s() == 50.0 and not breaker.overdue()
    clock.now = 150.0
    assert breaker.opens_in_s() == 0.0 and breaker.overdue() and breaker.openings == 1
    assert breaker.opens_in_s() is None  # open


def test_off_at_zero():
    breaker = JudgeBreaker(open_after_s=0, probe_every_s=30)
    assert not breaker.failed(started_at=0.0) and not breaker.is_open
    with pytest.raises(ValueError):
        JudgeBreaker(open_after_s=-1, probe_every_s=30)


class FlakyJudge:
    """``mode``: "hang" (accepts, never answers), "refuse" (a transport failure at once), "raise" (the judge's own
    error, as a Python judge's), "answer" (the first trace wins)."""

    name = "flaky"

    def __init__(self, mode):
        self.mode, self.stats, self.calls = mode, JudgeStats(), 0

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.calls += 1
        if self.mode == "refuse_once_then_hang":  # the first call is refused, every later one hangs
            self.mode = "hang"
            report_failed_attempt()
            report_transport_failure()
            raise ConnectionRefusedError("judge server restarting")
        if self.mode == "hang":
            await asyncio.sleep(3600)
        if self.mode in ("refuse", "refuse_then_retry"):
            report_failed_attempt()
            report_transport_failure()
            if self.mode == "refuse_then_retry":  # waits out its backoff: a complete group's grace cuts it there
                await asyncio.sleep(0.3)
            raise ConnectionRefusedError("judge server gone")
        if self.mode == "raise":
            raise ValueError("not a problem this judge reads")
        return 1.0

    async def score(self, *args, **kwargs):
        return await self.compare(*args, **kwargs)


def group(uid, step, n=4):
    return [
        Submission(uid=uid, sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=0.0, step=step)
        for i in range(n)
    ]


BUDGET_S = 1.0  # one call's bound here: the waits below are measured against it, with room for a loaded machine


def referee_for(judge, budget_s=BUDGET_S, open_after_s=0.2, probe_s=0.2, grace=None):
    settings = arena_settings(
        group_size=4,
        completion_grace=grace,
        group_deadline_s=30.0,
        tournament_timeout_s=30.0,
        breaker_open_after_s=open_after_s,
        breaker_probe_s=probe_s,
    )
    kwargs = {**settings.referee_kwargs(), "call_budget_s": budget_s}
    return Referee(**kwargs, judge=judge)


async def answer(referee, uid, step):
    started = time.monotonic()
    verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in group(uid, step))), 20)
    return verdicts, time.monotonic() - started


def test_a_hung_judge_costs_one_budget_then_groups_fall_back_at_once_until_a_probe_answers():
    judge = FlakyJudge("hang")

    async def scenario():
        referee = referee_for(judge)
        first, first_s = await answer(referee, "g1", step=1)  # waits out one call budget, then opens
        second, second_s = await answer(referee, "g2", step=2)  # at once
        calls_while_open = judge.calls
        judge.mode = "answer"  # the judge is back: the next probe closes the breaker
        await asyncio.sleep(1.0)
        third, _ = await answer(referee, "g3", step=3)
        await referee.drain()
        return first, first_s, second, second_s, calls_while_open, third, referee

    first, first_s, second, second_s, calls_while_open, third, referee = asyncio.run(scenario())
    assert {v.fallback for v in first} == {FALLBACK_JUDGE_DOWN} and 0.9 * BUDGET_S < first_s < 4 * BUDGET_S
    assert {v.fallback for v in second} == {FALLBACK_JUDGE_DOWN} and second_s < BUDGET_S / 2
    assert all(v.routed for v in third) and {v.fallback for v in third} == {0}
    one, two = referee.metrics(1), referee.metrics(2)
    assert one["arena/breaker_openings"] == 1 and one["arena/fallback_judge_down"] == 4
    assert two["arena/fallback_judge_down"] == 4 and two["arena/judge_calls"] == 0  # nothing sent while open
    assert referee.metrics()["arena/breaker_closings"] == 1 and referee.metrics()["arena/breaker_probes"] >= 1
    assert calls_while_open <= 6 + 1  # the first group's calls, and at most one probe in flight
    assert referee._latency.seconds is None or referee._latency.seconds < BUDGET_S / 2  # afresh after the timeouts


def test_a_spell_opens_it_when_it_reaches_open_after_s_between_two_failures():
    """A failure starts the spell and the calls after it hang: the breaker opens ``open_after_s`` after the spell's
    start, not when a hanging call finally runs out its budget (a real run's fresh referee paid a second step)."""
    judge = FlakyJudge("refuse_once_then_hang")

    async def scenario():
        referee = referee_for(judge, budget_s=6.0, open_after_s=0.5)
        verdicts, took_s = await answer(referee, "g1", step=1)
        await referee.drain()
        return verdicts, took_s, referee

    verdicts, took_s, referee = asyncio.run(scenario())
    assert {v.fallback for v in verdicts} == {FALLBACK_JUDGE_DOWN} and took_s < 3.0  # not the 6 s budget
    assert referee.metrics(1)["arena/breaker_openings"] == 1


def test_no_group_waiting_no_opening_between_failures():
    """A failure and then nothing asked of the judge (the step ended): the spell's length alone does not open it."""
    judge = FlakyJudge("refuse")

    async def scenario():
        referee = referee_for(judge, open_after_s=0.3)
        await answer(referee, "g1", step=1)  # its calls are refused at once: a spell starts, the group is answered
        await asyncio.sleep(0.6)  # past open_after_s with no group waiting
        return referee

    referee = asyncio.run(scenario())
    assert referee.metrics()["arena/breaker_openings"] == 0 and not referee._breaker.is_open


def test_a_judge_refusing_connections_opens_it_after_open_after_s():
    judge = FlakyJudge("refuse")

    async def scenario():
        referee = referee_for(judge, open_after_s=0.15)
        verdicts = []
        for k in range(6):  # refusals come fast: each group fails its calls at once
            batch, _ = await answer(referee, f"g{k}", step=k)
            verdicts.append(batch)
            await asyncio.sleep(0.05)
        await referee.drain()
        return verdicts, referee

    verdicts, referee = asyncio.run(scenario())
    assert verdicts[0][0].fallback != FALLBACK_JUDGE_DOWN  # before open_after_s: the ordinary failure path
    assert verdicts[-1][0].fallback == FALLBACK_JUDGE_DOWN
    assert referee.metrics()["arena/breaker_openings"] == 1


@pytest.mark.parametrize("open_after_s", [0.0, 0.1], ids=["off", "on"])
def test_a_judges_own_errors_never_open_it(open_after_s):
    """A Python judge that raises on every call is there: its failures are counted, the breaker stays closed."""
    judge = FlakyJudge("raise")

    async def scenario():
        referee = referee_for(judge, open_after_s=open_after_s)
        for k in range(4):
            await answer(referee, f"g{k}", step=k)
            await asyncio.sleep(0.05)
        await referee.drain()
        return referee

    referee = asyncio.run(scenario())
    assert referee.metrics()["arena/breaker_openings"] == 0 and referee.metrics()["arena/fallback_judge_down"] == 0
    assert referee.metrics()["arena/judge_failures"] > 0


def test_off_a_hung_judge_costs_every_group_its_budget():
    judge = FlakyJudge("hang")

    async def scenario():
        referee = referee_for(judge, open_after_s=0.0)
        _, first_s = await answer(referee, "g1", step=1)
        _, second_s = await answer(referee, "g2", step=2)
        await referee.drain()
        return first_s, second_s, referee

    first_s, second_s, referee = asyncio.run(scenario())
    assert first_s > 0.9 * BUDGET_S and second_s > 0.9 * BUDGET_S  # each group waits out a budget
    assert referee.metrics()["arena/fallback_judge_down"] == 0


def test_calls_cut_at_the_grace_while_they_wait_to_retry_open_it_too():
    """A complete group's grace (completion_grace, as arena_paced sets it) cuts calls that failed on transport and
    wait to retry: they are transport failures for the breaker (a real run's judge answering garbage never opened it
    before)."""
    judge = FlakyJudge("answer")

    async def scenario():
        referee = referee_for(judge, open_after_s=0.5, grace=1.3)
        await answer(referee, "warm", step=0)  # a healthy answer first: the grace has a latency to scale
        judge.mode = "refuse_then_retry"
        for k in range(12):
            await answer(referee, f"g{k}", step=k + 1)
            await asyncio.sleep(0.05)
        await referee.drain()
        return referee

    referee = asyncio.run(scenario())
    assert referee.metrics()["arena/breaker_openings"] == 1
    assert referee.metrics()["arena/fallback_judge_down"] > 0
