"""The pairs an audit judges, chosen from a dump's verified groups: labelled pairs from diverse groups, same-outcome
triples from non-diverse ones, at most ``max_pairs`` of each kind, reproducibly from ``seed``.

The dump is read by the one dump reader (:func:`arena_verl.evaluation.verified.read_verified`, as ``analyze`` and
``score`` read it); a group takes part when every sample was verified and it has two samples or more. Diverse or not
is the arena's rule (:func:`arena_verl.core.routing.is_uniform` on the verifier rewards, ``diversity_tol``).

**Choice.** Each group's candidates are shuffled by a generator seeded by ``(seed, kind, step, group)``, and the
groups are visited in an order seeded the same way; pairs are then taken one candidate per group per round until
``max_pairs`` are taken. So pairs spread over as many prompts as possible, a group's candidates do not depend on the
other groups, and a larger ``max_pairs`` with the same seed takes a superset (a resumed run can grow).

- **labelled**: every (verified-correct, verified-incorrect) pair of traces of one prompt; the correct one is
  ``first`` (shown first in the pair's first order).
- **same-outcome**: each group's traces, shuffled, cut into disjoint triples (the leftover one or two traces are not
  used); a triple is one candidate and brings its three pairs (``first`` the lower index). A group of two samples
  brings its one pair, with no triple. The last triple taken may be cut short by ``max_pairs`` (its transitivity is
  then not judged).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arena_verl.evaluation.audit import LABELLED, SAME_OUTCOME
from arena_verl.evaluation.scoring import Scorer
from arena_verl.tools.common.dump_groups import DumpGroup, DumpTally, verified_groups

__all__ = ["AuditDump", "PairToJudge", "read_audit_groups", "select_pairs"]


@dataclass(frozen=True)
class PairToJudge:
    """A pair of traces of one group: judged with ``first`` shown first, then with ``second`` shown first."""

    kind: str
    group: DumpGroup
    first: int
    second: int
    triple: str | None = None  # same-outcome: the triple's id (its step, group and three trace indices)

    @property
    def id(self) -> str:
        return pair_id(self.kind, self.group.step, self.group.key, self.first, self.second)


def pair_id(kind: str, step: int | None, group: str, first: int, second: int) -> str:
    return f"{kind} | step {step} | {group} | {first} vs {second}"


@dataclass
class AuditDump(DumpTally):
    """What reading a dump found (the one tally, :class:`~arena_verl.tools.common.dump_groups.DumpTally`), and the
    groups an audit can use."""

    diverse_groups: list[DumpGroup] = field(default_factory=list)
    non_diverse_groups: list[DumpGroup] = field(default_factory=list)


def read_audit_groups(dump: str | Path, scorer: Scorer, data: list) -> AuditDump:
    """Every step file of ``dump`` through the one dump reader, split into diverse and non-diverse groups."""
    found = AuditDump()
    for group, diverse in verified_groups(dump, scorer, data, found):
        (found.diverse_groups if diverse else found.non_diverse_groups).append(group)
    return found


def select_pairs(dump: AuditDump, max_pairs: int, seed: int) -> list[PairToJudge]:
    """At most ``max_pairs`` labelled pairs and at most ``max_pairs`` same-outcome pairs (see the module docstring):
    the labelled ones first, each kind in the order taken."""
    labelled = _round_robin(
        [_labelled_candidates(group, _rng(seed, LABELLED, group)) for group in _order(dump.diverse_groups, seed)],
        max_pairs,
    )
    same = _round_robin(
        [_triple_candidates(group, _rng(seed, SAME_OUTCOME, group)) for group in _order(dump.non_diverse_groups, seed)],
        max_pairs,
    )
    return labelled + same


def _round_robin(candidates: list[Iterator[list[PairToJudge]]], limit: int) -> list[PairToJudge]:
    """One candidate per group per round, in the groups' order, until ``limit`` pairs (a candidate too big for the
    room left is cut to it)."""
    taken: list[PairToJudge] = []
    live = list(candidates)
    while live and len(taken) < limit:
        still = []
        for source in live:
            unit = next(source, None)
            if unit is None:
                continue
            taken += unit[: limit - len(taken)]
            still.append(source)
            if len(taken) >= limit:
                break
        live = still
    return taken


def _labelled_candidates(group: DumpGroup, rng: np.random.Generator) -> Iterator[list[PairToJudge]]:
    correct = [i for i, ok in enumerate(group.correct) if ok]
    incorrect = [i for i, ok in enumerate(group.correct) if not ok]
    for k in rng.permutation(len(correct) * len(incorrect)):
        yield [PairToJudge(LABELLED, group, correct[k // len(incorrect)], incorrect[k % len(incorrect)])]


def _triple_candidates(group: DumpGroup, rng: np.random.Generator) -> Iterator[list[PairToJudge]]:
    size = len(group.responses)
    if size == 2:
        yield [PairToJudge(SAME_OUTCOME, group, 0, 1)]
        return
    order = [int(i) for i in rng.permutation(size)]
    for start in range(0, size - 2, 3):
        x, y, z = sorted(order[start : start + 3])
        triple = f"step {group.step} | {group.key} | {x},{y},{z}"  # unique in the dump
        yield [PairToJudge(SAME_OUTCOME, group, a, b, triple) for a, b in ((x, y), (x, z), (y, z))]


def _order(groups: list[DumpGroup], seed: int) -> list[DumpGroup]:
    """The groups in a seeded order that does not depend on which other groups the dump has."""
    return sorted(groups, key=lambda g: _key_digest(seed, "order", g))


def _rng(seed: int, kind: str, group: DumpGroup) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(_key_digest(seed, kind, group), "little"))


def _key_digest(seed: int, what: str, group: DumpGroup) -> bytes:
    return hashlib.blake2b(f"{seed}/{what}/{group.step}/{group.key}".encode(), digest_size=8).digest()
