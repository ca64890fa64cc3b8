"""A concurrency cap that serves waiters by priority: the referee's judge calls of complete groups (which hold a
training step) go before speculative calls of groups still arriving (which may turn out diverse)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["PriorityLimiter", "PRIORITY_COMPLETE", "PRIORITY_SPECULATIVE"]

PRIORITY_COMPLETE = 0  # a complete group's calls: the step waits for them
PRIORITY_SPECULATIVE = 1  # calls of a group still arriving: wasted if it turns out diverse


class PriorityLimiter:
    """At most ``capacity`` holders at a time; a free slot goes to the waiter with the lowest priority number, and
    among equals to the earliest. A cancelled waiter leaves the queue; a slot is never lost."""

    def __init__(self, capacity: int):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        self.capacity = capacity
        self.in_use = 0
        self._queue: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()
        self.waiting = 0  # waiters queued (cancelled ones leave the count at once, the heap lazily)

    @property
    def pressure(self) -> float:
        """Queued calls per slot: 0 when the judge keeps up, above 1 when a full pool's worth is waiting."""
        return self.waiting / self.capacity

    @asynccontextmanager
    async def slot(self, priority: int = PRIORITY_COMPLETE) -> AsyncIterator[None]:
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: int) -> None:
        if self.in_use < self.capacity and not self.waiting:
            self.in_use += 1
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._queue, (priority, next(self._order), future))
        self.waiting += 1
        try:
            await future  # resolved by _release, which hands this waiter the slot (in_use already counts it)
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # the slot was handed over just as the waiter was cancelled: pass it on
            else:
                self.waiting -= 1
            raise

    def _release(self) -> None:
        self.in_use -= 1
        while self._queue and self.in_use < self.capacity:
            _, _, future = heapq.heappop(self._queue)
            if not future.done():
                self.in_use += 1
                self.waiting -= 1
                future.set_result(None)
