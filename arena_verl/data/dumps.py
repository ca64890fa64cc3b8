"""Reading dumps as joined samples: verl's rollout and validation dumps (joined to the run's parquet) or plain jsonl
generation files. The first step of the one dump reader of ``analyze``, ``score`` and the evaluation (the next,
verification, is :mod:`arena_verl.evaluation.verified`).

**verl's dumps** (``trainer.rollout_data_dir``, ``trainer.validation_data_dir``): one ``<global_step>.jsonl`` per
step, written by the trainer's ``_dump_generations``, one line per sample with the keys ``input`` (the prompt's
token ids decoded with ``skip_special_tokens=True``: the chat template's text without its special tokens),
``output`` (the response, decoded the same way), ``gts`` (``reward_model.ground_truth``), ``score`` (the reward),
``step``, and every reward extra-info key (the arena manager's ``acc``, ``arena/*``). verl's V1 trainer also writes
``uid``, the sample's key ``{prompt uuid}_{session}_{index}``: the samples of one prompt share the uuid, and a
session (one of the n samples) with several outputs (multi-turn agent loops) is scored by its last output, as verl's
own metrics do. The legacy trainer writes no ``uid``: its samples of one prompt share the ``input`` text.

No dump names its ``data_source``, so each prompt is joined to its row of the run's parquet files: a row
matches when its last user message is contained in the dump's ``input`` (all whitespace removed on both sides,
which is immune to the chat template and to the decoder's spacing). When several rows match, the dump's ``gts``
narrows them down, then a row whose message is contained in another match's message gives way to that one (the
input holds the longer question). Rows left that disagree on data source or ability (or, for a prompt without
``gts``, on ground truth) are an error, as are prompts that match no row: each error names how many prompts and one
example. Without parquet files (``--data``) every prompt is math, of the data source :data:`NO_DATA_SOURCE`.

**The ground truth** of a dumped prompt (one rule, for ``analyze``, ``score`` and the evaluation alike):

1. the dump's ``gts``: what the run's reward manager scored against (verl writes the batch's
   ``reward_model.ground_truth``), so an offline verdict reproduces the run's;
2. the parquet row's where the dump has none (``gts`` missing or null), or where the two are the same truth (the
   row keeps its type: verl's legacy trainer writes what JSON cannot hold with ``str()``);
3. a row whose ground truth differs from the dump's is a *disagreement*: counted
   (:attr:`DumpFile.disagreements`) and reported by every tool
   (:func:`~arena_verl.data.dump_notes.disagreement_note`: a line on stderr, a count in its JSON output), never a
   reason to verify against another answer;
4. a prompt whose samples carry different ground truths (lines of one uid with different ``gts``, a generation
   file's lines of one prompt with different ``ground_truth``) has no known truth: it is left unverified
   (:attr:`PromptSamples.differing_truths`, said by :func:`~arena_verl.data.dump_notes.differing_truth_note`), never
   scored against either.

**Plain generation files** (any ``.jsonl`` whose lines have ``response``), for evaluation without the trainer::

    {"data_source": "aime2024", "index": 7, "response": "...", "ground_truth": "204"}

``data_source``, ``response`` and ``ground_truth`` are required; the prompt is ``index`` (any id, unique per
prompt within its data source) or else ``prompt`` (its text or chat messages): the lines that share it are that
prompt's samples. Optional: ``ability``, ``score`` and ``acc`` (used by ``--use-dumped-scores``) and ``step``.
Such files need no parquet.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena_verl.data.dump_files import (
    STEP_NAME,
    EvaluationInputError,
    count_lines,
    find_dump_files,
    read_jsonl,
    read_jsonl_lines,
    select_steps,
)
from arena_verl.data.prompt_match import (
    PromptIndex,
    PromptMatch,
    ValidationRow,
    canonical,
    joined_truth,
    last_user_message,
    plain,
    short,
    squash,
)

__all__ = [
    "NO_DATA_SOURCE",
    "BlankLines",
    "DumpFile",
    "EvaluationInputError",
    "PromptIndex",
    "PromptMatch",
    "PromptSamples",
    "Sample",
    "TruthDisagreement",
    "ValidationRow",
    "DuplicateUid",
    "count_lines",
    "differing_truths",
    "find_dump_files",
    "joined_truth",
    "prompt_groups",
    "read_dump_file",
    "read_jsonl",
    "read_samples",
    "read_validation_data",
    "select_steps",
]

_SAMPLE_KEYS = ("input", "output", "gts", "score", "acc")  # two copies of a uid that agree on these are one sample
NO_DATA_SOURCE = "(no --data)"  # the data source of a dumped prompt when no parquet names it (verified as math)


@dataclass(frozen=True)
class Sample:
    """One generated response to score."""

    benchmark: str  # the data source
    ability: str | None
    prompt_id: str  # the samples of one prompt share it
    ground_truth: Any
    response: str
    dumped_score: float | None = None  # the reward the trainer's reward manager gave
    dumped_acc: float | None = None  # its "acc" extra info, when it wrote one
    line: int | None = None  # its line in the file, for messages


@dataclass(frozen=True)
class PromptSamples:
    """One prompt's samples in one file: the final output of each session, joined to its data source."""

    key: str  # "uid <uuid>" (V1 dump), "input of line N" (legacy dump), "<source> index <i>" (generation file)
    line: int  # the line it first appears on
    problem: str | None  # the dump's input: the prompt as the policy saw it (None in generation files)
    samples: tuple[Sample, ...]
    conflicting_uids: tuple[str, ...] = ()  # uids of it that occur twice in the file with different samples
    differing_truths: tuple[Any, ...] = ()  # its samples' ground truths when they are not all the same (else empty)


