"""A judge that dies is never mistaken for a slow one: a call cut while it waits to retry after a failed attempt is a
failure (``arena/judge_failures``), and only a call the judge was still working on without a failure is a dropped
straggler (``arena/judge_calls_dropped``). A routed group left with fewer than ``min_verdict_share`` of its planned
verdicts gets its verifier rewards (``fallback_thin``)."""

import asyncio

import pytest

from arena_verl.core.judge_protocol import CallRecord, Trace, report_failed_attempt
from arena_verl.core.names import FALLBACK_THIN
from arena_verl.core.referee import Referee, Submission
from arena_verl.core.tournament import Tournament, planned_calls
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.settings import ArenaSettings, JudgeSettings, arena_settings, judge_settings
from arena_verl.verl_edge.tracking import degraded_step_warning


def test_a_call_cut_while_waiting_to_retry_is_a_failure_and_a_slow_one_a_straggler():
    async def judge(first: int, second: int) -> float:
        if (first, second) in {(0, 1), (1, 0)}:
            return 1.0  # answered
        if 3 in (first, second):
            report_failed_attempt()  # connection refused: the judge waits to retry
        await asyncio.sleep(30)  # either waiting to retry, or still working
        return 1.0

    async def scenario():
        tournament = Tournament(4, judge, "round_robin", seed=1)
        for _ in range(4):
            tournament.add()
        await asyncio.sleep(0.05)
        return await tournament.finish(deadline_s=0.05)

    result = asyncio.run(scenario())
    assert result.judge_calls == 6 and result.answered_calls == 1
    assert result.failed_calls == 3  # the three pairs with trace 3: a failed attempt each
    assert result.dropped_calls == 2  # (0, 2) and (1, 2): the judge was still working on them


def test_a_call_record_counts_the_attempts_reported_in_its_own_task_only():
    record, other = CallRecord(), CallRecord()

    async def call(into: CallRecord, failures: int):
        from arena_verl.core.judge_protocol import recording_call

        recording_call(into)
        for _ in range(failures):
            await asyncio.sleep(0)
            report_failed_attempt()

    async def scenario():
        await asyncio.gather(call(record, 2), call(other, 0))
        report_failed_attempt()  # outside any call: nothing to record, no error

    asyncio.run(scenario())
    assert (record.failed_attempts, other.failed_attempts) == (2, 0)


class DyingServer(ModelJudge):
    """The real model judge's retry path over a server that answers ``answers`` requests ("[[A]]"), then refuses
    every connection (the process is gone)."""

    name = "dying"

    def __init__(self, settings: JudgeSettings, answers: int):
        super().__init__(settings)
        self.answers = answers

    async def _generate(self, messages, temperature, group=None):
        if self.answers <= 0:
            raise ConnectionRefusedError("judge server is gone")
        self.answers -= 1
        await asyncio.sleep(0.02)
        return "Attempt A reasons better.\n[[A]]"


def run_groups(judge, settings: ArenaSettings, groups: int, size: int = 4):
    async def scenario():
        referee = Referee(**(settings).referee_kwargs(), judge=judge)
        answers = []
        for g in range(groups):  # one group after another: the first ones teach the referee the judge's latency
            subs = [
                Submission(f"g{g}", str(i), "p", Trace(f"g{g} trace {i}"), verifier_reward=0.0, step=g)
                for i in range(size)
            ]
            answers.append(await asyncio.gather(*(referee.submit(s) for s in subs)))
            await referee.drain()
        return answers, [referee.metrics(g) for g in range(groups)]

    return asyncio.run(scenario())


# The judge dies at its 7th request: the first group got its 6 verdicts, the second one verdict.
DIES_AFTER = 7


@pytest.mark.parametrize("strategy", ["live", "paced"])
def test_a_judge_that_dies_mid_group_is_counted_as_failing_and_the_group_falls_back_as_thin(strategy):
    judge = DyingServer(judge_settings(timeout_s=5.0, retries=2, backoff_s=5.0), answers=DIES_AFTER)
    settings = arena_settings(group_size=4, strategy=strategy, completion_grace=3.0, group_deadline_s=60.0)
    planned = planned_calls(4, strategy)
    assert planned == 6
    answers, (healthy, dying) = run_groups(judge, settings, groups=2)
    assert healthy["arena/groups_routed"] == 1 and healthy["arena/judge_failures"] == 0
    # Every call made after the death had a failed attempt and was cut while waiting to retry: each a failure.
    assert dying["arena/judge_calls"] == planned
    assert dying["arena/judge_failures"] == planned - 1 and dying["arena/judge_calls_dropped"] == 0
    # One verdict of six: not routed, its samples keep their verifier reward, counted and named in the warning.
    assert dying["arena/groups_routed"] == 0 and dying["arena/samples_routed"] == 0
    assert dying["arena/fallback_thin"] == 4 and dying["arena/thin_verdict_share"] == pytest.approx(1 / 6)
    assert all(v.fallback == FALLBACK_THIN and v.reward == 0.0 for v in answers[1])
    warning = degraded_step_warning(1, dying)
    assert "thin 4 (their groups got 17% of their planned judge verdicts)" in warning
    assert "5 of 6 judge calls gave no verdict" in warning


def test_a_slower_judge_is_waited_for_past_the_grace_until_enough_verdicts_then_its_stragglers_are_dropped():
    class SlowerServer(DyingServer):
        """Healthy for the first group; then every other request takes 0.3 s (15 times the latency the referee
        learnt: far past its grace) and the rest 30 s."""

        async def _generate(self, messages, temperature, group=None):
            if self.answers <= 0:
                self.answers -= 1
                await asyncio.sleep(0.3 if self.answers % 2 else 30)
                return "[[A]]"
            return await super()._generate(messages, temperature, group)

    judge = SlowerServer(judge_settings(timeout_s=60.0, retries=2, backoff_s=5.0), answers=6)
    settings = arena_settings(group_size=4, strategy="live", completion_grace=3.0, group_deadline_s=60.0)
    _, (healthy, slower) = run_groups(judge, settings, groups=2)
    assert healthy["arena/groups_routed"] == 1
    # Cut at the grace, the group would have had no verdict (thin); it waited for three, then cut the rest: alive and
    # working, they are stragglers, not failures.
    assert slower["arena/groups_routed"] == 1 and slower["arena/fallback_thin"] == 0
    assert slower["arena/judge_failures"] == 0 and slower["arena/judge_calls_dropped"] == 3


def test_with_min_verdict_share_zero_the_one_verdict_group_is_routed_as_before():
    judge = DyingServer(judge_settings(timeout_s=5.0, retries=2, backoff_s=5.0), answers=DIES_AFTER)
    settings = arena_settings(
        group_size=4, strategy="live", completion_grace=3.0, group_deadline_s=60.0, min_verdict_share=0.0
    )
    _, (_, dying) = run_groups(judge, settings, groups=2)
    assert dying["arena/groups_routed"] == 1 and dying["arena/fallback_thin"] == 0
    assert dying["arena/judge_failures"] == 5  # the accounting does not depend on the rule


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_an_absurd_min_verdict_share_is_refused(share):
    with pytest.raises(ValueError, match="min_verdict_share"):
        arena_settings(group_size=4, min_verdict_share=share)
