"""The referee's priority limiter: a cap, priority order, FIFO among equals, cancellation never loses a slot."""

import asyncio

import pytest

from arena_verl.core.limiter import PRIORITY_COMPLETE, PRIORITY_SPECULATIVE, PriorityLimiter


def test_cap_and_priority_order():
    async def scenario():
        limiter = PriorityLimiter(2)
        order, peak, release = [], [0], asyncio.Event()

        async def call(name, priority):
            async with limiter.slot(priority):
                peak[0] = max(peak[0], limiter.in_use)
                order.append(name)
                await release.wait()

        holders = [asyncio.create_task(call(f"hold{i}", PRIORITY_COMPLETE)) for i in range(2)]
        await asyncio.sleep(0)
        queued = [asyncio.create_task(call(name, p)) for name, p in
                  (("spec1", PRIORITY_SPECULATIVE), ("done1", PRIORITY_COMPLETE), ("spec2", PRIORITY_SPECULATIVE),
                   ("done2", PRIORITY_COMPLETE))]  # fmt: skip
        await asyncio.sleep(0)
        assert limiter.waiting == 4 and limiter.pressure == 2.0
        release.set()
        await asyncio.gather(*holders, *queued)
        return order, peak[0], limiter

    order, peak, limiter = asyncio.run(scenario())
    assert order == ["hold0", "hold1", "done1", "done2", "spec1", "spec2"]
    assert peak == 2 and limiter.in_use == 0 and limiter.waiting == 0


def test_a_cancelled_waiter_gives_its_turn_away():
    async def scenario():
        limiter = PriorityLimiter(1)
        gate = asyncio.Event()
        served = []

        async def call(name):
            async with limiter.slot():
                served.append(name)
                await gate.wait()

        first = asyncio.create_task(call("first"))
        await asyncio.sleep(0)
        doomed, last = asyncio.create_task(call("doomed")), asyncio.create_task(call("last"))
        await asyncio.sleep(0)
        doomed.cancel()
        await asyncio.sleep(0)
        assert limiter.waiting == 1
        gate.set()
        await asyncio.gather(first, last)
        with pytest.raises(asyncio.CancelledError):
            await doomed
        return served, limiter

    served, limiter = asyncio.run(scenario())
    assert served == ["first", "last"] and limiter.in_use == 0


def test_capacity_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ValueError):
            PriorityLimiter(bad)