@dataclass(frozen=True)
class DuplicateUid:
    """A dump line whose ``uid`` an earlier line of the same step file already has (the first copy counts)."""

    path: Path
    line: int  # the repeat
    first_line: int  # the copy that counts
    uid: str
    conflicting: bool  # it differs from the first copy in input, output, gts, score or acc


@dataclass(frozen=True)
class TruthDisagreement:
    """A dumped prompt whose parquet row has another ground truth than the dump's ``gts`` (the dump's is used)."""

    path: Path
    line: int
    dumped: Any
    parquet: Any
    row: str  # "file.parquet row 3"


@dataclass(frozen=True)
class BlankLines:
    """The blank lines of one dump file (skipped: no sample)."""

    path: Path
    lines: tuple[int, ...]


@dataclass
class DumpFile:
    """One file's prompts, joined (see the module docstring)."""

    path: Path
    step: int | None  # from the file name
    grouped_by: str  # "uid" (V1 dump), "prompt" (legacy dump: shared input text) or "generations"
    prompts: list[PromptSamples]
    joined: bool  # data sources from parquet rows (else NO_DATA_SOURCE, or a generation file's own)
    disagreements: list[TruthDisagreement]
    lines: int  # lines read (a multi-output session's earlier outputs included)
    line_step: int | None = None  # the first line's ``step``
    duplicates: list[DuplicateUid] = field(default_factory=list)  # lines that repeat a uid of the file
    blank_lines: tuple[int, ...] = ()  # line numbers of its blank lines (skipped)

    @property
    def samples(self) -> list[Sample]:
        return [sample for prompt in self.prompts for sample in prompt.samples]

    @property
    def blanks(self) -> list[BlankLines]:
        """Its blank lines, as a list the tools add up over files (empty when it has none)."""
        return [BlankLines(self.path, self.blank_lines)] if self.blank_lines else []


def read_validation_data(paths: list[str | Path]) -> list[ValidationRow]:
    """The rows of verl validation parquet files (``prompt``, ``data_source``, ``reward_model.ground_truth``)."""
    import pandas as pd

    rows = []
    for path in paths:
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise EvaluationInputError(f"{path}: cannot read parquet ({exc})") from exc
        missing = [column for column in ("prompt", "data_source", "reward_model") if column not in frame.columns]
        if missing:
            raise EvaluationInputError(f"{path}: no column {', '.join(missing)} (a verl parquet file has them)")
        abilities = frame["ability"] if "ability" in frame.columns else [None] * len(frame)
        for number, (prompt, data_source, reward_model, ability) in enumerate(
            zip(frame["prompt"], frame["data_source"], frame["reward_model"], abilities)
        ):
            where = f"{path} row {number}"
            if not isinstance(reward_model, dict) or "ground_truth" not in reward_model:
                raise EvaluationInputError(f"{where}: reward_model has no ground_truth")
            message = last_user_message(prompt)
            if not message or not squash(message):
                raise EvaluationInputError(f"{where}: the prompt has no user message")
            rows.append(
                ValidationRow(where, str(data_source), _text_or_none(ability), reward_model["ground_truth"], message)
            )
    return rows


def read_samples(path: str | Path, validation: list[ValidationRow] | None) -> list[Sample]:
    """The samples of one dump or generation file (a verl dump needs ``validation``, the parquet rows)."""
    index = PromptIndex(validation) if validation else None
    return read_dump_file(path, index, need_data=True).samples


