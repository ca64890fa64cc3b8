"""The audit's pairs file (``--out``/``pairs.jsonl``): one JSON line per judged pair (both orders), with the
guarantees of every resumable file (:mod:`arena_verl.tools.common.resumable_file`: locked for one run, repaired after
a kill, appended whole, this run's settings (:data:`RUN_KEYS`) on every line), keyed by pair."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from arena_verl.core.counts import is_count
from arena_verl.core.errors import InputError
from arena_verl.core.tournament import valid_outcome
from arena_verl.evaluation.audit import PAIR_KINDS, AuditedPair
from arena_verl.tools.common.resumable_file import LineFormat, ResumableFile

__all__ = ["PAIRS_FILE", "RUN_KEYS", "PairsFile", "PairsInputError", "PairsWriteError", "audited", "settings_text"]

PAIRS_FILE = "pairs.jsonl"
# What every line of one pairs file shares: the judge, how it gives verdicts, the choice of pairs, and how the dump
# was verified (which groups are diverse depends on it). --max-pairs is not one: a larger one extends the file.
RUN_KEYS = ("judge", "verdict", "think_first", "seed", "verification")
_PER_CALL = ("outcomes", "low_mass", "tokens_in", "tokens_out", "seconds")  # [first order, second order]
# Per call too, as the judge's engine reported them; optional: files written before they existed stay readable.
ENGINE_TOKENS = ("prompt_tokens", "cached_tokens")
LINE_KEYS = ("pair", "kind", "step", "group", "first", "second", "triple", "digests", "dump_file", *_PER_CALL)


class PairsInputError(InputError):
    """A pairs file the command cannot use (the message names the file and line)."""


class PairsWriteError(OSError):
    """A line could not be appended (a full disk): whole lines stay, a torn last one is dropped by the next run."""


class PairsFile(ResumableFile):
    """``pairs.jsonl``. ``lines`` holds every record (appended ones included), ``by_pair`` the same by pair id."""

    def __init__(self, path: Path):
        super().__init__(path, PAIR_LINES)

    @property
    def by_pair(self) -> dict[str, dict[str, Any]]:
        return self.by_key


def audited(line: dict[str, Any]) -> AuditedPair:
    """A checked line as the figures read it."""
    return AuditedPair(
        kind=line["kind"],
        first=line["first"],
        second=line["second"],
        outcomes=tuple(line["outcomes"]),
        triple=line["triple"],
        low_mass=tuple(line["low_mass"]),
        tokens_in=tuple(line["tokens_in"]),
        tokens_out=tuple(line["tokens_out"]),
        seconds=tuple(line["seconds"]),
        prompt_tokens=tuple(line.get("prompt_tokens", (None, None))),
        cached_tokens=tuple(line.get("cached_tokens", (None, None))),
        members={name: tuple(pair) for name, pair in line["members"].items()} if line.get("members") else None,
    )


def settings_text(settings: dict[str, Any]) -> str:
    return PAIR_LINES.settings_text(settings)


def _wrong_type(record: dict[str, Any]) -> str | None:
    """What in a line the figures cannot read (None: nothing)."""

    def seconds(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0

    def count_or_null(value: Any) -> bool:
        return value is None or is_count(value)

    def two(key: str, ok) -> bool:
        value = record[key]
        return isinstance(value, list) and len(value) == 2 and all(ok(v) for v in value)

    if not isinstance(record["pair"], str):
        return "pair is not a string"
    if record["kind"] not in PAIR_KINDS:
        return f"kind {record['kind']!r} is not one of {', '.join(PAIR_KINDS)}"
    if record["step"] is not None and not is_count(record["step"]):
        return f"step {record['step']!r} is not a step number"
    if not isinstance(record["group"], str) or not is_count(record["first"]) or not is_count(record["second"]):
        return "group, first or second is not a group key and two trace indices"
    if record["triple"] is not None and not isinstance(record["triple"], str):
        return "triple is not a string"
    if not two("digests", lambda d: isinstance(d, str)) or not isinstance(record["dump_file"], str):
        return "digests or dump_file is not text"
    if not two("outcomes", lambda o: o is None or valid_outcome(o) is not None):
        return "outcomes is not two verdicts (numbers in [0, 1] or null)"
    if not two("low_mass", is_count):
        return "low_mass is not two counts"
    if not two("tokens_in", count_or_null) or not two("tokens_out", count_or_null):
        return "tokens_in or tokens_out is not two counts (or null)"
    if not two("seconds", lambda s: s is None or seconds(s)):
        return "seconds is not two durations (or null)"
    for key in ENGINE_TOKENS:
        if key in record and not two(key, count_or_null):
            return f"{key} is not two counts (or null)"
    members = record.get("members")  # a judge ensemble's members (optional: a single judge writes none)
    if members is not None:
        verdict = lambda o: o is None or valid_outcome(o) is not None  # noqa: E731
        if not isinstance(members, dict) or not all(
            isinstance(name, str) and isinstance(pair, list) and len(pair) == 2 and all(verdict(o) for o in pair)
            for name, pair in members.items()
        ):
            return "members is not each member's two verdicts (numbers in [0, 1] or null)"
    return None


PAIR_LINES = LineFormat(
    noun="pairs",
    command="audit-judge",
    line_start=b'{"pair":',  # every line this command writes starts so: a torn last line does too
    run_keys=RUN_KEYS,
    required=(*LINE_KEYS, *RUN_KEYS),
    check=_wrong_type,
    key=lambda line: line["pair"],
    input_error=PairsInputError,
    write_error=PairsWriteError,
    written_with="judged",
)
