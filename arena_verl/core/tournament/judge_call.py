"""One bounded judge call, the one place that wraps a judge call: a slot of the one limiter (held for the whole call),
the one deadline, the containment (whatever the judge raises is a failed call) and the outcome's validation. Whatever
the judge raises or returns that is not a verdict is a failed call (``None``), counted and logged (rate-limited), never
a win and never a crash of the tournament or its loop.

The referee bounds its judge with its pool's limiter and the call budget (:func:`bound_judge`) and hands the
tournament that :class:`BoundedJudge`, which the tournament calls as it is; a tournament given a bare judge
(:func:`~arena_verl.core.tournament.run_tournament`, ``arena-verl score``) bounds it itself, with its own
``max_concurrency`` if any. A pointwise call goes through :func:`bounded_call` directly."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from arena_verl.core.judge_protocol import current_call

__all__ = [
    "BoundedJudge",
    "CallBounds",
    "bound_judge",
    "bounded_call",
    "contained",
    "valid_outcome",
    "being_cancelled",
]

logger = logging.getLogger(__name__)

Judge = Callable[[int, int], Awaitable["float | None"]]


class LatencyObserver(Protocol):
    """What learns how long calls take (the referee's :class:`~arena_verl.core.referee.admission.LatencyEstimate`)."""

    def observe(self, took_s: float) -> None: ...

    def observe_timeout(self, ran_s: float) -> None: ...

    # Optional: a call that ended without a verdict before its deadline; ``transport``: some attempt of it reached no
    # answering judge (CallRecord.transport_failures).
    # def observe_failure(self, ran_s: float, transport: bool) -> None: ...


@dataclass(frozen=True)
class CallBounds:
    """What bounds one judge call. ``slot()`` gives the limiter's slot for one call (an async context manager, held
    for the whole call, the judge's own retries and backoff included; asked at call time, so that a priority can
    read the state of the call's group then); ``deadline_s`` the longest the call may take (a timeout is a failed
    call); ``latency`` learns each answered call's duration, and a timed-out call's as a lower bound."""

    slot: Callable[[], AbstractAsyncContextManager] | None = None
    deadline_s: float | None = None
    latency: LatencyObserver | None = None


async def bounded_call(call: Awaitable, bounds: CallBounds = CallBounds(), what: str = "judge call") -> float | None:
    """Await the judge call ``call`` within ``bounds``: its verdict (:func:`valid_outcome`), or ``None`` for a failed
    call (a timeout, anything it raised, ``SystemExit`` and ``KeyboardInterrupt`` included, or no valid verdict).
    Only the cancellation of the running task itself propagates."""
    async with bounds.slot() if bounds.slot is not None else nullcontext():
        started = time.monotonic()
        try:
            if bounds.deadline_s is None:
                outcome = await contained(call, what)
            else:
                # contained inside wait_for's own task: asyncio lets SystemExit/KeyboardInterrupt out of a task
                outcome = await asyncio.wait_for(contained(call, what), bounds.deadline_s)
        except asyncio.TimeoutError:
            if bounds.latency is not None:
                bounds.latency.observe_timeout(time.monotonic() - started)
            return None
        except asyncio.CancelledError:  # cut (a complete group's grace, a cancelled group): a call that had failed on
            record = current_call()  # transport and waited to retry is a transport failure for the breaker too
            failure = getattr(bounds.latency, "observe_failure", None)
            if failure is not None and record is not None and record.transport_failures:
                failure(time.monotonic() - started, transport=True)
            raise
        if outcome is not None and bounds.latency is not None:
            bounds.latency.observe(time.monotonic() - started)
        failure = getattr(bounds.latency, "observe_failure", None)
        if outcome is None and failure is not None:
            record = current_call()
            failure(time.monotonic() - started, transport=record is not None and record.transport_failures > 0)
    value = valid_outcome(outcome)
    if value is None and outcome is not None:
        logger.warning("%s returned an invalid outcome %r", what, outcome)
    return value


class BoundedJudge:
    """A pairwise judge whose every call is a :func:`bounded_call` (build it with :func:`bound_judge`). A
    :class:`~arena_verl.core.tournament.runner.Tournament` calls it as it is; a bare judge it bounds itself."""

    def __init__(self, judge: Judge, bounds: CallBounds):
        self.judge, self.bounds = judge, bounds

    async def __call__(self, first: int, second: int) -> float | None:
        return await bounded_call(self.judge(first, second), self.bounds, f"judge call ({first}, {second})")


def bound_judge(judge: Judge, bounds: CallBounds = CallBounds()) -> BoundedJudge:
    """``judge(first, second)`` bounded by ``bounds``; a judge already bounded is returned as it is (never twice)."""
    if isinstance(judge, BoundedJudge):
        if bounds != CallBounds():
            raise ValueError("the judge is already bounded (one limiter, one deadline); it takes no other bounds")
        return judge
    return BoundedJudge(judge, bounds)


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
