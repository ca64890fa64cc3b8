"""The score file (``--out``): one JSON line per judged group, appended whole, locked for one run, repaired after a
kill (a torn last line dropped), and checked to hold one experiment (the same run settings on every line)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from arena_verl.data.dumps import EvaluationInputError

__all__ = ["LINE_KEYS", "RUN_KEYS", "ScoreFile", "ScoreInputError", "read_score_file", "settings_text"]

# What every line of one score file shares: the judge and schedule, and how the groups were verified (which groups
# count as non-diverse depends on it).
RUN_KEYS = ("judge", "strategy", "budget", "seed", "verification", "wait_for_verdicts")
# A line written before a key existed was scored with this value of it: the schedule was run_tournament's.
LEGACY_RUN_VALUES = {"wait_for_verdicts": True}
_LINE_START = b'{"step":'  # every line this command writes starts so: a torn last line does too
# What the report and the comparison read from every line.
LINE_KEYS = ("step", "group", "rewards", "sample_digests", "judge_calls", "failures", "first_wins", "decided")


class ScoreInputError(EvaluationInputError):
    """Input the command cannot use as given (the message names the file, line or option)."""


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ScoreInputError(f"{self.path}: another score run is writing this file") from None
        content = Path(self.path).read_bytes()
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
            if complete < len(content) and not content[complete:].startswith(_LINE_START):
                raise ScoreInputError(f"{self.path}: the last line is not a score line (is this a score file?)")
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
        written = os.write(self.fd, data)
        if written != len(data):  # left torn: the next run drops it
            raise OSError(f"{self.path}: short write ({written} of {len(data)} bytes)")
        os.fsync(self.fd)
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
        lines.append(record)
    return lines


def settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{key}={settings.get(key)}" for key in RUN_KEYS)