def read_dump_file(
    path: str | Path, index: PromptIndex | None, *, need_data: bool = False, generations: bool = True
) -> DumpFile:
    """One verl dump (joined to ``index``'s rows) or, when ``generations``, one plain generation file.

    ``need_data``: a verl dump without ``index`` is an error (else every prompt is math, :data:`NO_DATA_SOURCE`).
    """
    path = Path(path)
    lines, blank = read_jsonl_lines(path)
    number, first = lines[0]
    step = int(path.stem) if STEP_NAME.fullmatch(path.stem) else None
    value = first.get("step")
    line_step = _step_or_none(value)
    if "response" in first and generations:
        prompts = _generation_prompts(path, lines)
        return DumpFile(path, step, "generations", prompts, True, [], len(lines), line_step, [], tuple(blank))
    if "input" in first and "output" in first:
        if index is None and need_data:
            raise EvaluationInputError(
                f"{path}: a verl dump names no data source; give the validation parquet (--data)"
            )
        prompts, disagreements, by_uid, duplicates = _dump_prompts(path, lines, index)
        grouped_by = "uid" if by_uid else "prompt"
        return DumpFile(
            path,
            step,
            grouped_by,
            prompts,
            index is not None,
            disagreements,
            len(lines),
            line_step,
            duplicates,
            tuple(blank),
        )
    if not generations:
        raise EvaluationInputError(f"{path} line {number}: not a verl dump (no input/output keys)")
    raise EvaluationInputError(
        f"{path} line {number}: neither a verl dump (input, output) nor a generation file (response): "
        f"keys {sorted(first)}"
    )


# --------------------------------------------------------------------------------------------- generation files


def _generation_prompts(path: Path, lines: list[tuple[int, dict]]) -> list[PromptSamples]:
    by_prompt: dict[str, list[Sample]] = {}
    first_of: dict[str, int] = {}
    first_lines: dict[tuple[str, str], int] = {}  # (data source, prompt) -> the line it first appears on
    for number, record in lines:
        missing = [key for key in ("data_source", "response", "ground_truth") if key not in record]
        if "index" not in record and "prompt" not in record:
            missing.append("index or prompt")
        if missing:
            raise EvaluationInputError(f"{path} line {number}: no {', '.join(missing)}")
        if not isinstance(record["response"], str):
            raise EvaluationInputError(f"{path} line {number}: response is not a string")
        source = str(record["data_source"])
        if "index" in record:
            prompt_id = f"{source} index {record['index']}"
        else:
            prompt = json.dumps(record["prompt"], sort_keys=True, ensure_ascii=False)
            prompt_id = f"{source} prompt of line {first_lines.setdefault((source, prompt), number)}"
        first_of.setdefault(prompt_id, number)
        by_prompt.setdefault(prompt_id, []).append(
            Sample(
                benchmark=source,
                ability=_text_or_none(record.get("ability")),
                prompt_id=prompt_id,
                ground_truth=record["ground_truth"],
                response=record["response"],
                dumped_score=_score_or_none(record.get("score")),
                dumped_acc=_number_or_none(record.get("acc")),
                line=number,
            )
        )
    return [
        PromptSamples(
            key, first_of[key], None, tuple(samples), differing_truths=differing_truths(s.ground_truth for s in samples)
        )
        for key, samples in by_prompt.items()
    ]


def differing_truths(truths: Iterable[Any]) -> tuple[Any, ...]:
    """The distinct ground truths of one prompt's samples, in order of appearance, when there are several (a
    prompt has one truth: which of them is unknown); empty when they are all the same."""
    distinct: dict[str, Any] = {}
    for truth in truths:
        distinct.setdefault(canonical(truth), plain(truth))
    return tuple(distinct.values()) if len(distinct) > 1 else ()


# ------------------------------------------------------------------------------------------------- verl dumps


def _dump_prompts(
    path: Path, lines: list[tuple[int, dict]], index: PromptIndex | None
) -> tuple[list[PromptSamples], list[TruthDisagreement], bool, list[DuplicateUid]]:
    """Each prompt's samples, joined to its row (see the module docstring); whether it was grouped by uid; and the
    lines that repeat a uid."""
    line_of = {id(record): number for number, record in lines}
    groups, duplicates = _group_lines(path, lines)
    conflicting: dict[str, list[str]] = defaultdict(list)
    for duplicate in duplicates:
        mine = conflicting[_prompt_of_uid(duplicate.uid)]
        if duplicate.conflicting and duplicate.uid not in mine:
            mine.append(duplicate.uid)
    unmatched, ambiguous, disagreements, prompts = [], [], [], []
    for key, records in groups.items():
        first = line_of[id(records[0])]
        rendered, dumped_truth = records[0]["input"], records[0].get("gts")
        source, ability, truth = NO_DATA_SOURCE, "math", dumped_truth
        if index is not None:
            rows = [match.row for match in index.match(rendered, dumped_truth)]
            if not rows:
                unmatched.append((first, rendered))
                continue
            # With a gts the truth is the dump's: rows need only agree on what they are; without, on the truth too.
            kinds = {
                (r.data_source, r.ability, None if dumped_truth is not None else canonical(r.ground_truth))
                for r in rows
            }
            if len(kinds) > 1:
                ambiguous.append((first, rows))
                continue
            row = rows[0]
            source, ability = row.data_source, row.ability
            truth, disagrees = joined_truth(dumped_truth, row.ground_truth)
            if disagrees:
                disagreements.append(TruthDisagreement(path, first, dumped_truth, plain(row.ground_truth), row.where))
        samples = tuple(
            Sample(
                benchmark=source,
                ability=ability,
                prompt_id=key,
                ground_truth=truth,
                response=str(record["output"]),
                dumped_score=_score_or_none(record.get("score")),
                dumped_acc=_number_or_none(record.get("acc")),
                line=line_of[id(record)],
            )
            for record in records
        )
        truths = differing_truths(record.get("gts") for record in records)
        prompts.append(PromptSamples(key, first, rendered, samples, tuple(conflicting.get(key, ())), truths))
    problems = []
    if unmatched:
        number, rendered = unmatched[0]
        problems.append(
            f"{len(unmatched)} prompt(s) match no row of --data, e.g. the prompt of line {number} (input "
            f"{short(rendered)})"
        )
    if ambiguous:
        number, rows = ambiguous[0]
        problems.append(
            f"{len(ambiguous)} prompt(s) match several rows of --data that differ, e.g. the prompt of line {number} "
            f"matches {'; '.join(f'{row.where} ({row.data_source})' for row in rows[:3])}"
        )
    if problems:
        raise EvaluationInputError(f"{path}: " + "; ".join(problems) + " (is --data the run's parquet?)")
    return prompts, disagreements, all(key.startswith("uid ") for key in groups), duplicates


