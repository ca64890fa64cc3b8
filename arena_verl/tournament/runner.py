"""Run one group's tournament end to end: schedule pairs, present them in a random order, judge, fit strengths."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from .bradley_terry import fit_bradley_terry
from .order import mirror, present
from .schedulers import Scheduler, make_scheduler

__all__ = ["TournamentResult", "run_tournament", "FAILURE_POLICIES"]

logger = logging.getLogger(__name__)

Judge = Callable[[int, int], Awaitable["float | None"]]
FAILURE_POLICIES = ("tie", "drop")


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
        Calls that raised or returned no valid verdict.
    order_effect : float
        Fitted first-position bonus (0.0 unless ``order_effect`` was on).
    rounds_after_last_arrival : int
        Waves of concurrent judge calls from the last trace's arrival to the end: the tournament's added latency,
        in judge-call latencies, once rollout is over.
    wins, games : numpy.ndarray
        Per-trace wins (ties count half) and games over ``comparisons``.
    """

    comparisons: list[tuple[int, int, float]]
    strengths: np.ndarray
    judge_calls: int
    failed_calls: int = 0
    order_effect: float = 0.0
    rounds_after_last_arrival: int = 0
    wins: np.ndarray = field(default_factory=lambda: np.zeros(0))
    games: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def win_rate(self) -> np.ndarray:
        """Per-trace win rate over its comparisons (ties count half; 0.5 for a trace that never played)."""
        return np.divide(self.wins, self.games, out=np.full(len(self.wins), 0.5), where=self.games > 0)


async def run_tournament(
    num_items: int,
    judge: Judge,
    strategy: str = "live",
    budget: int | None = None,
    seed: int = 0,
    *,
    l2: float = 0.1,
    order_effect: bool = False,
    two_sided: bool = False,
    mirror_augment: bool = False,
    on_failure: str = "tie",
    max_concurrency: int | None = None,
) -> TournamentResult:
    """Run a tournament over ``num_items`` traces that arrive in index order.

    Parameters
    ----------
    num_items : int
        Traces in the group.
    judge : async callable ``judge(first, second) -> outcome``
        1.0 if ``first`` (shown first) won, 0.0 if ``second`` won, 0.5 for a tie, ``None`` for no verdict.
    strategy : str
        One of :data:`arena_verl.tournament.STRATEGIES`.
    budget : int, optional
        Judge calls for the budgeted strategies (default: the live tournament's count). With ``two_sided`` each
        pair costs two calls.
    seed : int
        Seeds the presentation order (and the ``random`` strategy).
    l2, order_effect
        Passed to :func:`fit_bradley_terry`.
    two_sided : bool
        Judge every pair in both orders, so that position bias cancels within the pair.
    mirror_augment : bool
        Fit on :func:`mirror` of the verdicts (the paper's augmentation).
    on_failure : {"tie", "drop"}
        What a failed call (the judge raised, returned ``None`` or an invalid outcome) becomes: a tie in the fit, or
        nothing. Either way it is counted in ``failed_calls`` and never becomes a win.
    max_concurrency : int, optional
        Cap on judge calls in flight.

    Notes
    -----
    Each arrival's matches are judged before the next trace arrives, so a run is reproducible for a given seed and
    a judge whose verdicts depend only on its inputs and its own seeded generator.
    """
    if on_failure not in FAILURE_POLICIES:
        raise ValueError(f"on_failure must be one of {FAILURE_POLICIES}, got {on_failure!r}")
    calls_per_pair = 2 if two_sided else 1
    pair_budget = None if budget is None else _pair_budget(budget, calls_per_pair)
    rng = np.random.default_rng(seed)
    scheduler = make_scheduler(strategy, num_items, pair_budget, seed=rng, l2=l2, order_effect=order_effect)
    limiter = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    state = _Tally(num_items)

    async def judge_pairs(pairs: list[tuple[int, int]]) -> None:
        shown = present(pairs, rng, two_sided)
        state.rounds += 1
        outcomes = await asyncio.gather(*(_call(judge, f, s, limiter) for f, s in shown))
        for (first, second), outcome in zip(shown, outcomes):
            state.judge_calls += 1
            if outcome is None:
                state.failed_calls += 1
                if on_failure == "tie":
                    outcome = 0.5
            if outcome is not None:
                state.record(first, second, outcome)
            scheduler.on_verdict(first, second, outcome)

    for item in range(num_items):
        if item == num_items - 1:
            state.rounds = 0
        await _drain(scheduler, judge_pairs, scheduler.on_arrival(item))
    scheduler.on_complete()
    await _drain(scheduler, judge_pairs, scheduler.on_idle())

    fit_data = mirror(state.comparisons) if mirror_augment else state.comparisons
    strengths, bias = fit_bradley_terry(num_items, fit_data, l2=l2, order_effect=order_effect, return_order_effect=True)
    return TournamentResult(
        comparisons=state.comparisons,
        strengths=strengths,
        judge_calls=state.judge_calls,
        failed_calls=state.failed_calls,
        order_effect=bias,
        rounds_after_last_arrival=state.rounds,
        wins=state.wins,
        games=state.games,
    )


class _Tally:
    def __init__(self, num_items: int):
        self.comparisons: list[tuple[int, int, float]] = []
        self.wins = np.zeros(num_items)
        self.games = np.zeros(num_items)
        self.judge_calls = 0
        self.failed_calls = 0
        self.rounds = 0

    def record(self, first: int, second: int, outcome: float) -> None:
        self.comparisons.append((first, second, outcome))
        self.wins[first] += outcome
        self.wins[second] += 1.0 - outcome
        self.games[[first, second]] += 1


async def _drain(scheduler: Scheduler, judge_pairs, pairs: list[tuple[int, int]]) -> None:
    """Judge ``pairs``, then whatever the idle scheduler asks for, until it asks for nothing."""
    while pairs:
        await judge_pairs(pairs)
        pairs = scheduler.on_idle()


async def _call(judge: Judge, first: int, second: int, limiter: asyncio.Semaphore | None) -> float | None:
    """One judge call; an exception or an invalid verdict is a failure (``None``), never a win or a crash."""
    try:
        if limiter is None:
            outcome = await judge(first, second)
        else:
            async with limiter:
                outcome = await judge(first, second)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001  (any judge error is counted as a failure, by design)
        logger.warning("judge call (%d, %d) failed", first, second, exc_info=True)
        return None
    if outcome is None:
        return None
    try:
        value = float(outcome)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        logger.warning("judge returned an invalid outcome %r for (%d, %d)", outcome, first, second)
        return None
    return value


def _pair_budget(budget: int, calls_per_pair: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget must be a non-negative integer number of judge calls, got {budget!r}")
    return int(budget) // calls_per_pair
