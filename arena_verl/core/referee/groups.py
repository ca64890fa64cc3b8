"""The referee's group bookkeeping: what a sample submits (:class:`Submission`), what it gets back (:class:`Verdict`),
the state of one group while its samples arrive (:class:`Group`), and the book of open and recently answered groups
(:class:`GroupBook`). No asyncio at run time: the referee creates the futures and timers a group holds."""

from __future__ import annotations

import collections
import dataclasses
import enum
import logging
import math
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arena_verl.core.judge_protocol import Trace
from arena_verl.core.names import ROUTE_VERIFIER

if TYPE_CHECKING:
    import asyncio

    from arena_verl.core.tournament import Tournament

logger = logging.getLogger(__name__)

__all__ = ["Submission", "Verdict", "Group", "GroupBook", "Arrival", "group_key", "normalised", "stable_seed"]


@dataclass(frozen=True)
class Submission:
    uid: str  # the group (verl's uid: one per prompt, shared by its n samples)
    sample_key: str  # the sample within its group (session id, or a hash of the response)
    problem: str
    trace: Trace
    verifier_reward: float
    reference: str | None = None
    step: int | None = None
    content_key: str | None = None  # a hash of the response: tells a padding copy from a new sample
    task: str = "math"  # which prompt the judge uses: math, code or generic


@dataclass(frozen=True)
class Verdict:
    reward: float
    route: int = ROUTE_VERIFIER
    uniform: bool = False
    strength: float = 0.0
    win_rate: float = -1.0  # -1 = the sample played no match
    judge_calls: int = 0  # charged to the whole group
    judge_failures: int = 0  # of the group's judge calls
    fallback: int = 0
    routed: bool = False  # the reward came from judge verdicts (a tournament whose every call failed: False)
    certainty: float = -1.0  # a routed tournament's certainty that its traces differ, in [0, 1]; -1 otherwise


class Arrival(enum.Enum):
    """What a submitted sample is to its group."""

    NEW = "new"  # a new member: it waits for the group's answer
    DUPLICATE = "duplicate"  # the same sample again: it gets its first submission's answer
    PADDING = "padding"  # a copy verl's batch path padded a batch with: it gets its original's answer
    OVERFLOW = "overflow"  # more samples than the group size: its verifier reward
    LATE = "late"  # the group was answered before it came: its verifier reward


class Group:
    """One group's state: its members in arrival order, their waiting futures, and its tournament while one runs."""

    def __init__(self, uid: str, size: int):
        self.uid, self.size = uid, size
        self.members: list[Submission] = []
        self.futures: list[asyncio.Future] = []
        self.index_of: dict[str, int] = {}
        self.content: dict[str, int] = {}
        self.received = 0
        self.tournament: Tournament | None = None
        self.speculative_calls = 0
        self.speculative_failures = 0  # of those, calls without a verdict after a failed attempt
        self.position: dict[str, float] = {}  # position_figures() of its tournament's verdicts
        self.order_effect: float | None = None  # its fitted first-position bonus (order_effect: true)
        # A judge ensemble's calls: (first, second, combined outcome, each member's outcome); cleared once counted.
        self.member_calls: list = []
        # Kept once answered, for the arena's advantage estimator (Referee.advantage_groups): how it was rewarded.
        self.route_class: str | None = None  # "routed", "mixed" (diverse, verifier rewards) or "uniform" (the rest)
        self.certainty = -1.0
        self.complete = False
        self.answered = False
        self.deadline: asyncio.TimerHandle | None = None

    def rewards(self) -> list[float]:
        return [m.verifier_reward for m in self.members]

    @property
    def step(self) -> int | None:
        """The training step of its first sample (per-step counters); None once answered and forgotten."""
        return self.members[0].step if self.members else None

    def arrival(self, sub: Submission) -> tuple[Arrival, int | None]:
        """What ``sub`` is to this group, and for a duplicate or a padding copy the index whose answer it gets."""
        if sub.sample_key in self.index_of:
            return Arrival.DUPLICATE, self.index_of[sub.sample_key]
        if self.received >= self.size and sub.content_key is not None and sub.content_key in self.content:
            return Arrival.PADDING, self.content[sub.content_key]
        if self.received >= self.size:
            return Arrival.OVERFLOW, None
        if self.answered:
            return Arrival.LATE, None
        return Arrival.NEW, None

    def join(self, sub: Submission, future: asyncio.Future) -> None:
        """Add a new member (``arrival`` said NEW). The referee marks the group complete once its speculation saw the
        last member (``full``)."""
        index = len(self.members)
        self.members.append(sub)
        self.received += 1
        self.index_of[sub.sample_key] = index
        if sub.content_key is not None:
            self.content.setdefault(sub.content_key, index)
        self.futures.append(future)

    @property
    def full(self) -> bool:
        return len(self.members) == self.size

    def forget_traces(self) -> None:
        """Drop what an answered group no longer needs; its keys and futures stay for duplicates and late samples."""
        self.members, self.tournament = [], None


class GroupBook:
    """The open groups by uid, and the last ``remembered`` answered ones (without their traces: a long run answers
    millions of groups; ``reward.arena.groups_remembered``)."""

    def __init__(self, group_size: int, remembered: int):
        self.group_size, self.remembered = group_size, remembered
        self.open: dict[str, Group] = {}
        self.recent: collections.OrderedDict[str, Group] = collections.OrderedDict()

    def find(self, uid: str) -> Group | None:
        return self.open.get(uid) or self.recent.get(uid)

    def start(self, uid: str) -> Group:
        group = Group(uid, self.group_size)
        self.open[uid] = group
        return group

    def close(self, group: Group) -> None:
        """An answered group leaves the open ones and is remembered, its traces forgotten, the oldest dropped."""
        self.open.pop(group.uid, None)
        group.forget_traces()
        self.recent[group.uid] = group
        while len(self.recent) > self.remembered:
            self.recent.popitem(last=False)


def group_key(uid) -> str:
    """A uid as the referee keys groups: strings as they are; anything else (ints, numpy scalars, tuples, bytes) by
    its type and value, so it can be hashed, seeded and sharded."""
    return uid if isinstance(uid, str) else f"{type(uid).__name__}:{uid!r}"


def normalised(sub: Submission) -> Submission:
    """Every reward that leaves the referee is finite: a NaN or infinite verifier reward counts as 0."""
    changes = {}
    if not isinstance(sub.uid, str):
        changes["uid"] = group_key(sub.uid)
    try:
        reward = float(sub.verifier_reward)
    except (TypeError, ValueError):
        reward = math.nan
    if not math.isfinite(reward):
        logger.warning("group %s: verifier reward %r is not a finite number; 0 used", sub.uid, sub.verifier_reward)
        reward = 0.0
    if reward != sub.verifier_reward or type(sub.verifier_reward) is not float:
        changes["verifier_reward"] = reward
    return dataclasses.replace(sub, **changes) if changes else sub


def stable_seed(uid: str) -> int:
    """The seed of a group's tournament: the same uid gives the same schedule in every process."""
    return zlib.crc32(group_key(uid).encode("utf-8", errors="replace"))
