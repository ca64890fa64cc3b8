"""A judge that returns garbage or raises anything at all: failed calls, counted, never wins, never a crash; and
inputs the referee must survive (non-string uids, non-finite verifier rewards)."""

import asyncio
import math

import numpy as np
import pytest

from arena_verl.core.judge_protocol import JudgeStats
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.tournament import valid_outcome
from arena_verl.judge import Trace
from arena_verl.settings import arena_settings


class ScriptedJudge:
    """Answers every compare/score with ``behaviour()``: a value to return or an exception to raise."""

    name = "scripted"

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.stats = JudgeStats()

    async def _answer(self):
        await asyncio.sleep(0)
        outcome = self.behaviour()
        if isinstance(outcome, BaseException) or (isinstance(outcome, type) and issubclass(outcome, BaseException)):
            raise outcome
        return outcome

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        return await self._answer()

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        return await self._answer()


def submissions(uid, n=4, reward=0.0):
    return [
        Submission(uid=uid, sample_key=str(i), problem="p", trace=Trace(f"t{i}"), verifier_reward=reward)
        for i in range(n)
    ]


def run_group(behaviour, mode="arena", uid="g", reward=0.0, n=4):
    settings = arena_settings(group_size=n, mode=mode, group_deadline_s=10.0, tournament_timeout_s=10.0)

    async def scenario():
        referee = Referee(**settings.referee_kwargs(), judge=ScriptedJudge(behaviour))
        verdicts = await asyncio.wait_for(asyncio.gather(*(referee.submit(s) for s in submissions(uid, n, reward))), 30)
        await referee.drain()
        return verdicts, referee

    return asyncio.run(scenario())


LOOKALIKES = ["1", b"1", True, " 1.0 ", np.bool_(True), "0", math.nan, math.inf, -0.5, 1.5, [1.0], {"win": 1}]


@pytest.mark.parametrize("outcome", LOOKALIKES, ids=repr)
def test_only_real_numbers_in_the_unit_interval_are_verdicts(outcome):
    assert valid_outcome(outcome) is None


@pytest.mark.parametrize("outcome", [0, 1, 0.5, np.float32(0.25), np.int64(1), 1.0])
def test_real_numbers_in_the_unit_interval_are(outcome):
    assert valid_outcome(outcome) == float(outcome)
    assert valid_outcome(0.25, allowed=(0.0, 0.5, 1.0)) is None


@pytest.mark.parametrize("outcome", ["1", b"1", True, " 1.0 "], ids=repr)
def test_look_alike_verdicts_are_failed_calls_not_wins(outcome):
    verdicts, referee = run_group(lambda: outcome)
    # Every call failed: ties (on_judge_failure=tie), so every strength is 0 and every reward equal.
    assert {v.judge_failures for v in verdicts} == {v.judge_calls for v in verdicts}
    assert len({round(v.reward, 12) for v in verdicts}) == 1
    assert all(v.strength == 0 for v in verdicts)


@pytest.mark.parametrize(
    "raised", [asyncio.CancelledError, SystemExit, KeyboardInterrupt, RuntimeError("boom")], ids=repr
)
@pytest.mark.parametrize("mode", ["arena", "pointwise"])
def test_anything_a_judge_raises_is_a_failed_call_and_every_sample_is_answered(raised, mode):
    verdicts, referee = run_group(lambda: raised, mode=mode)
    assert len(verdicts) == 4 and all(math.isfinite(v.reward) for v in verdicts)
    assert all(v.judge_failures == v.judge_calls > 0 for v in verdicts)
    assert referee.metrics()["arena/judge_failures"] == verdicts[0].judge_failures


def test_pointwise_rejects_look_alike_scores():
    verdicts, _ = run_group(lambda: True, mode="pointwise")
    assert all(v.judge_failures == 4 for v in verdicts)


@pytest.mark.parametrize("uid", [7, np.int64(5), ("a", 1), b"bytes", 3.5])
def test_non_string_uids_are_groups_too(uid):
    verdicts, referee = run_group(lambda: 1.0, uid=uid)
    assert len(verdicts) == 4 and all(v.judge_calls == 6 for v in verdicts)
    assert referee.metrics()["arena/groups"] == 1


@pytest.mark.parametrize("reward", [math.nan, math.inf, -math.inf])
def test_non_finite_verifier_rewards_never_leave_the_referee(reward):
    for mode in ("rlvr", "arena", "adaptive_pointwise", "pointwise", "tournament_all"):
        verdicts, _ = run_group(lambda: 1.0, mode=mode, reward=reward)
        assert all(math.isfinite(v.reward) for v in verdicts), mode
