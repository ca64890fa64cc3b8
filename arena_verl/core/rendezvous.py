"""Group-sticky routing over judge replicas: rendezvous (highest-random-weight) hashing with a health state.

Every call of a group goes to the same replica, so that the replica's prefix cache holds the group's instructions,
problem and first-shown traces (docs/benchmarks/judge_cost.md). A group's replica is the one with the highest
``hash(group, replica name)``: removing a replica moves only the groups it held (each to its own next choice), and
adding one takes only the groups it now ranks first for, about ``1 / (n + 1)`` of them; no other group moves.

A replica that fails a request leaves the ring for ``first_down_s`` seconds, doubled after each further failure up
to ``max_down_s``; its groups go to their next choice meanwhile (sticky there too). After that time it is tried again
by the next call of one of its groups: an answer puts it back for good (its failures forgotten), a failure sends it
out for longer. With every replica out, a group is sent to its own first choice anyway (the call fails or succeeds
there, and is counted as always). Pure: no I/O; the clock is a parameter (tests).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["rendezvous_order", "sticky_choice", "ReplicaRing"]


def _weight(key: str, name: str) -> int:
    digest = hashlib.blake2b(f"{key}\x00{name}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_order(key: str, names: Sequence[str]) -> list[int]:
    """Indices of ``names`` in ``key``'s order of preference (highest weight first; ties by index). The same key
    and names give the same order in every process (a keyed hash, not Python's salted ``hash``)."""
    return sorted(range(len(names)), key=lambda i: (-_weight(key, names[i]), i))


def sticky_choice(key: str, names: Sequence[str], usable: Callable[[int], bool]) -> tuple[int, bool]:
    """``(index, rerouted)``: ``key``'s replica, its first choice among ``names`` that is ``usable`` (an index's
    test: up, started), and whether that is past its own first choice. None usable: its first choice, not rerouted
    (the call goes there and fails or succeeds as it would)."""
    order = rendezvous_order(key, names)
    for index in order:
        if usable(index):
            return index, index != order[0]
    return order[0], False


@dataclass
class _Health:
    failures: int = 0  # consecutive failures (0: in the ring)
    down_until: float = float("-inf")


class ReplicaRing:
    """Which replica serves a group, and which replicas are out of the ring for now.

    Parameters
    ----------
    names : sequence of str
        One stable name per replica (a URL, an engine's index); duplicates are refused.
    first_down_s, max_down_s : float
        How long a replica stays out after its first failure, and the most it stays out after several.
    clock : callable
        Seconds (monotonic).
    """

    def __init__(
        self,
        names: Sequence[str],
        first_down_s: float = 5.0,
        max_down_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not 0.0 < first_down_s <= max_down_s:
            raise ValueError(f"need 0 < first_down_s <= max_down_s, got {first_down_s} and {max_down_s}")
        self.first_down_s, self.max_down_s, self.clock = first_down_s, max_down_s, clock
        self._health: dict[str, _Health] = {}
        self.names: list[str] = []
        self.replace(names)

    def replace(self, names: Sequence[str]) -> None:
        """A new list of replicas (a URL file rewritten): the health of the names kept stays."""
        names = [str(name) for name in names]
        if not names:
            raise ValueError("a replica ring needs at least one replica")
        if len(set(names)) != len(names):
            raise ValueError(f"replicas listed twice: {sorted({n for n in names if names.count(n) > 1})}")
        self.names = names
        self._health = {name: self._health.get(name, _Health()) for name in names}

    def is_up(self, name: str) -> bool:
        health = self._health.get(name)
        return health is not None and health.down_until <= self.clock()

    def route(self, key: str | None) -> tuple[int, bool]:
        """``(index, rerouted)``: ``key``'s replica in the ring and whether it is past ``key``'s first choice
        (:func:`sticky_choice`). ``key`` None (a call of no group): the first replica in the ring by list order."""

        def up(index: int) -> bool:
            return self.is_up(self.names[index])

        if key is None:
            return next((i for i in range(len(self.names)) if up(i)), 0), False
        return sticky_choice(key, self.names, up)

    def choose(self, key: str | None) -> int:
        """The index of ``key``'s replica (:meth:`route`)."""
        return self.route(key)[0]

    def first_choice(self, key: str) -> int:
        """``key``'s replica when every replica is in the ring."""
        return rendezvous_order(key, self.names)[0]

    def failed(self, name: str) -> bool:
        """A request to ``name`` failed: it leaves the ring (for longer after each further failure). True when it was
        in the ring until now (the caller may say so once)."""
        health = self._health.get(name)
        if health is None:  # replaced meanwhile
            return False
        was_up = health.down_until <= self.clock()
        if not was_up:
            return False  # calls already in flight when it went out: its time out is not extended by them
        health.failures += 1
        health.down_until = self.clock() + min(self.max_down_s, self.first_down_s * 2 ** (health.failures - 1))
        return True

    def answered(self, name: str) -> bool:
        """``name`` answered: back in the ring, its failures forgotten. True when it was out or failing until now."""
        health = self._health.get(name)
        if health is None or health.failures == 0:
            return False
        health.failures, health.down_until = 0, float("-inf")
        return True

    def down(self) -> list[str]:
        """The replicas out of the ring now."""
        return [name for name in self.names if not self.is_up(name)]
