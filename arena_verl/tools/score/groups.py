"""The groups ``arena-verl score`` judges: a dump's verified groups (the one dump reader,
:mod:`arena_verl.evaluation.verified`; each a :class:`~arena_verl.tools.common.dump_groups.DumpGroup`, as the audit
sees them) whose verifier outcomes are all equal, and what was left out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from arena_verl.core.routing import is_uniform
from arena_verl.data.dump_files import find_dump_files
from arena_verl.data.dumps import TruthDisagreement
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.verified import NO_GROUND_TRUTH, read_verified
from arena_verl.tools.common.dump_groups import ARENA, DumpGroup, dump_group, file_identity

__all__ = ["DumpSummary", "describe_dump", "dump_identities", "read_dump_groups"]


@dataclass
class DumpSummary:
    files: int = 0
    groups: int = 0
    by_uid: int = 0  # V1 dumps: grouped by the uid's prompt uuid; the rest by identical prompt text (legacy)
    non_diverse: int = 0
    diverse: int = 0
    single: int = 0  # groups of one sample: nothing to compare
    not_scored: Counter = field(default_factory=Counter)  # why -> groups
    statuses: Counter = field(default_factory=Counter)  # the verifier's per-sample statuses
    disagreements: list[TruthDisagreement] = field(default_factory=list)  # --data's ground truth is not the dump's
    keys: dict[int | None, set[str]] = field(default_factory=dict)  # step -> every group key read (any outcome)
    duplicates: list = field(default_factory=list)  # dump lines repeating a uid of their step file (DuplicateUid)
    blank_lines: list = field(default_factory=list)  # the blank lines of each step file (BlankLines, skipped)


def dump_identities(dump: Path) -> dict[int | None, str]:
    """``{step: file_identity}`` of every step file of ``dump`` (the chosen steps or not)."""
    return {step: file_identity(path) for step, path in find_dump_files(dump).items()}


def read_dump_groups(dump: Path, step: str, data: list, scorer: Scorer) -> tuple[list[DumpGroup], DumpSummary]:
    """The verified non-diverse groups (of two samples or more) of the chosen steps, and what was left out."""
    summary = DumpSummary()
    groups: list[DumpGroup] = []
    for verified in read_verified(dump, scorer, data=data, step=step):
        summary.files += 1
        summary.disagreements += verified.disagreements
        summary.duplicates += verified.duplicates
        summary.blank_lines += verified.blank_lines
        disagreeing = {d.line for d in verified.disagreements}
        identity = file_identity(verified.file.path)
        keys = summary.keys.setdefault(verified.file.step, set())
        for group in verified.groups:
            keys.add(group.prompt.key)
            summary.groups += 1
            summary.by_uid += group.prompt.key.startswith("uid ")
            if group.correct is None:
                why = group.unverified_because
                reason = "no ground truth (gts) to verify against" if why == NO_GROUND_TRUTH else f"{group.kind}: {why}"
                summary.not_scored[reason] += 1
                continue
            summary.statuses.update(group.statuses)
            judged = dump_group(group, verified.file.joined, group.prompt.line in disagreeing, identity)
            if len(judged.responses) < 2:
                summary.single += 1
            elif is_uniform(judged.verifier_rewards, ARENA.diversity_tol):
                summary.non_diverse += 1
                groups.append(judged)
            else:
                summary.diverse += 1
    return groups, summary


def describe_dump(dump: Path, s: DumpSummary) -> str:
    if s.by_uid == s.groups:
        grouping = "grouped by uid (V1 trainer dump)"
    elif s.by_uid == 0:
        grouping = "grouped by prompt text (legacy trainer dump: no uid; samples that share their input are a group)"
    else:
        grouping = f"{s.by_uid} grouped by uid, {s.groups - s.by_uid} by prompt text (no uid)"
    lines = [
        f"dump {dump}: {s.files} step file(s), {s.groups} groups, {grouping}",
        f"  non-diverse (all verifier outcomes equal; judged): {s.non_diverse}; diverse (skipped): {s.diverse}"
        + (f"; single-sample (skipped): {s.single}" if s.single else ""),
    ]
    for why, count in sorted(s.not_scored.items()):
        lines.append(f"  not verified, skipped: {count} groups ({why})")
    troubles = {status: n for status, n in s.statuses.items() if status in ("timeout", "error")}
    if troubles:
        lines.append("  verifier trouble: " + ", ".join(f"{n} {status}" for status, n in sorted(troubles.items())))
    return "\n".join(lines)
