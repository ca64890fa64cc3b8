"""Who plays whom: schedulers that pick the pairs of traces to judge as the traces of a group arrive.

A scheduler is driven by four events:

- ``on_arrival(item) -> pairs``: trace ``item`` finished; traces arrive in index order ``0..N-1``.
- ``on_verdict(first, second, outcome)``: a judged comparison in presentation order (outcome in [0, 1], P(first is
  better): 1 = first won, 0.5 = tie, or any soft value between; ``None`` = the judge gave no verdict, which is not
  recorded). A soft outcome is a fractional win everywhere a scheduler reads verdicts: in ``live``'s leaderboard and
  in the posterior of ``info_gain`` and ``paced``.
- ``on_complete()``: every trace has arrived (the group is complete).
- ``on_idle() -> pairs``: no judge call is in flight. After ``on_complete``, an empty answer ends the tournament.
  Before it, most schedulers answer nothing (they judge on arrivals only); :class:`PacedScheduler` uses the judge's
  idle time while the group still arrives.

Pairs are unordered ``(a, b)`` with ``a < b``. The driver (:func:`arena_verl.core.tournament.run_tournament`, or the
referee of the reward manager) judges what it is given. Schedulers only pick pairs; presentation order, retries,
failure policy and fitting belong to the driver. Budgets are counted in pairs.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from scipy.special import ndtr

from arena_verl.core.options import DEFAULT_L2
from arena_verl.core.strategies import PacedOptions, strategy_of
from arena_verl.core.tournament.bradley_terry import bradley_terry_posterior

__all__ = [
    "Scheduler",
    "RoundRobinScheduler",
    "LiveScheduler",
    "RandomScheduler",
    "InfoGainScheduler",
    "PacedScheduler",
    "live_call_count",
    "round_robin_call_count",
    "make_scheduler",
    "scheduler_class",
]

Pair = tuple[int, int]


def round_robin_call_count(num_items: int) -> int:
    """Number of distinct pairs, N(N-1)/2."""
    return num_items * (num_items - 1) // 2


def live_call_count(num_items: int) -> int:
    """Calls of the live tournament: 1 + 2 + 3(N-3) for N >= 3 (18 for N=8, 42 for N=16); all pairs below."""
    if num_items < 3:
        return round_robin_call_count(num_items)
    return 3 * num_items - 6


class Scheduler(ABC):
    """Base class: keeps the arrivals and the verdicts seen so far."""

    # True: the driver completes the scheduler and asks on_idle() right after the last arrival, without waiting for
    # the calls in flight, and judges what it returns in the same round as the last arrival's matches.
    spends_rest_on_last_arrival = False
    # True: the driver shows first, in each pair, the trace shown first less often so far (order.present's balance).
    balances_presentation = False

    def __init__(self, num_items: int):
        if isinstance(num_items, bool) or not isinstance(num_items, (int, np.integer)) or num_items < 1:
            raise ValueError(f"num_items must be a positive integer, got {num_items!r}")
        self.num_items = int(num_items)
        self.arrived = 0
        self.comparisons: list[tuple[int, int, float]] = []
        self.complete = False

    def on_arrival(self, item: int) -> list[Pair]:
        if item != self.arrived or item >= self.num_items:
            raise ValueError(f"expected item {self.arrived} to arrive next (of {self.num_items}), got {item}")
        self.arrived += 1
        return self._arrival_pairs(item)

    def on_verdict(self, first: int, second: int, outcome: float | None) -> None:
        if outcome is not None:
            self.comparisons.append((first, second, outcome))

    def on_complete(self) -> None:
        if self.arrived != self.num_items:
            raise ValueError(f"group complete after {self.arrived} of {self.num_items} arrivals")
        self.complete = True

    def on_idle(self) -> list[Pair]:
        return self._idle_pairs() if self.complete else []

    @abstractmethod
    def _arrival_pairs(self, item: int) -> list[Pair]: ...

    def _idle_pairs(self) -> list[Pair]:
        return []


class RoundRobinScheduler(Scheduler):
    """Every pair once: each arrival plays every earlier trace. N(N-1)/2 calls."""

    def _arrival_pairs(self, item: int) -> list[Pair]:
        return [(earlier, item) for earlier in range(item)]


class LiveScheduler(Scheduler):
    """Reasoning Arena-Live: each arrival plays the best, the median and the worst trace of the live leaderboard.

    The leaderboard ranks the traces that arrived earlier by win rate over their verdicts so far (an outcome ``o``
    is a win of ``o`` for the first trace and of ``1 - o`` for the second, so a tie counts half; a trace without a
    verdict yet has win rate 0.5), ties broken by earlier arrival. Position ``(k - 1) // 2`` of
    the ``k`` ranked traces is the median. The first three traces play every earlier trace, so the count is
    1 + 2 + 3(N - 3) for N >= 3.
    """

    def _arrival_pairs(self, item: int) -> list[Pair]:
        if item < 3:
            return [(earlier, item) for earlier in range(item)]
        board = self.leaderboard(item)
        best, median, worst = board[0], board[(item - 1) // 2], board[-1]
        return [(best, item), (median, item), (worst, item)]

    def leaderboard(self, num_ranked: int | None = None) -> list[int]:
        """Traces ``0..num_ranked-1`` ordered best first by live win rate, ties by index."""
        num_ranked = self.arrived if num_ranked is None else num_ranked
        wins = np.zeros(self.num_items)
        games = np.zeros(self.num_items)
        for first, second, outcome in self.comparisons:
            wins[first] += outcome
            wins[second] += 1.0 - outcome
            games[first] += 1
            games[second] += 1
        rate = np.divide(wins, games, out=np.full(self.num_items, 0.5), where=games > 0)
        return sorted(range(num_ranked), key=lambda i: (-rate[i], i))


class RandomScheduler(Scheduler):
    """Control: each arrival plays one uniformly random earlier trace (a random spanning tree, so the graph stays
    connected); at completion the rest of the budget goes to uniformly random pairs not yet played."""

    def __init__(self, num_items: int, budget: int | None = None, seed: int | np.random.Generator | None = 0):
        super().__init__(num_items)
        self.budget = _check_budget(num_items, budget)
        self.rng = np.random.default_rng(seed)
        self.scheduled: set[Pair] = set()

    def _arrival_pairs(self, item: int) -> list[Pair]:
        if item == 0:
            return []
        pair = (int(self.rng.integers(item)), item)
        self.scheduled.add(pair)
        return [pair]

    def _idle_pairs(self) -> list[Pair]:
        unplayed = [p for p in _all_pairs(self.num_items) if p not in self.scheduled]
        extra = self.budget - len(self.scheduled)
        picks = self.rng.choice(len(unplayed), size=min(extra, len(unplayed)), replace=False)
        chosen = [unplayed[i] for i in sorted(picks)]
        self.scheduled.update(chosen)
        return chosen


class InfoGainScheduler(Scheduler):
    """Adaptive: spends a call budget on the pairs whose order is least certain under the current BT posterior.

    Each arrival plays ``per_arrival`` opponents right away (so judging overlaps rollout, as in the live
    tournament, and the new trace is connected to the graph); the remaining budget is spent after the group is
    complete, in rounds of up to ``round_size`` disjoint pairs (default N // 2; one round's calls run concurrently,
    and each round sees every earlier verdict). Spending most of the budget at completion, when every trace is
    known, ranks better than spending it on arrival (measured in ``scripts/bench/ranking.py``), at the cost of
    ``ceil((budget - per_arrival * (N - 1)) / round_size)`` judge latencies after the last trace. A pair is scored by

        P(order wrong) * information = Phi(-|mu_a - mu_b| / s) * w s^2 / (1 + w s^2)

    with ``mu`` and ``s^2 = Var(theta_a - theta_b)`` from a Laplace approximation of the posterior and
    ``w = p (1 - p)`` the Fisher information of one verdict at ``p = sigmoid(mu_a - mu_b)``. The posterior is fitted
    on soft outcomes as fractional wins; ``w`` is still one hard verdict's information, so with a soft judge pairs
    are ranked as if each call gave a hard verdict. The first factor
    targets pairs that would be ranked wrongly (what Kendall tau counts); the second is the fraction of the pair's
    uncertainty one verdict removes. Already judged pairs are only chosen again once every pair has been judged.
    """

    def __init__(
        self,
        num_items: int,
        budget: int | None = None,
        *,
        per_arrival: int = 1,
        round_size: int | None = None,
        l2: float = DEFAULT_L2,
        order_effect: bool = False,
    ):
        super().__init__(num_items)
        self.budget = _check_budget(num_items, budget)
        if per_arrival < 1:
            raise ValueError(f"per_arrival must be >= 1 (each arrival must join the graph), got {per_arrival}")
        self.per_arrival = per_arrival
        self.round_size = max(1, num_items // 2) if round_size is None else round_size
        self.l2, self.order_effect = l2, order_effect
        self.scheduled: list[Pair] = []
        # Calls reserved so that every later arrival can still get its one connecting game.
        self._reserve = max(0, num_items - 1)

    def _arrival_pairs(self, item: int) -> list[Pair]:
        if item == 0:
            return []
        self._reserve -= 1
        spendable = self.budget - len(self.scheduled) - self._reserve
        count = min(self.per_arrival, item, max(spendable, 1))
        return self._schedule(self._rank_pairs(item + 1, must_include=item)[:count])

    def _idle_pairs(self) -> list[Pair]:
        # A round starts only when the previous one is fully judged, so that it uses every verdict so far.
        left = self.budget - len(self.scheduled)
        if left <= 0:
            return []
        chosen: list[Pair] = []
        busy: set[int] = set()
        for pair in self._rank_pairs(self.num_items):
            if len(chosen) == min(left, self.round_size):
                break
            if pair[0] in busy or pair[1] in busy:
                continue
            chosen.append(pair)
            busy.update(pair)
        return self._schedule(chosen)

    def _schedule(self, pairs: list[Pair]) -> list[Pair]:
        self.scheduled.extend(pairs)
        return pairs

    def _rank_pairs(self, num_present: int, must_include: int | None = None) -> list[Pair]:
        """Candidate pairs among the first ``num_present`` traces, most useful first."""
        mean, cov = bradley_terry_posterior(self.num_items, self.comparisons, self.l2, self.order_effect)
        played = set(self.scheduled) | {(min(f, s), max(f, s)) for f, s, _ in self.comparisons}
        candidates = [p for p in _all_pairs(num_present) if must_include is None or must_include in p]
        fresh = [p for p in candidates if p not in played]
        candidates = fresh or candidates
        a = np.array([p[0] for p in candidates])
        b = np.array([p[1] for p in candidates])
        gap = mean[a] - mean[b]
        var = np.maximum(cov[a, a] + cov[b, b] - 2.0 * cov[a, b], 1e-12)
        prob = 1.0 / (1.0 + np.exp(-gap))
        info = prob * (1.0 - prob) * var
        score = ndtr(-np.abs(gap) / np.sqrt(var)) * info / (1.0 + info)
        order = np.lexsort((b, a, -score))  # best score first; ties by index for determinism
        return [candidates[i] for i in order]


class PacedScheduler(InfoGainScheduler):
    """Spends the call budget while rollout is still running, so that only one round waits for the last trace.

    - Each arrival plays one opponent at once (the most useful pair that includes it), which keeps it connected.
    - While the group is incomplete and no call is in flight, the most useful pairs among the traces present are
      judged, one per round (each sees every verdict so far), up to a quota that grows with the traces present:
      ``quota(k) = (budget - final_calls) * (C(k, 2) / C(N - 1, 2)) ** (pace / 2)``. Little is spent while few traces
      exist (those calls are the ones wasted when the group turns out diverse, and they rank only a few traces), and
      the quota is full by the second-to-last arrival. ``budget - quota`` is always enough for every later arrival's
      connecting call and the last arrival's ``final_calls``.
    - The last arrival plays ``final_calls`` opponents at once, and whatever the quota could not spend (traces came
      faster than verdicts, or load shedding held it back) goes into the same round, on the most useful pairs
      (``spends_rest_on_last_arrival``: the driver asks :meth:`on_idle` right after the last arrival): one round
      after the last trace, always, like ``live``.

    Pairs are chosen by :class:`InfoGainScheduler`'s score (chance of the wrong order times the information of one
    verdict), and each trace is shown first about as often as second (``balances_presentation``): with five or so
    games per trace, coin-flip orders leave some traces with the judge's position bias in most of their games.
    ``scripts/bench/ranking.py`` and ``scripts/bench/live_latency.py`` measure it against ``live``.
    """

    def __init__(
        self,
        num_items: int,
        budget: int | None = None,
        *,
        options: PacedOptions | None = None,
        l2: float = DEFAULT_L2,
        order_effect: bool = False,
    ):
        super().__init__(num_items, budget, per_arrival=1, l2=l2, order_effect=order_effect)
        options = options if options is not None else PacedOptions()  # its knobs, checked when they were read
        self.final_calls = min(options.final_calls, max(1, num_items - 1))
        self.pace = options.pace

    def quota(self, present: int) -> int:
        """Calls that may have been scheduled once ``present`` traces have arrived (before completion)."""
        n = self.num_items
        spendable = self.budget - self.final_calls
        if present >= n - 1 or n < 3:
            return spendable
        share = (present * (present - 1) / 2) / ((n - 1) * (n - 2) / 2)
        return int(round(spendable * share ** (self.pace / 2)))

    def _arrival_pairs(self, item: int) -> list[Pair]:
        if item == 0:
            return []
        self._reserve -= 1
        count = 1
        if item == self.num_items - 1:
            count = max(1, min(self.final_calls, item, self.budget - len(self.scheduled)))
        return self._schedule(self._rank_pairs(item + 1, must_include=item)[:count])

    spends_rest_on_last_arrival = True
    balances_presentation = True

    def on_idle(self) -> list[Pair]:
        if self.complete:  # the rest of the budget, in one round (asked with the last arrival's calls in flight)
            left = self.budget - len(self.scheduled)
            return self._schedule(self._rank_pairs(self.num_items)[:left]) if left > 0 else []
        present = self.arrived
        # Keep one connecting call for each later arrival but the last, and the last arrival's final calls.
        later = self.num_items - present
        cap = self.budget - self.final_calls - (later - 1)
        left = min(self.quota(present), cap) - len(self.scheduled)
        if present < 2 or left <= 0:
            return []
        return self._schedule(self._rank_pairs(present)[:1])


def _all_pairs(num_items: int) -> list[Pair]:
    return [(a, b) for b in range(num_items) for a in range(b)]


def _check_budget(num_items: int, budget: int | None) -> int:
    if budget is None:
        return live_call_count(num_items)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise ValueError(f"budget must be an integer number of judge calls, got {budget!r}")
    if budget < num_items - 1:
        raise ValueError(f"budget {budget} cannot connect {num_items} traces (needs at least {num_items - 1})")
    return int(budget)


def scheduler_class(strategy: str) -> type[Scheduler]:
    """The scheduler class of ``strategy``'s registry entry (:mod:`arena_verl.core.strategies`)."""
    scheduler = strategy_of(strategy).scheduler
    if isinstance(scheduler, str):  # "package.module:Class": imported when a tournament is built
        module, _, attribute = scheduler.partition(":")
        scheduler = getattr(importlib.import_module(module), attribute)
    return scheduler


