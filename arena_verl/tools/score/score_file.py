"""The score file (``--out``): one JSON line per judged group, appended whole, locked for one run, repaired after a
kill (a torn last line dropped), and checked to hold one experiment (the same run settings on every line) of one
dump (each line's ``dump_file``: the identity of the step file its group came from, checked by the command).

A torn last line is any text after the last newline: dropped (with a note) when the lines before it are score
lines, or when it starts as a score line does (a kill after a few bytes of the first line); else the file is not a
score file and is refused untouched. A corrupt line before the last is refused, naming its line number."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from pathlib import Path
from typing import Any

from arena_verl.data.dumps import EvaluationInputError

__all__ = [
    "LINE_KEYS",
    "RUN_KEYS",
    "ScoreFile",
    "ScoreInputError",
    "ScoreWriteError",
    "read_score_file",
    "settings_text",
]

# What every line of one score file shares: the judge (its spec and verdict mode) and schedule, and how the groups
# were verified (which groups count as non-diverse depends on it).
RUN_KEYS = ("judge", "strategy", "budget", "seed", "verification", "wait_for_verdicts", "verdict")
# A line written before a key existed was scored with this value of it: the schedule was run_tournament's, the
# verdicts were generated.
LEGACY_RUN_VALUES = {"wait_for_verdicts": True, "verdict": "generate"}
_LINE_START = b'{"step":'  # every line this command writes starts so: a torn last line does too
# What the report and the comparison read from every line.
LINE_KEYS = ("step", "group", "rewards", "sample_digests", "judge_calls", "failures", "first_wins", "decided")


class ScoreInputError(EvaluationInputError):
    """Input the command cannot use as given (the message names the file, line or option)."""


class ScoreWriteError(OSError):
    """A line could not be appended (a full disk, an I/O error): the file holds whole lines and at most a torn
    last one, which the next run drops; rerunning continues."""


class ScoreFile:
    """The ``--out`` file: locked for one run, repaired (a torn last line dropped), appended one whole line at a
    time. ``done`` holds the (step, group) keys already in it; ``lines`` every record, appended ones included."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None
        self.lines: list[dict[str, Any]] = []
        self.done: set[tuple[int | None, str]] = set()
        self.by_key: dict[tuple[int | None, str], dict[str, Any]] = {}
        self.repaired = 0  # bytes of a torn last line dropped

    def open(self, settings: dict[str, Any]) -> None:
        """Lock, repair and read the file; its lines must have been scored with ``settings``."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ScoreInputError(f"--out {self.path}: cannot be written ({exc.strerror or exc})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ScoreInputError(f"{self.path}: another score run is writing this file") from None
        try:
            content = Path(self.path).read_bytes()
        except OSError as exc:
            self.close()
            raise ScoreInputError(f"--out {self.path}: cannot be read ({exc.strerror or exc})") from None
        complete = content.rfind(b"\n") + 1
        try:  # check everything before changing a byte: a wrong --out must not lose its last line
            self.lines = _parse_lines(self.path, content[:complete])
            for number, line in enumerate(self.lines, start=1):
                theirs = {key: line.get(key, LEGACY_RUN_VALUES.get(key)) for key in RUN_KEYS}
                if theirs != settings:
                    raise ScoreInputError(
                        f"{self.path} line {number} was scored with {settings_text(theirs)}, this run has "
                        f"{settings_text(settings)}: resume with the file's settings or write to another --out"
                    )
            tail = content[complete:]
            if tail and not self.lines and not (tail.startswith(_LINE_START) or _LINE_START.startswith(tail)):
                raise ScoreInputError(
                    f"{self.path} line 1: not a score line and no newline after it (is this a score file?)"
                )
        except ScoreInputError:
            self.close()
            raise
        if complete < len(content):  # a write cut short by a kill: never a whole line
            os.ftruncate(self.fd, complete)
            os.fsync(self.fd)
            self.repaired = len(content) - complete
        self.by_key = {(line["step"], line["group"]): line for line in self.lines}
        self.done = set(self.by_key)

    def append(self, record: dict[str, Any]) -> None:
        """One line, whole or not at all: a single write on the append-only descriptor, then fsync."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
        try:
            written = os.write(self.fd, data)
            if written != len(data):  # left torn: the next run drops it
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            os.fsync(self.fd)
        except OSError as exc:
            raise ScoreWriteError(f"{self.path}: cannot append ({exc.strerror or exc})") from None
        self.lines.append(record)
        self.done.add((record["step"], record["group"]))

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # releases the lock
            self.fd = None


def read_score_file(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a score file (a torn last line, from a run still going or killed, is left out)."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise ScoreInputError(f"{path}: cannot read ({exc.strerror})") from None
    return _parse_lines(Path(path), content[: content.rfind(b"\n") + 1])


def _parse_lines(path: Path, content: bytes) -> list[dict[str, Any]]:
    lines = []
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ScoreInputError(f"{path} line {number}: not JSON (is this a score file?)") from None
        if not isinstance(record, dict):
            raise ScoreInputError(f"{path} line {number}: not a JSON object (is this a score file?)")
        missing = [key for key in LINE_KEYS if key not in record]
        if missing:
            raise ScoreInputError(f"{path} line {number}: not a score line (no {', '.join(missing)})")
        wrong = _wrong_type(record)
        if wrong:
            raise ScoreInputError(f"{path} line {number}: not a score line ({wrong})")
        lines.append(record)
    return lines


def _wrong_type(record: dict[str, Any]) -> str | None:
    """What in a line the report cannot read (None: nothing)."""

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    def finite(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    if record["step"] is not None and not count(record["step"]):
        return f"step {record['step']!r} is not a step number"
    if not isinstance(record["group"], str):
        return "group is not a string"
    if not isinstance(record["rewards"], list) or not all(finite(r) for r in record["rewards"]):
        return "rewards is not a list of numbers"
    digests = record["sample_digests"]
    if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
        return "sample_digests is not a list of strings"
    bad = [key for key in ("judge_calls", "failures", "decided") if not count(record[key])]
    if bad:
        return f"{bad[0]} is not a count"
    # a sum of soft outcomes (a count for hard verdicts), at most one per decided verdict
    if not (finite(record["first_wins"]) and 0 <= record["first_wins"] <= record["decided"]):
        return "first_wins is not a number between 0 and decided"
    if "dump_file" in record and not isinstance(record["dump_file"], (str, type(None))):
        return "dump_file is not a string"
    return None


def settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{key}={settings.get(key)}" for key in RUN_KEYS)
