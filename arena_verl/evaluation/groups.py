"""A rollout dump as GRPO groups with their verifier outcomes: what RLVR would have rewarded, step by step.

A dump's ``score`` is the reward after the arena judged, so the verifier's outcome is not in it: each group's final
outputs are re-verified against the dump's ``gts`` with the project's scorers (:class:`~arena_verl.evaluation.report.
Scorer`: math-verify for math, the multiple-choice scorer for GPQA-style sources, a sandbox for code when one is
given). A group whose kind has no scorer here (code without ``--sandbox-url``, an unknown data source) or whose
samples have no ground truth is *unverified*: counted as such, never guessed.

Groups are verl's: the samples sharing the prompt uuid of V1's ``uid`` (a session with several outputs counts once,
by its last output), else (legacy trainer, no ``uid``) the samples sharing their ``input`` text, which also merges
two rows of the batch that hold the same question. See :func:`arena_verl.data.dumps.prompt_groups`.

No dump names its data source: with the training parquet (``--data``) each prompt is joined to its row (see
:class:`~arena_verl.data.dumps.PromptIndex`), which gives the data source and the scorer; without it every
group is verified as math (the arena's main use), under the data source ``NO_DATA_SOURCE``.

Only what the summary needs is kept per group (outcomes, dumped scores, response lengths), not the texts, so a long
run's dump folder fits in memory.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena_verl.data.dumps import (
    EvaluationInputError,
    PromptIndex,
    Sample,
    find_dump_files,
    prompt_groups,
    read_jsonl,
    read_validation_data,
)
from arena_verl.evaluation.report import Scorer, benchmark_kind

__all__ = ["NO_DATA_SOURCE", "Group", "DumpGroups", "count_dump_lines", "read_groups"]

NO_DATA_SOURCE = "(no --data)"
_SCORING_CHUNK = 256  # samples per scorer call: big enough to keep the verifier's workers busy, small for the bar


@dataclass(frozen=True)
class Group:
    """One prompt's samples at one step (the final output of each session)."""

    step: int
    data_source: str
    kind: str  # benchmark_kind's: math | multiple_choice | code | unknown
    correct: tuple[bool, ...] | None  # the verifier's outcome per sample; None: unverified
    scores: tuple[float, ...]  # the dumped reward per sample (after the arena)
    lengths: tuple[int, ...]  # response length per sample, in characters (the dump holds no token counts)
    unverified_because: str | None = None

    @property
    def samples(self) -> int:
        return len(self.scores)

    @property
    def outcome(self) -> str:
        """``all_correct``, ``all_incorrect`` (both: zero advantage under RLVR), ``mixed`` or ``unverified``."""
        if self.correct is None:
            return "unverified"
        if all(self.correct):
            return "all_correct"
        return "mixed" if any(self.correct) else "all_incorrect"

    @property
    def dumped_constant(self) -> bool:
        """Every dumped reward equal: zero advantage under the rewards the run trained on."""
        return all(math.isclose(score, self.scores[0], rel_tol=0.0, abs_tol=1e-9) for score in self.scores)


@dataclass
class DumpGroups:
    groups: list[Group]
    grouped_by: str  # "uid" (V1 dumps) or "prompt" (legacy dumps: samples sharing their input text)
    notes: list[str]


@dataclass
class _Pending:
    """A group read from the dump, before verification."""

    step: int
    data_source: str
    kind: str
    samples: list[Sample]
    unverified_because: str | None


def count_dump_lines(dump: str | Path) -> int:
    """The number of lines of the dump's ``<step>.jsonl`` files (the progress bar's total)."""
    total = 0
    for path in find_dump_files(dump).values():
        with path.open("rb") as handle:
            total += sum(1 for _ in handle)
    return total


