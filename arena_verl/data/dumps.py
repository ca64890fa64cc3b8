"""Reading generations to evaluate: verl's validation dumps (joined to the validation parquet) or plain jsonl files.

**verl's validation dumps** (``trainer.validation_data_dir``): one ``<global_step>.jsonl`` per validation, written
by the trainer's ``_dump_generations``, one line per sample with the keys ``input`` (the prompt's token ids decoded
with ``skip_special_tokens=True``: the chat template's text without its special tokens), ``output`` (the response,
decoded the same way), ``gts`` (``reward_model.ground_truth``), ``score`` (the reward), ``step``, and every reward
extra-info key (the arena manager's ``acc``, ``arena/*``). verl's V1 trainer also writes ``uid``, the sample's key
``{prompt uuid}_{session}_{index}``: the samples of one prompt share the uuid, and a session (one of the n samples)
with several outputs (multi-turn agent loops) is scored by its last output, as verl's own metrics do. The legacy
trainer writes no ``uid``: its samples of one prompt share the ``input`` text.

No dump names its ``data_source``, so each prompt is joined to its row of the validation parquet files: a row
matches when its last user message is contained in the dump's ``input`` (all whitespace removed on both sides,
which is immune to the chat template and to the decoder's spacing). When several rows match, the dump's ``gts``
narrows them down, then a row whose message is contained in another match's message gives way to that one (the
input holds the longer question). Rows left that disagree on data source, ability or ground truth are an error,
as are prompts that match no row and matches whose ground truth differs from the dump's ``gts``: each error names
how many prompts and one example. The ground truth used for scoring is the parquet's.

**Plain generation files** (any ``.jsonl`` whose lines have ``response``), for evaluation without the trainer::

    {"data_source": "aime2024", "index": 7, "response": "...", "ground_truth": "204"}

``data_source``, ``response`` and ``ground_truth`` are required; the prompt is ``index`` (any id, unique per
prompt within its data source) or else ``prompt`` (its text or chat messages): the lines that share it are that
prompt's samples. Optional: ``ability``, ``score`` and ``acc`` (used by ``--use-dumped-scores``) and ``step``.
Such files need no parquet.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "EvaluationInputError",
    "PromptIndex",
    "PromptMatch",
    "Sample",
    "ValidationRow",
    "find_dump_files",
    "prompt_groups",
    "read_jsonl",
    "read_samples",
    "read_validation_data",
    "select_steps",
]

_WHITESPACE = re.compile(r"\s+")
_EXAMPLE_CHARS = 160


class EvaluationInputError(ValueError):
    """Input that cannot be evaluated as given (the message names the file, row or prompt)."""


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


@dataclass(frozen=True)
class ValidationRow:
    """One row of a validation parquet file."""

    where: str  # "file.parquet row 3", for messages
    data_source: str
    ability: str | None
    ground_truth: Any
    user_message: str


# ------------------------------------------------------------------------------------------------------- files


def find_dump_files(path: str | Path) -> dict[int | None, Path]:
    """``{step: file}``: the ``<step>.jsonl`` files of a dump folder, or the one file given (step from its name)."""
    path = Path(path)
    if path.is_file():
        return {int(path.stem) if path.stem.isdigit() else None: path}
    if not path.is_dir():
        raise EvaluationInputError(f"{path}: no such file or folder")
    files = {int(file.stem): file for file in path.glob("*.jsonl") if file.stem.isdigit()}
    if not files:
        raise EvaluationInputError(
            f"{path}: no <step>.jsonl files (trainer.rollout_data_dir and trainer.validation_data_dir hold them)"
        )
    return dict(sorted(files.items()))


def select_steps(files: dict[int | None, Path], step: str | int = "latest") -> list[tuple[int | None, Path]]:
    """``latest`` (the highest step), ``all``, or one step number."""
    if step == "all":
        return sorted(files.items(), key=lambda item: -1 if item[0] is None else item[0])
    if step == "latest":
        numbered = [s for s in files if s is not None]
        chosen = max(numbered) if numbered else None
        return [(chosen, files[chosen])]
    try:
        wanted = int(step)
    except (TypeError, ValueError):
        raise EvaluationInputError(f"--step must be latest, all or a step number, got {step!r}") from None
    if wanted not in files:
        have = ", ".join(str(s) for s in files if s is not None) or "none"
        raise EvaluationInputError(f"no dump for step {wanted} (steps: {have})")
    return [(wanted, files[wanted])]


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
            message = _last_user_message(prompt)
            if not message or not _squash(message):
                raise EvaluationInputError(f"{where}: the prompt has no user message")
            rows.append(
                ValidationRow(where, str(data_source), _text_or_none(ability), reward_model["ground_truth"], message)
            )
    return rows


def read_samples(path: str | Path, validation: list[ValidationRow] | None) -> list[Sample]:
    """The samples of one dump or generation file (a verl dump needs ``validation``, the parquet rows)."""
    lines = read_jsonl(Path(path))
    if "response" in lines[0][1]:
        return _generation_samples(Path(path), lines)
    if "input" in lines[0][1] and "output" in lines[0][1]:
        if not validation:
            raise EvaluationInputError(
                f"{path}: a verl dump names no data source; give the validation parquet (--data)"
            )
        return _dump_samples(Path(path), lines, validation)
    raise EvaluationInputError(
        f"{path} line {lines[0][0]}: neither a verl dump (input, output) nor a generation file (response): "
        f"keys {sorted(lines[0][1])}"
    )


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    lines = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EvaluationInputError(f"{path} line {number}: not UTF-8 text ({exc.reason})") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvaluationInputError(f"{path} line {number}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise EvaluationInputError(f"{path} line {number}: not a JSON object")
            lines.append((number, record))
    if not lines:
        raise EvaluationInputError(f"{path}: empty")
    return lines


# --------------------------------------------------------------------------------------------- generation files


def _generation_samples(path: Path, lines: list[tuple[int, dict]]) -> list[Sample]:
    samples = []
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
        samples.append(
            Sample(
                benchmark=source,
                ability=_text_or_none(record.get("ability")),
                prompt_id=prompt_id,
                ground_truth=record["ground_truth"],
                response=record["response"],
                dumped_score=_number_or_none(record.get("score")),
                dumped_acc=_number_or_none(record.get("acc")),
            )
        )
    return samples


# ------------------------------------------------------------------------------------------------- verl dumps


def _dump_samples(path: Path, lines: list[tuple[int, dict]], validation: list[ValidationRow]) -> list[Sample]:
    groups = prompt_groups(path, lines)
    index = PromptIndex(validation)
    unmatched, ambiguous, disagreeing = [], [], []
    samples = []
    for prompt_id, records in groups.items():
        rendered, dumped_truth = records[0]["input"], records[0].get("gts")
        rows = index.match(rendered, dumped_truth)
        if not rows:
            unmatched.append(rendered)
            continue
        if len({row.identity for row in rows}) > 1:
            ambiguous.append((rendered, rows))
            continue
        row = rows[0].row
        if dumped_truth is not None and not _same_truth(dumped_truth, row.ground_truth):
            disagreeing.append((rendered, dumped_truth, row))
            continue
        for record in records:
            samples.append(
                Sample(
                    benchmark=row.data_source,
                    ability=row.ability,
                    prompt_id=prompt_id,
                    ground_truth=row.ground_truth,
                    response=str(record["output"]),
                    dumped_score=_number_or_none(record.get("score")),
                    dumped_acc=_number_or_none(record.get("acc")),
                )
            )
    problems = []
    if unmatched:
        problems.append(f"{len(unmatched)} prompt(s) match no validation row, e.g. input {_short(unmatched[0])}")
    if ambiguous:
        rendered, rows = ambiguous[0]
        problems.append(
            f"{len(ambiguous)} prompt(s) match several validation rows that differ, e.g. input {_short(rendered)} "
            f"matches {'; '.join(match.row.where for match in rows[:3])}"
        )
    if disagreeing:
        rendered, truth, row = disagreeing[0]
        problems.append(
            f"{len(disagreeing)} prompt(s) match a row whose ground truth is not the dump's gts, e.g. input "
            f"{_short(rendered)} has gts {_short(truth)}, {row.where} has {_short(row.ground_truth)}"
        )
    if problems:
        raise EvaluationInputError(f"{path}: " + "; ".join(problems) + " (is --data the run's validation set?)")
    return samples


def prompt_groups(path: Path, lines: list[tuple[int, dict]]) -> dict[str, list[dict]]:
    """The dump's samples by prompt: by the uuid of V1's ``uid`` (last output per session), else by ``input``."""
    finals: dict[tuple[str, str], tuple[int, dict]] = {}  # (prompt, session) -> (output index, record)
    first_lines: dict[str, int] = {}  # legacy: input text -> the line it first appears on
    for number, record in lines:
        for key in ("input", "output"):
            if not isinstance(record.get(key), str):
                raise EvaluationInputError(f"{path} line {number}: {key} is missing or not a string")
        parts = str(record.get("uid", "")).rsplit("_", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
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
    return dict(groups)


@dataclass(frozen=True)
class PromptMatch:
    row: ValidationRow
    identity: tuple  # what must agree between rows that match the same prompt


class PromptIndex:
    """Finds the validation rows whose user message is inside a rendered prompt (see the module docstring)."""

    def __init__(self, rows: list[ValidationRow]):
        self.entries = [(_squash(row.user_message), row) for row in rows]
        self.by_truth: dict[str, list[tuple[str, ValidationRow]]] = defaultdict(list)
        for entry in self.entries:
            self.by_truth[_canonical(entry[1].ground_truth)].append(entry)

    def match(self, rendered: str, dumped_truth: Any) -> list[PromptMatch]:
        squashed = _squash(rendered)
        same_truth = self.by_truth.get(_canonical(dumped_truth), []) if dumped_truth is not None else []
        found = [(message, row) for message, row in same_truth if message in squashed]
        if not found:  # no gts, or one serialised differently: every row (a disagreeing truth is reported later)
            found = [(message, row) for message, row in self.entries if message in squashed]
        messages = {message for message, _ in found}
        longest = [(m, row) for m, row in found if not any(m != other and m in other for other in messages)]
        return [PromptMatch(row, (row.data_source, row.ability, _canonical(row.ground_truth))) for _, row in longest]


# ---------------------------------------------------------------------------------------------------- values


def _last_user_message(prompt: Any) -> str | None:
    if isinstance(prompt, str):
        return prompt
    messages = prompt.tolist() if hasattr(prompt, "tolist") else prompt
    if not isinstance(messages, (list, tuple)):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if hasattr(content, "tolist"):
                content = content.tolist()
            if isinstance(content, (list, tuple)):  # multimodal: the text parts
                return "\n".join(part.get("text") or "" for part in content if isinstance(part, dict))
            return None
    return None


def _squash(text: str) -> str:
    return _WHITESPACE.sub("", text)


def _plain(value: Any) -> Any:
    """numpy values (parquet cells) as Python values, recursively, as verl's dump serialises them."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False, default=str)


def _same_truth(dumped: Any, parquet: Any) -> bool:
    # verl's legacy trainer serialises what JSON cannot hold with str() (a numpy array becomes "['2' '3']").
    return _canonical(dumped) == _canonical(parquet) or (isinstance(dumped, str) and dumped == str(parquet))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else None


def _short(value: Any) -> str:
    """Its start and end (a rendered prompt: the template's start, the question's end)."""
    text = " ".join((value if isinstance(value, str) else _canonical(value)).split())
    if len(text) > _EXAMPLE_CHARS:
        text = text[: _EXAMPLE_CHARS // 3] + " ... " + text[-2 * _EXAMPLE_CHARS // 3 :]
    return repr(text)
