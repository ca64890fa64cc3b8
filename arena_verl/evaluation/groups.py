"""A rollout dump as GRPO groups with their verifier outcomes: what RLVR would have rewarded, step by step
(``arena-verl analyze``).

A dump's ``score`` is the reward after the arena judged, so the verifier's outcome is not in it: each group's final
outputs are re-verified by the one dump reader (:mod:`arena_verl.evaluation.verified`: the same join, ground truth
and scorers as ``arena-verl score`` and the evaluation). A group whose kind has no scorer here (code without
``--sandbox-url``, an unknown data source) or whose samples have no ground truth is *unverified*: counted as such,
never guessed.

Groups are verl's: the samples sharing the prompt uuid of V1's ``uid`` (a session with several outputs counts once,
by its last output), else (legacy trainer, no ``uid``) the samples sharing their ``input`` text, which also merges
two rows of the batch that hold the same question. See :func:`arena_verl.data.dumps.prompt_groups`.

No dump names its data source: with the training parquet (``--data``) each prompt is joined to its row (see
:mod:`arena_verl.data.dumps`), which gives the data source and the scorer; without it every group is verified as
math (the arena's main use), under the data source ``NO_DATA_SOURCE``.

Only what the summary needs is kept per group (outcomes, dumped scores, response lengths), not the texts, so a long
run's dump folder fits in memory.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena_verl.core.names import DIVERSITY_TOL
from arena_verl.core.routing import is_uniform
from arena_verl.data.dump_files import EvaluationInputError, count_lines, find_dump_files
from arena_verl.data.dumps import NO_DATA_SOURCE, BlankLines, DuplicateUid, Sample, TruthDisagreement
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.verified import DUPLICATE_UID, NO_GROUND_TRUTH, VerifiedGroup, read_verified

__all__ = ["NO_DATA_SOURCE", "Group", "DumpGroups", "count_dump_lines", "read_groups"]

UNKNOWN_KIND = "not scored: a data source of unknown kind (set ability in the parquet)"


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
        """Every dumped reward equal (within the arena's diversity tolerance): zero advantage under the rewards the
        run trained on."""
        return is_uniform(self.scores, DIVERSITY_TOL)


@dataclass
class DumpGroups:
    groups: list[Group]
    grouped_by: str  # "uid" (V1 dumps) or "prompt" (legacy dumps: samples sharing their input text)
    notes: list[str]
    disagreements: list[TruthDisagreement] = field(default_factory=list)  # parquet ground truth != the dump's
    duplicates: dict[int, list[DuplicateUid]] = field(default_factory=dict)  # step -> lines that repeat a uid
    blank_lines: list[BlankLines] = field(default_factory=list)  # the blank lines of each file (skipped)


def count_dump_lines(dump: str | Path) -> int:
    """The number of lines of the dump's ``<step>.jsonl`` files (the progress bar's total)."""
    total = 0
    for path in find_dump_files(dump).values():
        total += count_lines(path)
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
    groups, notes, grouped_by, disagreements, duplicates, blanks = [], [], set(), [], defaultdict(list), []
    for verified in read_verified(dump, scorer, data=data or (), progress=progress):
        file = verified.file
        grouped_by.add(file.grouped_by)
        if len(grouped_by) > 1:
            raise EvaluationInputError(f"{file.path}: some dump files have a uid and others not (two trainers' dumps?)")
        step = file.step if file.step is not None else file.line_step or 0
        groups += [_group(step, group, file.path) for group in verified.groups]
        disagreements += verified.disagreements
        blanks += verified.blank_lines
        if file.duplicates:
            duplicates[step] += file.duplicates
    if grouped_by == {"prompt"}:
        notes.append(
            "legacy dump (no uid): groups are the samples that share their prompt text; two rows of a batch with "
            "the same question count as one group"
        )
    if not data:
        notes.append("no --data: every group was verified as math (give the training parquet for data sources)")
    notes += _unverified_notes(groups)
    return DumpGroups(groups, grouped_by.pop(), notes, disagreements, dict(duplicates), blanks)


def _group(step: int, group: VerifiedGroup, path: Path) -> Group:
    """What the summary keeps of a verified group (no texts). A group with a uid whose copies differ is unverified
    (:data:`DUPLICATE_UID`): which of them the run trained on is unknown."""
    correct = group.correct
    if group.unverified_because in (None, NO_GROUND_TRUTH, DUPLICATE_UID):
        why = group.unverified_because
    elif group.kind == "unknown":  # the Scorer's own reason names an option of the evaluation
        why = UNKNOWN_KIND
    else:
        why = f"{group.kind} {group.unverified_because}"
    return Group(
        step=step,
        data_source=group.data_source,
        kind=group.kind,
        correct=correct,
        scores=tuple(_score(path, sample) for sample in group.samples),
        lengths=tuple(len(sample.response) for sample in group.samples),
        unverified_because=why,
    )


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


def _score(path: Path, sample: Sample) -> float:
    value = sample.dumped_score  # a number, or None when the line's score is missing or not a number
    if value is None or not math.isfinite(value):
        raise EvaluationInputError(f"{path} line {sample.line}: score is missing or not a finite number ({value!r})")
    return value
