"""One bounded judge call: the referee hands its tournament a judge already bounded (its pool's one limiter, the call
budget as the one deadline, one containment); the tournament calls it as it is, and bounds only a bare judge."""

import asyncio
import logging

import pytest

from arena_verl.core.limiter import PriorityLimiter
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.referee import referee as referee_module
from arena_verl.core.tournament import (
    BoundedJudge,
    CallBounds,
    Tournament,
    bound_judge,
    bounded_call,
    run_tournament,
)
from arena_verl.core.tournament import judge_call as judge_call_module
from arena_verl.judge import JudgeStats, Trace
from arena_verl.settings import arena_settings, judge_settings


class CountingJudge:
    """Answers after a short wait; counts its calls and the most it had in flight at once."""

    name = "counting"

    def __init__(self):
        self.stats = JudgeStats()
        self.calls = self.inflight = self.most_inflight = 0

    async def _answer(self, value: float) -> float:
        self.calls += 1
        self.inflight += 1
        self.most_inflight = max(self.most_inflight, self.inflight)
        try:
            await asyncio.sleep(0.01)
            return value
        finally:
            self.inflight -= 1

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        return await self._answer(1.0 if first.text < second.text else 0.0)

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        return await self._answer(0.5)


@pytest.fixture
def wrappers(monkeypatch):
    """Counts every containment of a judge call and every limiter slot taken."""
    seen = {"contained": 0, "slots": 0, "semaphores": 0}
    contained = judge_call_module.contained

    async def counted_contained(call, what="judge call"):
        # the referee's count of planned calls runs a tournament of ties that never reaches a judge: not counted
        if not getattr(call, "__qualname__", "").startswith("count_planned_calls"):
            seen["contained"] += 1
        return await contained(call, what)

    slot = PriorityLimiter.slot

    def counted_slot(self, priority=0):
        seen["slots"] += 1
        return slot(self, priority)

    semaphore = asyncio.Semaphore

    def counted_semaphore(*args, **kwargs):
        seen["semaphores"] += 1
        return semaphore(*args, **kwargs)

    monkeypatch.setattr(judge_call_module, "contained", counted_contained)
    monkeypatch.setattr(PriorityLimiter, "slot", counted_slot)
    monkeypatch.setattr("arena_verl.core.tournament.runner.asyncio.Semaphore", counted_semaphore)
    return seen


def _group(uid: str, rewards: list[float]) -> list[Submission]:
    return [
        Submission(uid=uid, sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=r, reference="1")
        for i, r in enumerate(rewards)
    ]


def _referee_run(mode: str, judge: CountingJudge, size: int = 6):
    settings = arena_settings(
        mode=mode, group_size=size, group_deadline_s=5.0, tournament_timeout_s=5.0,
        strategy="round_robin" if mode == "arena" else None, judge=judge_settings(max_concurrency=2),
    )  # fmt: skip

    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
        tournaments = []
        original = referee._new_tournament

        def spy(group):
            tournament = original(group)
            tournaments.append(tournament)
            return tournament

        referee._new_tournament = spy
        verdicts = await asyncio.gather(*(referee.submit(s) for s in _group("g", [0.0] * size)))
        return verdicts, tournaments

    return asyncio.run(scenario())


def test_a_referee_tournament_call_is_contained_once_under_one_limiter(wrappers):
    judge = CountingJudge()
    verdicts, tournaments = _referee_run("arena", judge)
    assert all(v.routed for v in verdicts)
    assert judge.calls == 15  # round robin over six traces
    assert wrappers["contained"] == judge.calls  # once per call, not twice
    assert wrappers["slots"] == judge.calls  # one slot of the pool's limiter per call
    assert wrappers["semaphores"] == 0  # and no second limiter in the tournament
    assert judge.most_inflight == 2  # the pool's cap (judge.max_concurrency / one referee) is the bound
    (tournament,) = tournaments
    assert not hasattr(referee_module, "contained")  # the referee contains nothing itself: bounded_call does
    assert isinstance(tournament._judge, BoundedJudge)
    assert not isinstance(tournament._judge.judge, BoundedJudge)  # the referee's bounded judge, not wrapped again


def test_a_pointwise_call_goes_through_the_same_bounded_call(wrappers):
    judge = CountingJudge()
    verdicts, _ = _referee_run("pointwise", judge)
    assert judge.calls == 6 and all(v.routed for v in verdicts)
    assert wrappers["contained"] == wrappers["slots"] == judge.calls
    assert judge.most_inflight == 2


def test_a_tournament_given_a_bounded_judge_calls_it_as_it_is(wrappers):
    slots = []

    class Slot:
        async def __aenter__(self):
            slots.append(1)

        async def __aexit__(self, *exc):
            return False

    async def raw(first, second):
        return 1.0

    bounded = bound_judge(raw, CallBounds(slot=Slot, deadline_s=5.0))
    assert bound_judge(bounded) is bounded  # never wrapped twice
    with pytest.raises(ValueError, match="already bounded"):
        bound_judge(bounded, CallBounds(deadline_s=1.0))
    with pytest.raises(ValueError, match="max_concurrency"):
        Tournament(4, bounded, "round_robin", max_concurrency=2)
    tournament = Tournament(4, bounded, "round_robin")
    assert tournament._judge is bounded

    async def scenario():
        for _ in range(4):
            tournament.add()
        return await tournament.finish()

    result = asyncio.run(scenario())
    assert result.judge_calls == 6 and result.failed_calls == 0
    assert wrappers["contained"] == len(slots) == 6 and wrappers["semaphores"] == 0


def test_a_bare_judge_is_bounded_by_the_tournament_once(wrappers):
    inflight, most = [0], [0]

    async def raw(first, second):
        inflight[0] += 1
        most[0] = max(most[0], inflight[0])
        await asyncio.sleep(0.005)
        inflight[0] -= 1
        return 0.5

    result = asyncio.run(run_tournament(5, raw, "round_robin", max_concurrency=1))
    assert result.judge_calls == 10 and most[0] == 1
    assert wrappers["contained"] == 10 and wrappers["semaphores"] == 1


class Latency:
    def __init__(self):
        self.answers, self.timeouts = [], []

    def observe(self, took_s):
        self.answers.append(took_s)

    def observe_timeout(self, ran_s):
        self.timeouts.append(ran_s)


def test_the_bounded_call_times_out_contains_validates_and_learns_latency(caplog):
    latency = Latency()
    bounds = CallBounds(deadline_s=0.05, latency=latency)

    async def hang():
        await asyncio.sleep(10)

    async def value(v):
        return v

    async def exits():
        raise SystemExit(3)

    async def scenario():
        assert await bounded_call(hang(), bounds) is None
        assert await bounded_call(value(0.25), bounds) == 0.25
        with caplog.at_level(logging.WARNING, logger="arena_verl.core.tournament.judge_call"):
            assert await bounded_call(value(2.0), bounds) is None  # not a verdict
        assert await bounded_call(exits(), bounds) is None  # a failed call, not the end of the loop
        # the cancellation of the running task itself still propagates
        task = asyncio.ensure_future(bounded_call(hang(), CallBounds()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert len(latency.timeouts) == 1 and latency.timeouts[0] >= 0.04
    assert len(latency.answers) == 2  # the answers, the invalid one included (the judge did answer)
    assert "invalid outcome 2.0" in caplog.text
