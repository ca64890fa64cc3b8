"""The peers' tournament formats as schedulers: ``swiss`` (ArenaRL's Swiss rounds) and ``knockout`` (Tournament-GRPO's
single elimination). Like every strategy they only pick pairs: presentation order, retries, the failure policy and
the Bradley-Terry fit that turns verdicts into rewards are the driver's, so a format changes which comparisons the
fit sees, nothing else.

A verdict's outcome is a fractional win (``o`` for the trace shown first, ``1 - o`` for the other; a tie is half
each; a failed call is no verdict). Both formats play their rounds once the group is complete (``knockout`` starts its
first-round matches as their traces arrive), one round at a time: the next round is asked for when no call is in
flight, so it sees every verdict of the last.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from arena_verl.core.strategies import SwissOptions
from arena_verl.core.tournament.schedulers import Pair, Scheduler, _check_budget

__all__ = ["SwissScheduler", "KnockoutScheduler"]


def _pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


class _Results:
    """Each trace's running score (fractional wins) and each pair's mean outcome, from the verdicts so far."""

    def __init__(self, num_items: int):
        self.score = np.zeros(num_items)
        self._sums: dict[Pair, float] = defaultdict(float)  # outcome for the pair's lower index, summed
        self._counts: dict[Pair, int] = defaultdict(int)

    def add(self, first: int, second: int, outcome: float) -> None:
        self.score[first] += outcome
        self.score[second] += 1.0 - outcome
        pair = _pair(first, second)
        self._sums[pair] += outcome if first == pair[0] else 1.0 - outcome
        self._counts[pair] += 1

    def lower_wins(self, pair: Pair) -> float | None:
        """The mean outcome for the pair's lower index (None: no verdict)."""
        count = self._counts.get(pair, 0)
        return self._sums[pair] / count if count else None


class SwissScheduler(Scheduler):
    """Swiss rounds: each round pairs traces of equal running score, best first, never a pair twice.

    Standings order traces by running score, then Buchholz (the sum of their opponents' scores), then index. Each
    round takes the best unpaired trace and pairs it with the next one in the standings it has not played; one that
    has played every other unpaired trace sits the round out (a bye, no call). Rounds are played until ``rounds``
    (its option; None: as many as the budget allows) or the budget (default: the live tournament's count) is spent,
    the last round cut to what is left; or until no unplayed pair is left.
    """

    def __init__(self, num_items: int, budget: int | None = None, *, options: SwissOptions | None = None):
        super().__init__(num_items)
        self.budget = _check_budget(num_items, budget)
        self.rounds = (options or SwissOptions()).swiss_rounds
        self.results = _Results(num_items)
        self.played: set[Pair] = set()
        self.rounds_played = 0

    def _arrival_pairs(self, item: int) -> list[Pair]:
        return []  # the field is paired once complete

    def on_verdict(self, first: int, second: int, outcome: float | None) -> None:
        super().on_verdict(first, second, outcome)
        if outcome is not None:
            self.results.add(first, second, outcome)

    def standings(self) -> list[int]:
        score = self.results.score
        buchholz = np.zeros(self.num_items)
        for a, b in self.played:
            buchholz[a] += score[b]
            buchholz[b] += score[a]
        return sorted(range(self.num_items), key=lambda i: (-score[i], -buchholz[i], i))

    def _idle_pairs(self) -> list[Pair]:
        left = self.budget - len(self.played)
        if left <= 0 or (self.rounds is not None and self.rounds_played >= self.rounds):
            return []
        unpaired, pairs = self.standings(), []
        while unpaired and len(pairs) < left:
            top = unpaired.pop(0)
            opponent = next((other for other in unpaired if _pair(top, other) not in self.played), None)
            if opponent is not None:
                unpaired.remove(opponent)
                pairs.append(_pair(top, opponent))
        self.played.update(pairs)
        self.rounds_played += bool(pairs)
        return pairs


class KnockoutScheduler(Scheduler):
    """Single elimination: N - 1 matches. The bracket takes the traces in arrival order; a field that is not a power
    of two gives its last entrants byes in the first round. A match's winner is the trace its verdicts favour (their
    mean outcome); a tie, or a match whose every call failed, goes to the lower index, so the bracket always finishes.
    First-round matches start as their traces arrive; each later match once both its players are known (when no call
    is in flight). :meth:`placement` ranks the traces by the round they fell in (the champion first).
    """

    def __init__(self, num_items: int):
        super().__init__(num_items)
        size = 1 << max(0, (num_items - 1).bit_length())
        self._round: list[int | None] = list(range(num_items)) + [None] * (size - num_items)
        self.results = _Results(num_items)
        self.scheduled: set[Pair] = set()
        self.fell_in: dict[int, int] = {}  # trace -> the round it lost (1-based)
        self.round_number = 1

    def on_verdict(self, first: int, second: int, outcome: float | None) -> None:
        super().on_verdict(first, second, outcome)
        if outcome is not None:
            self.results.add(first, second, outcome)

    def _matches(self) -> list[tuple[int | None, int | None]]:
        if len(self._round) < 2:  # the champion alone: the bracket is done
            return []
        return [(self._round[k], self._round[k + 1]) for k in range(0, len(self._round), 2)]

    def _ready(self) -> list[Pair]:
        """The current round's matches whose two players have arrived and are not scheduled yet."""
        pairs = [
            _pair(a, b)
            for a, b in self._matches()
            if a is not None and b is not None and max(a, b) < self.arrived and _pair(a, b) not in self.scheduled
        ]
        self.scheduled.update(pairs)
        return pairs

    def _arrival_pairs(self, item: int) -> list[Pair]:
        return self._ready()

    def on_idle(self) -> list[Pair]:
        if not self.complete:
            return []  # a match in flight may still be deciding this round: later rounds wait for completion
        pairs = self._ready()
        while not pairs and len(self._round) > 1:
            self._advance()
            pairs = self._ready()
        return pairs

    def _advance(self) -> None:
        """Every match of the current round is judged: its winners make the next round."""
        winners: list[int | None] = []
        for a, b in self._matches():
            if a is None or b is None:
                winners.append(a if b is None else b)  # a bye (or no one)
                continue
            low, high = _pair(a, b)
            lower_wins = self.results.lower_wins((low, high))
            winner = high if lower_wins is not None and lower_wins < 0.5 else low  # tie or no verdict: lower index
            self.fell_in[high if winner == low else low] = self.round_number
            winners.append(winner)
        self._round = winners
        self.round_number += 1

    def placement(self) -> list[int]:
        """Traces best first: the champion, then by the round they fell in (later first), ties by index."""
        champion = [t for t in range(self.num_items) if t not in self.fell_in]
        return champion + sorted(self.fell_in, key=lambda t: (-self.fell_in[t], t))
