"""The judge pool's admission policy, over plain numbers: each referee shard's share of the pool, which calls go
first, when idle-time work is shed under load, and how long a complete group waits for its calls in flight.

The pool's load is its pressure: queued judge calls per slot (:attr:`~arena_verl.core.limiter.PriorityLimiter.pressure`;
0 when the judge keeps up, 1 when a full pool's worth is waiting).
"""

from __future__ import annotations

import math

from arena_verl.core.limiter import PRIORITY_COMPLETE, PRIORITY_SPECULATIVE

__all__ = [
    "SHED_SPECULATION_AT",
    "SHED_BUDGET_AT",
    "LATENCY_EMA",
    "pool_share",
    "call_priority",
    "shed_counter",
    "LatencyEstimate",
    "completion_deadline",
]

# Load shedding, in pressure: at or above the first, no new speculative idle-time work for groups still arriving; at
# or above the second, complete groups give up the rest of their budget too. Below both, the deadline fallback is the
# last resort.
SHED_SPECULATION_AT, SHED_BUDGET_AT = 1.0, 4.0
LATENCY_EMA = 0.05  # weight of a new call's duration in the typical judge latency (completion_grace's unit)


def pool_share(max_concurrency: int, num_referees: int) -> int:
    """The judge calls one referee shard may have in flight: ``max_concurrency`` caps the pool over all shards, each
    takes its (rounded-up) share, and at least one."""
    return max(1, math.ceil(max_concurrency / num_referees))


def call_priority(complete: bool) -> int:
    """A complete group's calls hold a training step and go first; a group still arriving may turn out diverse."""
    return PRIORITY_COMPLETE if complete else PRIORITY_SPECULATIVE


def shed_counter(pressure: float, complete: bool) -> str | None:
    """Whether a tournament's next piece of idle-time work may start at ``pressure``: None if it may, else the
    counter that records the shedding (``shed_speculation`` for a group still arriving, ``shed_budget`` for a
    complete group giving up the rest of its budget).

    Parameters
    ----------
    pressure : float
        Queued judge calls per slot of the pool.
    complete : bool
        Whether every sample of the group has arrived.
    """
    if not complete and pressure >= SHED_SPECULATION_AT:
        return "shed_speculation"
    if complete and pressure >= SHED_BUDGET_AT:
        return "shed_budget"
    return None


class LatencyEstimate:
    """The typical duration of one judge call: the first call's, then an exponential moving average (``LATENCY_EMA``)
    of the calls that gave an answer. None until one did."""

    def __init__(self) -> None:
        self.seconds: float | None = None

    def observe(self, took_s: float) -> None:
        self.seconds = took_s if self.seconds is None else self.seconds + LATENCY_EMA * (took_s - self.seconds)

    def observe_timeout(self, ran_s: float) -> None:
        """A call that ran out of its whole call budget without an answer: the judge took at least ``ran_s``. Fed to
        the average as an answer of that duration (a lower bound), so that a judge that became far slower raises its
        estimate even while it answers nothing. Calls cut at a complete group's grace are not fed: on a healthy judge
        they are its slow tail, and counting them would inflate the estimate and with it every later grace."""
        if self.seconds is not None:
            self.observe(ran_s)


def completion_deadline(grace: float | None, latency_s: float | None) -> float | None:
    """How long a complete group's tournament waits for its calls in flight (``completion_grace`` typical call
    durations); None (wait for all of them) without a grace or before any call's duration is known."""
    return grace * latency_s if grace is not None and latency_s is not None else None
