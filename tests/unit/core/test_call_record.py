"""A judge call's record (:class:`~arena_verl.core.judge_protocol.CallRecord`): what the judge reports goes to the
record of the call in progress, the one its own task (or a task it started) recorded, and nowhere outside a recorded
call; whether to count tokens is the caller's choice, read by the judge."""

import asyncio

from arena_verl.core.judge_protocol import CallRecord, counts_tokens, recording_call, report_cost


def test_costs_go_to_the_record_of_the_task_that_reports_them():
    async def call(record: CallRecord, low: int, tokens: int) -> bool:
        recording_call(record)
        asked = counts_tokens()
        for _ in range(low):
            await asyncio.sleep(0)  # the other call reports in between
            report_cost(low_mass=1)
        await asyncio.create_task(_report(tokens_in=tokens, tokens_out=0))  # a task it starts shares its record
        return asked

    async def scenario():
        one, two = CallRecord(count_tokens=True), CallRecord()
        asked = await asyncio.gather(call(one, 3, 40), call(two, 1, 7))
        return one, two, asked

    one, two, asked = asyncio.run(scenario())
    assert asked == [True, False]
    assert (one.low_mass, one.tokens_in, one.tokens_out) == (3, 40, 0)
    assert (two.low_mass, two.tokens_in, two.tokens_out) == (1, 7, 0)
    assert one.prompt_tokens is None and one.cached_tokens is None  # never reported: None, not 0


async def _report(**counts: int) -> None:
    report_cost(**counts)


def test_outside_a_recorded_call_nothing_is_recorded_and_no_tokens_are_asked():
    async def scenario():
        report_cost(low_mass=1, tokens_in=5)  # no record: nothing to do, nothing raised
        return counts_tokens()

    assert asyncio.run(scenario()) is False


def test_a_record_adds_counts_from_none_on():
    record = CallRecord()
    record.add(prompt_tokens=30, cached_tokens=0)
    record.add(prompt_tokens=12, low_mass=1)
    assert (record.prompt_tokens, record.cached_tokens, record.low_mass, record.tokens_in) == (42, 0, 1, None)
