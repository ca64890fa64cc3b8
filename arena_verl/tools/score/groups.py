"""The groups ``arena-verl score`` judges: a dump's verified groups (the one dump reader,
:mod:`arena_verl.evaluation.verified`; each a :class:`~arena_verl.tools.common.dump_groups.DumpGroup`, as the audit
sees them) whose verifier outcomes are all equal, and what was left out."""

from __future__ import annotations

from pathlib import Path

from arena_verl.data.dump_files import find_dump_files
from arena_verl.evaluation.scoring import Scorer
from arena_verl.tools.common.dump_groups import DumpGroup, DumpTally, file_identity, verified_groups

__all__ = ["DumpSummary", "describe_dump", "dump_identities", "read_dump_groups"]

DumpSummary = DumpTally  # what ``score`` read: the one tally of the commands that judge a dump offline


def dump_identities(dump: Path) -> dict[int | None, str]:
    """``{step: file_identity}`` of every step file of ``dump`` (the chosen steps or not)."""
    return {step: file_identity(path) for step, path in find_dump_files(dump).items()}


def read_dump_groups(dump: Path, step: str, data: list, scorer: Scorer) -> tuple[list[DumpGroup], DumpSummary]:
    """The verified non-diverse groups (of two samples or more) of the chosen steps, and what was left out."""
    summary = DumpSummary()
    groups = [group for group, diverse in verified_groups(dump, scorer, data, summary, step=step) if not diverse]
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
    for why, count in sorted(s.not_verified.items()):
        lines.append(f"  not verified, skipped: {count} groups ({why})")
    troubles = {status: n for status, n in s.statuses.items() if status in ("timeout", "error")}
    if troubles:
        lines.append("  verifier trouble: " + ", ".join(f"{n} {status}" for status, n in sorted(troubles.items())))
    return "\n".join(lines)