def read_groups(
    dump: str | Path,
    scorer: Scorer,
    data: list[str | Path] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> DumpGroups:
    """Every group of every step of ``dump`` (a dump folder or one ``<step>.jsonl``), verified by ``scorer``.

    Parameters
    ----------
    dump : str or Path
        ``trainer.rollout_data_dir`` (or ``validation_data_dir``), or one of its files.
    scorer : Scorer
        Verifies the final outputs (its options say whether code has a sandbox).
    data : list of paths, optional
        The run's training parquet file(s), for data sources; every dumped prompt must match a row.
    progress : callable, optional
        Called with the number of dump lines each time a chunk of them has been read and verified.
    """
    index = PromptIndex(read_validation_data(list(data))) if data else None
    groups, notes, grouped_by = [], [], set()
    for step, path in find_dump_files(dump).items():
        lines = read_jsonl(path)
        step = _step_of(step, lines)
        grouped_by.add("uid" if _has_uid(lines[0][1]) else "prompt")
        if len(grouped_by) > 1:
            raise EvaluationInputError(f"{path}: some dump files have a uid and others not (two trainers' dumps?)")
        pending = list(_pending_groups(path, step, lines, index))
        groups += _verify(pending, scorer, progress, len(lines))
    if grouped_by == {"prompt"}:
        notes.append(
            "legacy dump (no uid): groups are the samples that share their prompt text; two rows of a batch with "
            "the same question count as one group"
        )
    if index is None:
        notes.append("no --data: every group was verified as math (give the training parquet for data sources)")
    notes += _unverified_notes(groups)
    return DumpGroups(groups, grouped_by.pop(), notes)


def _pending_groups(path: Path, step: int, lines: list[tuple[int, dict]], index: PromptIndex | None):
    line_of = {id(record): number for number, record in lines}
    unmatched, ambiguous = [], []
    for records in prompt_groups(path, lines).values():
        first = records[0]
        truth = first.get("gts")  # what the run's reward manager scored against
        if index is None:
            source, kind = NO_DATA_SOURCE, "math"
        else:
            rows = [match.row for match in index.match(first["input"], truth)]
            if not rows:
                unmatched.append(line_of[id(first)])
                continue
            if len({(row.data_source, row.ability) for row in rows}) > 1:
                ambiguous.append((line_of[id(first)], rows))
                continue
            source, kind = rows[0].data_source, benchmark_kind(rows[0].data_source, rows[0].ability)
            truth = rows[0].ground_truth if truth is None else truth
        samples = [
            Sample(
                benchmark=source,
                ability=None,
                prompt_id=f"of {path} line {line_of[id(first)]}",  # names the prompt in a scorer's error
                ground_truth=truth,
                response=record["output"],
                dumped_score=_score(path, line_of[id(record)], record),
            )
            for record in records
        ]
        yield _Pending(step, source, kind, samples, "no ground truth (gts) in the dump" if truth is None else None)
    if unmatched:
        raise EvaluationInputError(
            f"{path}: {len(unmatched)} prompt(s) match no row of --data, e.g. the prompt of line {unmatched[0]} "
            "(is --data the run's training parquet?)"
        )
    if ambiguous:
        number, rows = ambiguous[0]
        raise EvaluationInputError(
            f"{path}: {len(ambiguous)} prompt(s) match rows of --data with different data sources, e.g. the prompt "
            f"of line {number} matches {'; '.join(f'{row.where} ({row.data_source})' for row in rows[:3])}"
        )


def _verify(pending: list[_Pending], scorer: Scorer, progress, lines: int) -> list[Group]:
    """The groups in dump order, each verified by its kind's scorer (or left unverified, with the reason)."""
    verdicts: dict[int, tuple[bool, ...]] = {}  # position in pending -> correct per sample
    reasons = {position: group.unverified_because for position, group in enumerate(pending)}
    by_kind: dict[str, list[int]] = {}
    for position, group in enumerate(pending):
        if reasons[position] is None:
            by_kind.setdefault(group.kind, []).append(position)
    for kind, positions in by_kind.items():
        if kind == "unknown":  # the Scorer's own reason names an option of the evaluation script
            method, why_not = None, "not scored: a data source of unknown kind (set ability in the parquet)"
        else:
            method, why_not = scorer.method(kind, [s for p in positions for s in pending[p].samples])
        if method is None:
            reasons.update({p: f"{kind} {why_not}" for p in positions})
            continue
        for chunk in _chunks(positions, pending):
            samples = [s for p in chunk for s in pending[p].samples]
            outcomes = iter(correct for correct, _ in scorer.score(method, samples))
            verdicts.update({p: tuple(next(outcomes) for _ in pending[p].samples) for p in chunk})
            if progress is not None:
                progress(len(samples))
    if progress is not None:  # the rest: unverified samples and the earlier outputs of multi-output sessions
        progress(lines - sum(len(pending[p].samples) for p in verdicts))
    return [
        Group(
            step=group.step,
            data_source=group.data_source,
            kind=group.kind,
            correct=verdicts.get(position),
            scores=tuple(s.dumped_score for s in group.samples),
            lengths=tuple(len(s.response) for s in group.samples),
            unverified_because=None if position in verdicts else reasons[position],
        )
        for position, group in enumerate(pending)
    ]


def _unverified_notes(groups: list[Group]) -> list[str]:
    """One line per reason: how many groups, of which data sources."""
    by_reason: dict[str, Counter[str]] = defaultdict(Counter)
    for group in groups:
        if group.unverified_because:
            by_reason[group.unverified_because][group.data_source] += 1
    return [
        f"{sum(sources.values())} group(s) unverified ({', '.join(sorted(sources))}): {reason}"
        for reason, sources in sorted(by_reason.items())
    ]


def _chunks(positions: list[int], pending: list[_Pending]) -> Iterator[list[int]]:
    """Whole groups, about ``_SCORING_CHUNK`` samples at a time."""
    chunk, size = [], 0
    for position in positions:
        chunk.append(position)
        size += len(pending[position].samples)
        if size >= _SCORING_CHUNK:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _step_of(step: int | None, lines: list[tuple[int, dict]]) -> int:
    """The file's step: its name, else (a single file named otherwise) its lines' ``step``."""
    if step is not None:
        return step
    value = lines[0][1].get("step")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _has_uid(record: dict) -> bool:
    parts = str(record.get("uid", "")).rsplit("_", 2)
    return len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit()


def _score(path: Path, number: int, record: dict) -> float:
    value = record.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EvaluationInputError(f"{path} line {number}: score is missing or not a finite number ({value!r})")
    return float(value)
