"""One JSON line per finished unit of work (a scored group, an audited pair), for the commands that resume after a
crash or a kill (``score``, ``audit-judge``): locked for one run, repaired after a kill (a torn last line dropped),
appended one whole line at a time (a single ``write`` on an append-only descriptor, then ``fsync``), and checked to
hold one experiment: every line carries the run's settings (``run_keys``).

A torn last line is any text after the last newline: dropped (with a note) when the lines before it are the file's
lines, or when it starts as one of its lines does (a kill after a few bytes of the first line); else the file is not
one of this command's files and is refused untouched. A corrupt line before the last is refused, naming its number."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LineFormat", "ResumableFile", "read_lines"]


@dataclass(frozen=True)
class LineFormat:
    """What one command's lines look like.

    Attributes
    ----------
    noun : str
        How messages name a line and the file ("score": "not a score line (is this a score file?)").
    command : str
        The command that writes the file ("score": "another score run is writing this file").
    line_start : bytes
        How every line the command writes begins (its first key): recognises a torn first line.
    run_keys : tuple of str
        The run settings every line carries and must share.
    required : tuple of str
        Keys every line has (besides ``run_keys`` where ``legacy_values`` has no default for them).
    check : callable
        ``check(record) -> str | None``: what in a line cannot be read (None: nothing).
    key : callable
        ``key(record)``: the unit of work the line is, so a resumed run skips it.
    legacy_values : dict
        Values of run keys that lines written before the key existed were made with.
    input_error, write_error : type
        The exceptions raised for a file that cannot be used and for a line that cannot be appended.
    """

    noun: str
    command: str
    line_start: bytes
    run_keys: tuple[str, ...]
    required: tuple[str, ...]
    check: Callable[[dict[str, Any]], str | None]
    key: Callable[[dict[str, Any]], Hashable]
    input_error: type[Exception]
    write_error: type[OSError]
    legacy_values: dict[str, Any] | None = None
    written_with: str = "written"  # "line 3 was <written_with> with ..."

    def settings_text(self, settings: dict[str, Any]) -> str:
        return ", ".join(f"{key}={settings.get(key)}" for key in self.run_keys)


class ResumableFile:
    """A command's ``--out`` lines: :meth:`open` locks, repairs and reads; :meth:`append` adds one whole line.
    ``lines`` holds every record (appended ones included), ``by_key`` the same by unit of work."""

    def __init__(self, path: Path, line_format: LineFormat):
        self.path = Path(path)
        self.format = line_format
        self.fd: int | None = None
        self.lines: list[dict[str, Any]] = []
        self.by_key: dict[Hashable, dict[str, Any]] = {}
        self.repaired = 0  # bytes of a torn last line dropped

    def open(self, settings: dict[str, Any]) -> None:
        """Lock, repair and read the file; its lines must have been made with ``settings``."""
        f, error = self.format, self.format.input_error
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise error(f"--out {self.path}: cannot be written ({exc.strerror or exc})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise error(f"{self.path}: another {f.command} run is writing this file") from None
        try:
            content = self.path.read_bytes()
        except OSError as exc:
            self.close()
            raise error(f"--out {self.path}: cannot be read ({exc.strerror or exc})") from None
        complete = content.rfind(b"\n") + 1
        try:  # check everything before changing a byte: a wrong --out must not lose its last line
            self.lines = read_lines(self.path, content[:complete], f)
            legacy = f.legacy_values or {}
            for number, line in enumerate(self.lines, start=1):
                theirs = {key: line.get(key, legacy.get(key)) for key in f.run_keys}
                if theirs != settings:
                    raise error(
                        f"{self.path} line {number} was {f.written_with} with {f.settings_text(theirs)}, this run has "
                        f"{f.settings_text(settings)}: resume with the file's settings or write to another --out"
                    )
            tail = content[complete:]
            if tail and not self.lines and not (tail.startswith(f.line_start) or f.line_start.startswith(tail)):
                raise error(
                    f"{self.path} line 1: not a {f.noun} line and no newline after it (is this a {f.noun} file?)"
                )
            if complete < len(content):  # a write cut short by a kill: never a whole line
                os.ftruncate(self.fd, complete)
                os.fsync(self.fd)
                self.repaired = len(content) - complete
        except OSError as exc:
            self.close()
            raise error(f"--out {self.path}: cannot be repaired ({exc.strerror or exc})") from None
        except Exception:
            self.close()
            raise
        self.by_key = {f.key(line): line for line in self.lines}

    def append(self, record: dict[str, Any]) -> None:
        """One line, whole or not at all: a single write on the append-only descriptor, then fsync."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
        try:
            written = os.write(self.fd, data)
            if written != len(data):  # left torn: the next run drops it
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            os.fsync(self.fd)
        except OSError as exc:
            raise self.format.write_error(f"{self.path}: cannot append ({exc.strerror or exc})") from None
        self.lines.append(record)
        self.by_key[self.format.key(record)] = record

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # releases the lock
            self.fd = None


def read_lines(path: Path, content: bytes, line_format: LineFormat) -> list[dict[str, Any]]:
    """The records of ``content`` (whole lines only), each checked; the first bad one is an ``input_error`` naming
    the file and line."""
    f, error = line_format, line_format.input_error
    lines = []
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise error(f"{path} line {number}: not JSON (is this a {f.noun} file?)") from None
        if not isinstance(record, dict):
            raise error(f"{path} line {number}: not a JSON object (is this a {f.noun} file?)")
        missing = [key for key in f.required if key not in record]
        if missing:
            raise error(f"{path} line {number}: not a {f.noun} line (no {', '.join(missing)})")
        wrong = f.check(record)
        if wrong:
            raise error(f"{path} line {number}: not a {f.noun} line ({wrong})")
        lines.append(record)
    return lines
