"""What every tool says of a dump's problems, one line each (on stderr, beside a count in its JSON output): ground
truths that disagree with the parquet's, blank lines, repeated uids, prompts whose samples carry different ground
truths. The problems themselves are found by :mod:`arena_verl.data.dumps`."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from arena_verl.data.dumps import BlankLines, DuplicateUid, PromptSamples, TruthDisagreement
from arena_verl.data.prompt_match import short

__all__ = ["blank_line_note", "differing_truth_note", "disagreement_note", "duplicate_note"]


def disagreement_note(disagreements: list[TruthDisagreement]) -> str | None:
    """One line on the prompts whose parquet ground truth is not the dump's (None when there are none)."""
    if not disagreements:
        return None
    first = disagreements[0]
    return (
        f"{len(disagreements)} prompt(s) have another ground truth in --data than in the dump: verified against the "
        f"dump's gts (what the run scored against), e.g. the prompt of {first.path} line {first.line} has gts "
        f"{short(first.dumped)}, {first.row} has {short(first.parquet)}"
    )


def blank_line_note(blanks: list[BlankLines], files_shown: int = 3, lines_shown: int = 5) -> str | None:
    """One line on the blank lines of the dump files read (None when there are none): how many, and where (the
    first few files and line numbers)."""
    if not blanks:
        return None
    total = sum(len(blank.lines) for blank in blanks)
    where = []
    for blank in blanks[:files_shown]:
        numbers = ", ".join(str(n) for n in blank.lines[:lines_shown]) + (
            ", ..." if len(blank.lines) > lines_shown else ""
        )
        where.append(f"{blank.path} line{'s' if len(blank.lines) > 1 else ''} {numbers}")
    if len(blanks) > files_shown:
        where.append(f"... ({len(blanks)} files)")
    return f"{total} blank line(s) in the dump skipped (no sample): {'; '.join(where)}"


def duplicate_note(duplicates: list[DuplicateUid], differing: str = "the first copy counts") -> str | None:
    """One line on the dump lines that repeat a uid of their step file (None when there are none): how many, in
    which files (steps), and what was done with copies that differ (``differing``)."""
    if not duplicates:
        return None
    by_file: dict[Path, int] = defaultdict(int)
    for duplicate in duplicates:
        by_file[duplicate.path] += 1
    where = ", ".join(f"{path.name}: {count}" for path, count in list(by_file.items())[:5])
    if len(by_file) > 5:
        where += f", ... ({len(by_file)} files)"
    conflicting = [d for d in duplicates if d.conflicting]
    example = conflicting[0] if conflicting else duplicates[0]
    return (
        f"{len(duplicates)} dump line(s) repeat a uid already in their step file ({where}): an identical copy counts "
        f"once; {len(conflicting)} differ from the first copy in input, output, gts, score or acc: {differing}; e.g. "
        f"{example.path} line {example.line} repeats uid {example.uid!r} of line {example.first_line}"
    )


def differing_truth_note(prompts: list[tuple[Path, PromptSamples]]) -> str | None:
    """One line on the prompts whose samples carry different ground truths, left unverified (None when there are
    none): how many, and the first few by file, data source, prompt and truths."""
    if not prompts:
        return None
    examples = "; ".join(
        f"{path} line {prompt.line} ({_one_line(prompt.samples[0].benchmark)}, {_one_line(prompt.key)}): "
        + ", ".join(short(truth) for truth in prompt.differing_truths)
        for path, prompt in prompts[:3]
    )
    more = f"; ... ({len(prompts)} prompts)" if len(prompts) > 3 else ""
    return (
        f"{len(prompts)} prompt(s) whose samples carry different ground truths are left unverified (not scored "
        f"against either): {examples}{more}"
    )


def _one_line(text: str) -> str:
    """``text`` with its white space runs (a newline included) as one space: a name inside a one-line message."""
    return " ".join(str(text).split())