def prompt_groups(path: Path, lines: list[tuple[int, dict]]) -> dict[str, list[dict]]:
    """The dump's samples by prompt: by the uuid of V1's ``uid`` (last output per session), else by ``input``.

    A line whose uid an earlier line of the file has is a *duplicate* (:class:`DuplicateUid`, counted in
    :attr:`DumpFile.duplicates` and reported with :func:`~arena_verl.data.dump_notes.duplicate_note`): the first
    copy is the sample (as verl's own metrics keep the first); a copy that differs from it (in input, output, gts,
    score or acc) marks its prompt's :attr:`PromptSamples.conflicting_uids`, which ``analyze`` leaves unverified.
    Legacy dumps have no uid: two equal lines are two sessions that answered alike."""
    return _group_lines(path, lines)[0]


def _prompt_of_uid(uid: str) -> str:
    return f"uid {uid.rsplit('_', 2)[0]}"


def _group_lines(path: Path, lines: list[tuple[int, dict]]) -> tuple[dict[str, list[dict]], list[DuplicateUid]]:
    finals: dict[tuple[str, str], tuple[int, dict]] = {}  # (prompt, session) -> (output index, record)
    first_lines: dict[str, int] = {}  # legacy: input text -> the line it first appears on
    seen: dict[str, tuple[int, dict]] = {}  # uid -> (line, record) of its first copy
    duplicates: list[DuplicateUid] = []
    for number, record in lines:
        for key in ("input", "output"):
            if not isinstance(record.get(key), str):
                raise EvaluationInputError(f"{path} line {number}: {key} is missing or not a string")
        uid = str(record.get("uid", ""))
        parts = uid.rsplit("_", 2)
        if len(parts) == 3 and STEP_NAME.fullmatch(parts[1]) and STEP_NAME.fullmatch(parts[2]):
            if uid in seen:
                first_line, first = seen[uid]
                differs = any(first.get(key) != record.get(key) for key in _SAMPLE_KEYS)
                duplicates.append(DuplicateUid(path, number, first_line, uid, differs))
                continue
            seen[uid] = (number, record)
            prompt, session, output = f"uid {parts[0]}", parts[1], int(parts[2])
        else:  # legacy trainer: the samples of a prompt share their input text; each line is a session
            prompt = f"input of line {first_lines.setdefault(record['input'], number)}"
            session, output = f"line {number}", 0
        if (prompt, session) not in finals or output > finals[(prompt, session)][0]:
            finals[(prompt, session)] = (output, record)
    by_uid = sum(prompt.startswith("uid ") for prompt, _ in finals)
    if 0 < by_uid < len(finals):  # grouping half by uid, half by text would split groups without a word
        raise EvaluationInputError(
            f"{path}: some lines have a uid of the form <uuid>_<session>_<index> and others not: one trainer's dump?"
        )
    groups: dict[str, list[dict]] = defaultdict(list)
    for (prompt, _), (_, record) in finals.items():
        groups[prompt].append(record)
    return dict(groups), duplicates


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _score_or_none(value: Any) -> float | None:
    """A reward as a float; a boolean is no reward (JSON's true is not the number 1), None as any other non-number."""
    return None if isinstance(value, bool) else _number_or_none(value)


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer beyond a float: not a finite number (refused where a score must be one)
        return math.inf if value > 0 else -math.inf


def _step_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)
