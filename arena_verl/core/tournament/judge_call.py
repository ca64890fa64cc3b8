"""One judge call as the tournament makes it: whatever the judge raises or returns that is not a verdict is a failed
call (``None``), counted and logged (rate-limited), never a win and never a crash of the tournament or its loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import numpy as np

__all__ = ["call_judge", "contained", "valid_outcome", "being_cancelled"]

logger = logging.getLogger(__name__)

Judge = Callable[[int, int], Awaitable["float | None"]]


async def call_judge(judge: Judge, first: int, second: int, limiter: asyncio.Semaphore | None) -> float | None:
    """One judge call; an exception or an invalid verdict is a failure (``None``), never a win or a crash."""
    what = f"judge call ({first}, {second})"
    if limiter is None:
        outcome = await contained(judge(first, second), what)
    else:
        async with limiter:
            outcome = await contained(judge(first, second), what)
    value = valid_outcome(outcome)
    if value is None and outcome is not None:
        logger.warning("judge returned an invalid outcome %r for (%d, %d)", outcome, first, second)
    return value


async def contained(call: Awaitable, what: str = "judge call"):
    """Await ``call``; whatever it raises is a failure (``None``), logged. Only the cancellation of the running task
    itself propagates: a ``CancelledError`` the judge raises on its own (an inner task of its was cancelled), and
    ``SystemExit`` / ``KeyboardInterrupt`` raised inside it, are failures too, so no judge can take the tournament,
    or the loop that runs it, down. Await it in the task that runs the call (asyncio lets ``SystemExit`` out of a
    task straight through the event loop)."""
    try:
        return await call
    except asyncio.CancelledError:
        if being_cancelled():
            raise
        logger.warning("%s raised CancelledError of its own; counted as failed", what)
        return None
    except BaseException as exc:  # noqa: BLE001  (any judge error is counted as a failure, by design)
        _FAILURE_LOG.warn(what, exc)
        return None


class _RateLimitedFailureLog:
    """Judge failures in the log without filling the disk: the first few with their traceback, then at most one line
    per ``interval_s`` saying how many were left out (a judge that keeps raising raises on every call; the failures
    themselves are always counted in the metrics)."""

    def __init__(self, full: int = 5, interval_s: float = 60.0):
        self.full, self.interval_s = full, interval_s
        self.logged, self.suppressed, self._last = 0, 0, -float("inf")

    def warn(self, what: str, exc: BaseException) -> None:
        if self.logged < self.full:
            self.logged += 1
            logger.warning("%s failed", what, exc_info=(type(exc), exc, exc.__traceback__))
            return
        now = time.monotonic()
        if now - self._last < self.interval_s:
            self.suppressed += 1
            return
        self._last = now
        logger.warning("%s failed: %r (%d similar failures not logged since the last line)", what, exc, self.suppressed)
        self.suppressed = 0


_FAILURE_LOG = _RateLimitedFailureLog()


def valid_outcome(outcome, allowed: tuple[float, ...] | None = None) -> float | None:
    """``outcome`` as a verdict (a float), or None (a failed call): only real numbers in [0, 1], soft or hard (not
    NaN or an infinity, not bool, not strings or bytes that look like numbers), and one of ``allowed`` when
    given."""
    if isinstance(outcome, (bool, np.bool_)) or not isinstance(outcome, (int, float, np.integer, np.floating)):
        return None
    value = float(outcome)
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        return None
    if allowed is not None and value not in allowed:
        return None
    return value


def being_cancelled() -> bool:
    """Whether the running task itself is being cancelled (as opposed to an awaited call raising CancelledError)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return True if cancelling is None else cancelling() > 0
