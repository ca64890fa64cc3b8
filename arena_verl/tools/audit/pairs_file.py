"""The audit's pairs file (``--out``/``pairs.jsonl``): one JSON line per judged pair (both orders), appended whole
(one ``write`` on an append-only descriptor, then ``fsync``), locked for one run, repaired after a kill, and checked
to hold one audit: every line has this run's settings (:data:`RUN_KEYS`). The same guarantees as ``arena-verl
score``'s score file (:mod:`arena_verl.tools.score.score_file`), for lines keyed by pair.

A torn last line (any text after the last newline) is dropped with a note when the lines before it are pair lines,
or when it starts as a pair line does; else the file is not a pairs file and is refused untouched. A corrupt line
before the last is refused, naming its line number."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from pathlib import Path
from typing import Any

from arena_verl.core.errors import InputError
from arena_verl.core.tournament import valid_outcome
from arena_verl.evaluation.audit import PAIR_KINDS, AuditedPair

__all__ = ["PAIRS_FILE", "RUN_KEYS", "PairsFile", "PairsInputError", "PairsWriteError", "audited", "settings_text"]

PAIRS_FILE = "pairs.jsonl"
# What every line of one pairs file shares: the judge, how it gives verdicts, the choice of pairs, and how the dump
# was verified (which groups are diverse depends on it). --max-pairs is not one: a larger one extends the file.
RUN_KEYS = ("judge", "verdict", "think_first", "seed", "verification")
_PER_CALL = ("outcomes", "low_mass", "tokens_in", "tokens_out", "seconds")  # [first order, second order]
LINE_KEYS = ("pair", "kind", "step", "group", "first", "second", "triple", "digests", "dump_file", *_PER_CALL)
_LINE_START = b'{"pair":'  # every line this command writes starts so: a torn last line does too


class PairsInputError(InputError):
    """A pairs file the command cannot use (the message names the file and line)."""


class PairsWriteError(OSError):
    """A line could not be appended (a full disk): whole lines stay, a torn last one is dropped by the next run."""


class PairsFile:
    """``pairs.jsonl``: locked, repaired and read by :meth:`open`, appended one whole line at a time. ``lines`` holds
    every record (appended ones included), ``by_pair`` the same by pair id."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fd: int | None = None
        self.lines: list[dict[str, Any]] = []
        self.by_pair: dict[str, dict[str, Any]] = {}
        self.repaired = 0  # bytes of a torn last line dropped

    def open(self, settings: dict[str, Any]) -> None:
        """Lock, repair and read the file; its lines must have been written with ``settings``."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise PairsInputError(f"{self.path}: cannot be written ({exc.strerror or exc})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise PairsInputError(f"{self.path}: another audit-judge run is writing this file") from None
        try:
            content = self.path.read_bytes()
            complete = content.rfind(b"\n") + 1
            self.lines = _parse_lines(self.path, content[:complete])  # checked before a byte changes
            for number, line in enumerate(self.lines, start=1):
                theirs = {key: line[key] for key in RUN_KEYS}
                if theirs != settings:
                    raise PairsInputError(
                        f"{self.path} line {number} was judged with {settings_text(theirs)}, this run has "
                        f"{settings_text(settings)}: rerun with the file's settings or give another --out"
                    )
            tail = content[complete:]
            if tail and not self.lines and not (tail.startswith(_LINE_START) or _LINE_START.startswith(tail)):
                raise PairsInputError(f"{self.path} line 1: not a pairs line and no newline after it")
            if complete < len(content):  # a write cut short by a kill: never a whole line
                os.ftruncate(self.fd, complete)
                os.fsync(self.fd)
                self.repaired = len(content) - complete
        except OSError as exc:
            self.close()
            raise PairsInputError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None
        except PairsInputError:
            self.close()
            raise
        self.by_pair = {line["pair"]: line for line in self.lines}

    def append(self, record: dict[str, Any]) -> None:
        """One line, whole or not at all: a single write on the append-only descriptor, then fsync."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
        try:
            written = os.write(self.fd, data)
            if written != len(data):  # left torn: the next run drops it
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            os.fsync(self.fd)
        except OSError as exc:
            raise PairsWriteError(f"{self.path}: cannot append ({exc.strerror or exc})") from None
        self.lines.append(record)
        self.by_pair[record["pair"]] = record

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # releases the lock
            self.fd = None


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
    )


def settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{key}={settings.get(key)}" for key in RUN_KEYS)


def _parse_lines(path: Path, content: bytes) -> list[dict[str, Any]]:
    lines = []
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise PairsInputError(f"{path} line {number}: not JSON (is this an audit-judge pairs file?)") from None
        if not isinstance(record, dict):
            raise PairsInputError(f"{path} line {number}: not a JSON object (is this an audit-judge pairs file?)")
        missing = [key for key in (*LINE_KEYS, *RUN_KEYS) if key not in record]
        if missing:
            raise PairsInputError(f"{path} line {number}: not a pairs line (no {', '.join(missing)})")
        wrong = _wrong_type(record)
        if wrong:
            raise PairsInputError(f"{path} line {number}: not a pairs line ({wrong})")
        lines.append(record)
    return lines


def _wrong_type(record: dict[str, Any]) -> str | None:
    """What in a line the figures cannot read (None: nothing)."""

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    def seconds(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0

    def two(key: str, ok) -> bool:
        value = record[key]
        return isinstance(value, list) and len(value) == 2 and all(ok(v) for v in value)

    if not isinstance(record["pair"], str):
        return "pair is not a string"
    if record["kind"] not in PAIR_KINDS:
        return f"kind {record['kind']!r} is not one of {', '.join(PAIR_KINDS)}"
    if record["step"] is not None and not count(record["step"]):
        return f"step {record['step']!r} is not a step number"
    if not isinstance(record["group"], str) or not count(record["first"]) or not count(record["second"]):
        return "group, first or second is not a group key and two trace indices"
    if record["triple"] is not None and not isinstance(record["triple"], str):
        return "triple is not a string"
    if not two("digests", lambda d: isinstance(d, str)) or not isinstance(record["dump_file"], str):
        return "digests or dump_file is not text"
    if not two("outcomes", lambda o: o is None or valid_outcome(o) is not None):
        return "outcomes is not two verdicts (numbers in [0, 1] or null)"
    if not two("low_mass", count):
        return "low_mass is not two counts"
    if not two("tokens_in", lambda n: n is None or count(n)) or not two("tokens_out", lambda n: n is None or count(n)):
        return "tokens_in or tokens_out is not two counts (or null)"
    if not two("seconds", lambda s: s is None or seconds(s)):
        return "seconds is not two durations (or null)"
    return None
