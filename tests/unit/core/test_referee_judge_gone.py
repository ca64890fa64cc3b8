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
