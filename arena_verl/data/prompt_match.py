"""Matching a dumped prompt to its row of the run's parquet files, and the ground-truth rule of a matched prompt
(see :mod:`arena_verl.data.dumps` for both)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PromptIndex",
    "PromptMatch",
    "ValidationRow",
    "canonical",
    "joined_truth",
    "last_user_message",
    "plain",
    "same_truth",
    "short",
    "squash",
]

_WHITESPACE = re.compile(r"\s+")
_EXAMPLE_CHARS = 160


@dataclass(frozen=True)
class ValidationRow:
    """One row of a validation parquet file."""

    where: str  # "file.parquet row 3", for messages
    data_source: str
    ability: str | None
    ground_truth: Any
    user_message: str


@dataclass(frozen=True)
class PromptMatch:
    row: ValidationRow
    identity: tuple  # what must agree between rows that match the same prompt


class PromptIndex:
    """Finds the parquet rows whose user message is inside a rendered prompt (see :mod:`arena_verl.data.dumps`)."""

    def __init__(self, rows: list[ValidationRow]):
        self.entries = [(squash(row.user_message), row) for row in rows]
        self.by_truth: dict[str, list[tuple[str, ValidationRow]]] = defaultdict(list)
        for entry in self.entries:
            self.by_truth[canonical(entry[1].ground_truth)].append(entry)

    def match(self, rendered: str, dumped_truth: Any) -> list[PromptMatch]:
        squashed = squash(rendered)
        agreeing = self.by_truth.get(canonical(dumped_truth), []) if dumped_truth is not None else []
        found = [(message, row) for message, row in agreeing if message in squashed]
        if not found:  # no gts, or one serialised differently: every row (a disagreeing truth is reported later)
            found = [(message, row) for message, row in self.entries if message in squashed]
        messages = {message for message, _ in found}
        longest = [(m, row) for m, row in found if not any(m != other and m in other for other in messages)]
        return [PromptMatch(row, (row.data_source, row.ability, canonical(row.ground_truth))) for _, row in longest]


def joined_truth(dumped: Any, parquet: Any) -> tuple[Any, bool]:
    """The ground truth to verify a dumped prompt against, and whether the dump and its parquet row disagree: the
    dump's wins; the row's where the dump has none or where both are the same truth (module docstring)."""
    if dumped is None:
        return plain(parquet), False
    if same_truth(dumped, parquet):
        return plain(parquet), False
    return dumped, True


# ---------------------------------------------------------------------------------------------------- values


def last_user_message(prompt: Any) -> str | None:
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


def squash(text: str) -> str:
    return _WHITESPACE.sub("", text)


def plain(value: Any) -> Any:
    """numpy values (parquet cells) as Python values, recursively, as verl's dump serialises them."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def canonical(value: Any) -> str:
    return json.dumps(plain(value), sort_keys=True, ensure_ascii=False, default=str)


def same_truth(dumped: Any, parquet: Any) -> bool:
    # verl's legacy trainer serialises what JSON cannot hold with str() (a numpy array becomes "['2' '3']").
    return canonical(dumped) == canonical(parquet) or (isinstance(dumped, str) and dumped == str(parquet))


def short(value: Any) -> str:
    """Its start and end (a rendered prompt: the template's start, the question's end)."""
    text = " ".join((value if isinstance(value, str) else canonical(value)).split())
    if len(text) > _EXAMPLE_CHARS:
        text = text[: _EXAMPLE_CHARS // 3] + " ... " + text[-2 * _EXAMPLE_CHARS // 3 :]
    return repr(text)
