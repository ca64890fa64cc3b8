"""The judge breaker: when the judge has stopped answering, stop sending it calls.

A judge that hangs (accepts the connection, never answers) or whose every replica is gone costs each call its whole
call budget (``(retries + 1) x timeout_s`` and backoff), in waves of concurrent calls, every step, bounded only by the
tournament's timeout. Replicas are ejected one by one (:class:`~arena_verl.core.rendezvous.ReplicaRing`), but once every
one is out the calls are sent anyway. The breaker, one per referee shard, watches how its calls end:

- **closed** (the judge answers): calls go out. A call that ends in a *transport* failure (a connection refused or
  reset, a 5xx, a dead engine: the judge says so, :func:`~arena_verl.core.judge_protocol.report_transport_failure`) or
  runs out its call budget starts (or continues) a spell without an answer, dated from that call's start. Any answer
  ends the spell, and so does a call that failed otherwise (an unreadable verdict, a Python judge's own error: the judge
  is there). A spell of ``open_after_s`` seconds opens the breaker, when a call fails or, while groups wait on the
  judge, when the spell reaches that length between two failures: a call that times out after its whole budget opens
  it at once, a judge refusing connections or hanging after ``open_after_s`` from the spell's first call.
- **open**: no call is sent; the referee answers every group that waits on the judge with its verifier rewards
  (fallback ``judge_down``) and starts no tournament. Every ``probe_every_s`` one probe (a real comparison, bounded by
  ``probe_every_s``) is sent; its answer closes the breaker (a judge back at a new address answers it: the endpoint
  re-reads its URL file after a failed request).
- **closing** starts the referee's latency estimate afresh: the timed-out calls inflated it.

``open_after_s = 0`` turns it off. Pure: a clock, numbers and asyncio (no Ray, no judge).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["JudgeBreaker", "JudgeDown", "CallHealth", "unless_judge_down"]


class JudgeBreaker:
    """Whether this referee sends its judge calls (see the module docstring)."""

    def __init__(self, open_after_s: float, probe_every_s: float, clock: Callable[[], float] = time.monotonic):
        if open_after_s < 0 or probe_every_s <= 0:
            raise ValueError(f"need open_after_s >= 0 and probe_every_s > 0, got {open_after_s}, {probe_every_s}")
        self.open_after_s, self.probe_every_s, self.clock = open_after_s, probe_every_s, clock
        self.is_open = False
        self.openings = 0  # since the start
        self.closings = 0
        self.opened_at: float | None = None
        self._unanswered_since: float | None = None  # the start of the oldest unanswered failed call of this spell

    @property
    def enabled(self) -> bool:
        return self.open_after_s > 0

    def answered(self) -> bool:
        """The judge answered a call (or failed in a way only a judge that is there fails). True when this closed the
        breaker."""
        self._unanswered_since = None
        if not self.is_open:
            return False
        self.is_open, self.opened_at = False, None
        self.closings += 1
        return True

    def failed(self, started_at: float) -> bool:
        """A call that started at ``started_at`` (the clock's time) ended in a transport failure or ran out its budget.
        True when this opened the breaker."""
        if not self.enabled:
            return False
        if self._unanswered_since is None or started_at < self._unanswered_since:
            self._unanswered_since = started_at
        return self.overdue()

    def overdue(self) -> bool:
        """Open the breaker if this spell without an answer has lasted ``open_after_s``. The referee also asks between
        failures (:meth:`opens_in_s`): a hanging judge's calls fail in waves, one client timeout apart, and the spell's
        length is reached between two of them. True when this opened it."""
        if self.is_open or self.opens_in_s() != 0.0:
            return False
        self.is_open, self.opened_at = True, self.clock()
        self.openings += 1
        return True

    def opens_in_s(self) -> float | None:
        """Seconds until this spell has lasted ``open_after_s`` (0: it has); None outside a spell, while open or off."""
        if self.is_open or self._unanswered_since is None or not self.enabled:
            return None
        return max(0.0, self._unanswered_since + self.open_after_s - self.clock())

    def silent_for_s(self) -> float:
        """How long the judge has been without an answer in this spell (0 outside one)."""
        return 0.0 if self._unanswered_since is None else max(0.0, self.clock() - self._unanswered_since)


class JudgeDown(Exception):
    """The judge breaker is open: the group falls back (``judge_down``)."""


async def unless_judge_down(down: asyncio.Event, judging: Awaitable) -> Any:
    """``judging``'s result, unless ``down`` is set first: then it is cancelled and :class:`JudgeDown` raised (a group
    waiting on a judge that stopped answering falls back at once, thin-group waits included)."""
    work = asyncio.ensure_future(judging)
    waiting = asyncio.ensure_future(down.wait())
    try:
        await asyncio.wait({work, waiting}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the caller's timeout: the work goes with it
        work.cancel()
        raise
    finally:
        waiting.cancel()
    if work.done():
        return work.result()
    work.cancel()
    raise JudgeDown()


class CallHealth:
    """What learns from each bounded judge call's end (the observer of
    :class:`~arena_verl.core.tournament.judge_call.CallBounds`): the referee's latency estimate (``learn``; a probe's
    call does not teach it) and its judge breaker (``_judge_answered`` / ``_judge_silent``)."""

    def __init__(self, referee: Any, learn: bool = True):
        self.referee, self.learn = referee, learn

    def observe(self, took_s: float) -> None:
        if self.learn:
            self.referee._latency.observe(took_s)
        self.referee._judge_answered()

    def observe_timeout(self, ran_s: float) -> None:
        if self.learn:
            self.referee._latency.observe_timeout(ran_s)
        self.referee._judge_silent(ran_s)

    def observe_failure(self, ran_s: float, transport: bool) -> None:
        if transport:
            self.referee._judge_silent(ran_s)
        else:  # an answer it could not use: the judge is there
            self.referee._judge_answered()
