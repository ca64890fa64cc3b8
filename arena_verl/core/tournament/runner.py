"""Run one group's tournament end to end: schedule pairs, present them in a random order, judge, fit strengths.

Outcomes are soft: a judge answers a number in [0, 1], P(the trace shown first is better) with ties splitting their
mass (a verdict read from token probabilities); a hard verdict is the special case 0 / 0.5 / 1. Everything downstream
(the fit, mirroring, the schedulers, the win tallies) takes the number as a fractional win. This module is the
boundary where judges hand outcomes to the core: anything else (NaN, an infinity, a bool, a number outside [0, 1],
a string) is a failed call (:func:`~.judge_call.valid_outcome`), counted in ``failed_calls`` and never a win.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena_verl.core.judge_protocol import CallRecord, recording_call
from arena_verl.core.names import FAILURE_POLICIES
from arena_verl.core.options import DEFAULT_L2
from arena_verl.core.tournament.bradley_terry import fit_bradley_terry
from arena_verl.core.tournament.judge_call import BoundedJudge, CallBounds, bound_judge
from arena_verl.core.tournament.order import mirror, present
from arena_verl.core.tournament.schedulers import make_scheduler

__all__ = [
    "TournamentResult",
    "Tournament",
    "run_tournament",
    "planned_calls",
    "count_planned_calls",
    "FAILURE_POLICIES",
]

logger = logging.getLogger(__name__)

Judge = Callable[[int, int], Awaitable["float | None"]]

_WAIT_POLL_S = 0.1  # how often a tournament past its deadline looks again at what its calls in flight went through


@dataclass
class TournamentResult:
    """What a tournament produced.

    Attributes
    ----------
    comparisons : list of (first, second, outcome)
        Every verdict that entered the fit, in presentation order (failed calls as ties under the ``tie`` policy).
    strengths : numpy.ndarray
        Mean-0 Bradley-Terry strengths, one per trace.
    judge_calls : int
        Judge calls made, failed ones included.
    failed_calls : int
        Calls without a verdict after at least one failed attempt: those that raised or returned no valid verdict,
        and those cut (at the deadline, or by a cancellation) while waiting to retry after a failed attempt.
    order_effect : float
        Fitted first-position bonus (0.0 unless ``order_effect`` was on).
    rounds_after_last_arrival : int
        Waves of concurrent judge calls from the last trace's arrival to the end: the tournament's added latency,
        in judge-call latencies, once rollout is over.
    wins, games : numpy.ndarray
        Per-trace wins (an outcome ``o`` adds ``o`` to the first trace and ``1 - o`` to the second: a tie counts
        half) and games over ``comparisons``.
    dropped_calls : int
        Calls still in flight at :meth:`Tournament.finish`'s deadline with no failed attempt (the judge was still
        working on them): cancelled, not in the fit, not failures.
    skipped_idle_rounds : int
        Times the tournament's ``idle_gate`` held back the work a scheduler wanted while the judge was idle.
    """

    comparisons: list[tuple[int, int, float]]
    strengths: np.ndarray
    judge_calls: int
    failed_calls: int = 0
    order_effect: float = 0.0
    rounds_after_last_arrival: int = 0
    wins: np.ndarray = field(default_factory=lambda: np.zeros(0))
    games: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dropped_calls: int = 0
    skipped_idle_rounds: int = 0

    @property
    def answered_calls(self) -> int:
        """Calls that returned a verdict (the fit's evidence; failed calls counted as ties are not among them)."""
        return self.judge_calls - self.failed_calls - self.dropped_calls

    @property
    def win_rate(self) -> np.ndarray:
        """Per-trace win rate over its comparisons (fractional wins as in ``wins``; 0.5 for a trace that never
        played)."""
        return np.divide(self.wins, self.games, out=np.full(len(self.wins), 0.5), where=self.games > 0)


async def run_tournament(
    num_items: int,
    judge: Judge,
    strategy: str = "live",
    budget: int | None = None,
    seed: int = 0,
    **options: Any,
) -> TournamentResult:
    """Run a tournament over ``num_items`` traces that arrive in index order.

    Parameters
    ----------
    num_items : int
        Traces in the group.
    judge : async callable ``judge(first, second) -> outcome``
        A number in [0, 1]: P(``first``, shown first, is the better trace), ties splitting their mass (hard
        verdicts: 1.0 first won, 0.0 second won, 0.5 tie); ``None`` for no verdict. Anything else is a failed call.
    strategy : str
        A registered strategy (:func:`arena_verl.core.strategies.strategy_names`).
    budget : int, optional
        Judge calls for the budgeted strategies (default: the live tournament's count). With ``two_sided`` each
        pair costs two calls.
    seed : int
        Seeds the presentation order (and the ``random`` strategy).
    **options
        The keyword arguments of :class:`Tournament` (``l2``, ``order_effect``, ``two_sided``, ``mirror_augment``,
        ``on_failure``, ``max_concurrency``, ``prefix_aware``, ``strategy_options``), with its defaults.

    Notes
    -----
    Each arrival's matches, and whatever the scheduler judges while the judge is idle, are judged before the next
    trace arrives (as if traces arrived slower than verdicts), so a run is reproducible for a given seed and a judge
    whose verdicts depend only on its inputs and its own seeded generator.
    """
    tournament = Tournament(num_items, judge, strategy, budget, seed, **options)
    for _ in range(num_items):
        tournament.add()
        await tournament.settle()
    return await tournament.finish()


def planned_calls(num_items: int, strategy: str = "live", budget: int | None = None, **options: Any) -> int:
    """:func:`count_planned_calls` outside an event loop."""
    return asyncio.run(count_planned_calls(num_items, strategy, budget, **options))


async def count_planned_calls(num_items: int, strategy: str = "live", budget: int | None = None, **options) -> int:
    """Judge calls one group of ``num_items`` traces costs under this schedule (``options`` as for
    :func:`run_tournament`), with no failed call and no load shedding: the tournament itself, run with a judge that
    calls every pair a tie, so that the figure is the runner's by construction (the count does not depend on the
    verdicts; the tests check it with random ones). Raises the runner's ``ValueError`` for a schedule it refuses (a
    budget for ``live`` or ``round_robin``, one too small to connect the group)."""

    async def tie(first: int, second: int) -> float:
        return 0.5

    return (await run_tournament(num_items, tie, strategy, budget, **options)).judge_calls


class Tournament:
    """A tournament that runs while the traces of a group arrive (the engine of the live tournament).

    ``add()`` registers the next trace and starts its matches at once; ``finish()``, called when the group is
    complete, spends what the scheduler still wants, waits for every verdict and fits the strengths. ``cancel()``
    stops the calls in flight (a group that turned out diverse). ``num_items``, ``judge``, ``strategy``, ``budget``
    and ``seed`` are those of :func:`run_tournament`; the options: ``l2`` and ``order_effect`` go to
    :func:`fit_bradley_terry`; ``two_sided`` judges every pair in both orders (position bias cancels within the
    pair); ``mirror_augment`` fits on :func:`mirror` of the verdicts (the paper's augmentation); ``on_failure``
    (``"tie"`` or ``"drop"``) is what a failed call (the judge raised, returned ``None`` or an invalid outcome: see
    :func:`~.judge_call.valid_outcome`) becomes in the fit, counted in ``failed_calls`` either way and never a win;
    ``max_concurrency`` caps the calls in flight of a bare ``judge`` (a :class:`~.judge_call.BoundedJudge`, the
    referee's, is called as it is: its limiter and deadline are its own; every call is contained and validated once,
    in :func:`~.judge_call.bounded_call`); ``prefix_aware`` orders calls for the judge's prefix cache (within the
    first-position balance); ``strategy_options`` are the strategy's own knobs (its options part), passed whole to
    :func:`~arena_verl.core.tournament.schedulers.make_scheduler` (None: its defaults).
    Verdicts are recorded in the order the calls were made, so the result does not depend on judge latency.

    ``wait_for_verdicts`` decides what an arrival sees when traces come faster than verdicts. False (eager): its
    opponents are chosen at once from the verdicts in hand, so a burst of arrivals is scheduled on a leaderboard
    that has not seen their predecessors' results (the live schedule then degenerates to fixed positions). True
    (the paper's rule, and what :func:`run_tournament` does): an arrival is held until every match in flight has
    its verdict, then scheduled; the price is latency, up to one judge round per held arrival.

    ``idle_gate(complete) -> bool``, when given, is asked before the scheduler's idle-time work is started (before
    completion: speculative work on a group still arriving; after it: the rest of the budget); False holds it back
    (counted), which is how the referee sheds load when the judge cannot keep up.
    """

    def __init__(
        self,
        num_items: int,
        judge: Judge,
        strategy: str = "live",
        budget: int | None = None,
        seed: int = 0,
        *,
        l2: float = DEFAULT_L2,
        order_effect: bool = False,
        two_sided: bool = False,
        mirror_augment: bool = False,
        on_failure: str = "tie",
        max_concurrency: int | None = None,
        prefix_aware: bool = False,
        wait_for_verdicts: bool = False,
        strategy_options: Any = None,
        idle_gate: Callable[[bool], bool] | None = None,
    ):
        if on_failure not in FAILURE_POLICIES:
            raise ValueError(f"on_failure must be one of {FAILURE_POLICIES}, got {on_failure!r}")
        calls_per_pair = 2 if two_sided else 1
        pair_budget = None if budget is None else _pair_budget(budget, calls_per_pair)
        self._rng = np.random.default_rng(seed)
        self.num_items = num_items
        self.scheduler = make_scheduler(
            strategy, num_items, pair_budget, seed=self._rng, l2=l2, order_effect=order_effect, options=strategy_options
        )
        self._judge = self._bounded(judge, max_concurrency)
        self._two_sided, self._mirror, self._on_failure = two_sided, mirror_augment, on_failure
        self._prefix_aware = prefix_aware
        # Schedulers that pick pairs by the posterior balance who is shown first, and so does the prefix-aware order
        # (see order.present): it prefers a cached first trace only where the balance leaves the order open.
        balances = self.scheduler.balances_presentation or prefix_aware
        self._first_balance: dict[int, int] | None = {} if balances else None
        self._cached_first: set[int] | None = set() if prefix_aware else None  # shown first: the engine holds it
        self._l2, self._order_effect = l2, order_effect
        self._verdicts: list[tuple[int, int, int, float | None]] = []  # (call number, first, second, outcome)
        self._closed = False  # cancelled, or past its deadline without a verdict: no new calls
        self._inflight: dict[asyncio.Task, CallRecord] = {}  # each call in flight and what it went through
        self.cut_failures = 0  # calls cut while waiting to retry after a failed attempt: failures, not drops
        self._error: BaseException | None = None
        self.arrived = 0
        self.admitted = 0  # arrivals handed to the scheduler (fewer than ``arrived`` while held for verdicts)
        self.judge_calls = 0
        self._rounds_after_last = 0
        self._wait_for_verdicts = wait_for_verdicts
        self._idle_gate = idle_gate
        self.skipped_idle_rounds = 0
        self.dropped_calls = 0

    @staticmethod
    def _bounded(judge: Judge, max_concurrency: int | None) -> BoundedJudge:
        """The judge every call goes through: one already bounded (the referee's: its pool's limiter and the call
        budget) as it is, never wrapped again; a bare one contained and validated here, under ``max_concurrency``."""
        if isinstance(judge, BoundedJudge):
            if max_concurrency:
                raise ValueError("max_concurrency bounds a bare judge; this judge is bounded by its own limiter")
            return judge
        if not max_concurrency:
            return bound_judge(judge)
        limiter = asyncio.Semaphore(max_concurrency)
        return bound_judge(judge, CallBounds(slot=lambda: limiter))

    def add(self) -> int:
        """The next trace arrived; returns its index."""
        item = self.arrived
        self.arrived += 1
        if self.arrived == self.num_items:
            self._rounds_after_last = 0
        if not self._wait_for_verdicts or not self._inflight:
            self._admit_held()
        return item

    def _admit_held(self) -> None:
        """Schedule the arrivals not yet scheduled: all of them (eager), or one at a time while nothing is in
        flight (waiting for verdicts)."""
        while self.admitted < self.arrived and not (self._wait_for_verdicts and self._inflight):
            pairs = self.scheduler.on_arrival(self.admitted)
            self.admitted += 1
            self._dispatch(pairs)
            if self.admitted == self.num_items and self.scheduler.spends_rest_on_last_arrival:
                self.scheduler.on_complete()
                self._dispatch_idle(same_round=True)

    async def settle(self) -> None:
        """Wait until no judge call is in flight (follow-up calls included)."""
        await self._settle_until(None)

    async def finish(self, deadline_s: float | None = None, min_verdicts: int = 1) -> TournamentResult:
        """The group is complete: judge what the scheduler still asks for, then fit.

        ``deadline_s``: answer at most this long from now with the verdicts in hand; calls still in flight then are
        cancelled (None: wait for every call). A tournament with fewer than ``min_verdicts`` verdicts at its deadline
        waits on, making no new calls, until it has them or cannot get them from the calls in flight (each is bounded
        by the judge's call budget): cutting it there would leave too few verdicts to train on (the referee's thin
        rule would throw the group's judging away), and a judge that is merely slower than its latency estimate
        would never be used again."""
        if self.arrived != self.num_items:
            raise ValueError(f"finish() after {self.arrived} of {self.num_items} arrivals")
        until = None if deadline_s is None else asyncio.get_running_loop().time() + max(0.0, deadline_s)
        # Arrivals held for verdicts are admitted as those verdicts come in (held ones imply calls in flight).
        if await self._settle_until(until, min_verdicts):
            self.scheduler.on_complete()
            if not self._inflight:
                self._dispatch_idle()
            await self._settle_until(until, min_verdicts)
        self._drop_inflight()
        return self.result()

    async def _settle_until(self, until: float | None, min_verdicts: int = 1) -> bool:
        """``settle()`` with a deadline (loop time); False when calls are still in flight at the deadline."""
        loop = asyncio.get_running_loop()
        while self._inflight:
            timeout = None if until is None else until - loop.time()
            if timeout is not None and timeout <= 0:
                verdicts = self._verdict_count()
                # A call waiting to retry after a failed attempt is not waited for: its judge is more likely gone.
                working = sum(not record.failed_attempts for record in self._inflight.values())
                if verdicts >= min_verdicts or verdicts + working < min_verdicts:
                    return False
                # Too few verdicts to answer with, and enough calls in flight that the judge is working on to get
                # them: wait for those calls (no new ones are made), and answer once enough verdicts came. Polled:
                # a call's failed attempt ends no task, yet may settle the question.
                self._closed = True
                await asyncio.wait(set(self._inflight), timeout=_WAIT_POLL_S, return_when=asyncio.FIRST_COMPLETED)
                await asyncio.sleep(0)
                continue
            await asyncio.wait(set(self._inflight), timeout=timeout)
            await asyncio.sleep(0)  # let the done callbacks dispatch follow-ups
        if self._error is not None:
            raise self._error
        return True

    def _verdict_count(self) -> int:
        return sum(outcome is not None for *_, outcome in self._verdicts)

    def _drop_inflight(self) -> None:
        self.dropped_calls += self._cut_inflight()

    def cancel(self) -> None:
        self._closed = True  # a call that ended just before must not dispatch follow-ups from its done callback
        self._cut_inflight()

    def _cut_inflight(self) -> int:
        """Cancel every call in flight; a call that had a failed attempt is a failure (``cut_failures``). Returns
        the others: stragglers the judge was still working on."""
        stragglers = 0
        for task, record in list(self._inflight.items()):
            if task.done():  # its verdict is recorded; only its done callback has not run yet
                continue
            if record.failed_attempts:
                self.cut_failures += 1
            else:
                stragglers += 1
            task.cancel()
        self._inflight.clear()
        return stragglers

    @property
    def failures(self) -> int:
        """Calls so far that ended without a verdict after a failed attempt (see :class:`TournamentResult`)."""
        return self.cut_failures + sum(outcome is None for *_, outcome in self._verdicts)

    def result(self) -> TournamentResult:
        """Fit the verdicts received so far."""
        tally = _Tally(self.num_items)
        for _, first, second, outcome in sorted(self._verdicts):
            counted = self._counted(outcome)
            if counted is not None:
                tally.record(first, second, counted)
        fit_data = mirror(tally.comparisons) if self._mirror else tally.comparisons
        strengths, bias = fit_bradley_terry(
            self.num_items, fit_data, l2=self._l2, order_effect=self._order_effect, return_order_effect=True
        )
        return TournamentResult(
            comparisons=tally.comparisons,
            strengths=strengths,
            judge_calls=self.judge_calls,
            failed_calls=self.failures,
            order_effect=bias,
            rounds_after_last_arrival=self._rounds_after_last,
            wins=tally.wins,
            games=tally.games,
            dropped_calls=self.dropped_calls,
            skipped_idle_rounds=self.skipped_idle_rounds,
        )

    def _dispatch_idle(self, same_round: bool = False) -> None:
        """The scheduler's idle-time work, unless the gate holds it back."""
        if self._idle_gate is not None and not self._idle_gate(self.scheduler.complete):
            self.skipped_idle_rounds += 1
            return
        self._dispatch(self.scheduler.on_idle(), same_round)

    def _dispatch(self, pairs: list[tuple[int, int]], same_round: bool = False) -> None:
        if not pairs or self._closed:
            return
        if not same_round:
            self._rounds_after_last += 1
        shown = present(pairs, self._rng, self._two_sided, self._prefix_aware, self._first_balance, self._cached_first)
        for first, second in shown:
            number = self.judge_calls
            self.judge_calls += 1
            record = CallRecord()
            task = asyncio.ensure_future(self._judge_one(number, first, second, record))
            self._inflight[task] = record
            task.add_done_callback(self._on_done)

    async def _judge_one(self, number: int, first: int, second: int, record: CallRecord) -> None:
        recording_call(record)  # this task's context: the judge reports its failed attempts into the record
        outcome = await self._judge(first, second)  # a bounded call: a verdict or None, never an exception
        self._verdicts.append((number, first, second, outcome))
        self.scheduler.on_verdict(first, second, self._counted(outcome))

    def _counted(self, outcome: float | None) -> float | None:
        """What a verdict counts as: a failed call (None) is a tie or nothing, by ``on_failure``; never a win."""
        if outcome is None and self._on_failure == "tie":
            return 0.5
        return outcome

    def _on_done(self, task: asyncio.Task) -> None:
        self._inflight.pop(task, None)
        if task.cancelled() or self._closed:
            return
        if task.exception() is not None and self._error is None:
            self._error = task.exception()
        if not self._inflight and self._error is None:
            try:
                if self.admitted < self.arrived:
                    self._admit_held()  # the verdicts the held arrivals waited for are in
                else:
                    self._dispatch_idle()
            except Exception as exc:  # noqa: BLE001  (surfaced by settle())
                self._error = exc


class _Tally:
    def __init__(self, num_items: int):
        self.comparisons: list[tuple[int, int, float]] = []
        self.wins = np.zeros(num_items)
        self.games = np.zeros(num_items)

    def record(self, first: int, second: int, outcome: float) -> None:
        self.comparisons.append((first, second, outcome))
        self.wins[first] += outcome
        self.wins[second] += 1.0 - outcome
        self.games[[first, second]] += 1


def _pair_budget(budget: int, calls_per_pair: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer number of judge calls, got {budget!r}")
    return int(budget) // calls_per_pair