def make_scheduler(
    strategy: str,
    num_items: int,
    budget: int | None = None,
    *,
    seed: int | np.random.Generator | None = 0,
    l2: float = DEFAULT_L2,
    order_effect: bool = False,
    options: Any = None,
) -> Scheduler:
    """Build the scheduler of ``strategy`` (a registered name: :func:`arena_verl.core.strategies.strategy_names`).

    ``budget`` (judge calls; default: the live tournament's count for ``num_items``) applies to the budgeted
    strategies (``random``, ``info_gain``, ``paced``); a strategy of fixed count (``round_robin``, ``live``) rejects
    a budget. ``options`` are the strategy's own knobs (its entry's options part; None: their defaults), passed
    whole to a scheduler that declares them. A budgeted scheduler is called with ``(num_items, budget)`` and
    whichever of ``seed``, ``l2``, ``order_effect`` and ``options`` its constructor takes.
    """
    entry = strategy_of(strategy)
    scheduler = scheduler_class(strategy)
    if entry.options is not None:
        options = options if options is not None else entry.options()
        if not isinstance(options, entry.options):
            raise TypeError(f"strategy {strategy!r} takes {entry.options.__name__} options, got {options!r}")
    elif options is not None:
        raise ValueError(f"strategy {strategy!r} has no options of its own, got {options!r}")
    if entry.fixed_count:
        if budget is not None:
            raise ValueError(f"strategy {strategy!r} has a fixed number of calls; budget must be None")
        return scheduler(num_items, **({"options": options} if entry.options else {}))
    offered = {"seed": seed, "l2": l2, "order_effect": order_effect, "options": options}
    accepted = inspect.signature(scheduler).parameters
    return scheduler(num_items, budget, **{name: value for name, value in offered.items() if name in accepted})
