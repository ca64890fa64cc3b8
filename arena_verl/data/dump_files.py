"""The files of a rollout dump folder and their lines: which ``<step>.jsonl`` files a folder holds (every one a
readable regular file), and each file's JSON objects (every line UTF-8 JSON of bounded size). Anything else is an
:class:`EvaluationInputError` naming the file and line. :mod:`arena_verl.data.dumps` turns the lines into samples."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

from arena_verl.core.errors import InputError

__all__ = [
    "EvaluationInputError",
    "MAX_LINE_BYTES",
    "STEP_NAME",
    "count_lines",
    "find_dump_files",
    "read_jsonl",
    "read_jsonl_lines",
    "select_steps",
]

MAX_LINE_BYTES = 64 * 1024 * 1024  # a longer line is refused (no dump line is that long: a binary file?)
STEP_NAME = re.compile(r"[0-9]+")  # ASCII digits only ("²".isdigit() is true, int("²") fails)


class EvaluationInputError(InputError):
    """Input that cannot be evaluated as given (the message names the file, row or prompt)."""


# ------------------------------------------------------------------------------------------------------- files


def find_dump_files(path: str | Path) -> dict[int | None, Path]:
    """``{step: file}``: the ``<step>.jsonl`` files of a dump folder, or the one file given (step from its name).

    Every ``<step>.jsonl`` entry of the folder must be a readable regular file: a dangling symlink, a symlink loop, a
    folder or a pipe of that name is an error naming it (a step silently left out would change every figure), and so
    are two names of one step (``7.jsonl`` and ``007.jsonl``). Other names are not dump files and are ignored."""
    path = Path(path)
    if not path.is_dir():
        if not path.exists() and not path.is_symlink():
            raise EvaluationInputError(f"{path}: no such file or folder")
        _check_file(path)
        return {int(path.stem) if STEP_NAME.fullmatch(path.stem) else None: path}
    try:
        entries = sorted(path.iterdir())
    except OSError as exc:
        raise EvaluationInputError(f"{path}: cannot be listed ({exc.strerror or exc})") from None
    files: dict[int | None, Path] = {}
    for file in entries:
        if file.suffix != ".jsonl" or not STEP_NAME.fullmatch(file.stem):
            continue
        _check_file(file, hint="; remove it or move it out of the dump folder")
        step = int(file.stem)
        if step in files:
            raise EvaluationInputError(f"{files[step]} and {file} are both step {step}: keep one")
        files[step] = file
    if not files:
        raise EvaluationInputError(
            f"{path}: no <step>.jsonl files (trainer.rollout_data_dir and trainer.validation_data_dir hold them)"
        )
    return dict(sorted(files.items()))


def _check_file(path: Path, hint: str = "") -> None:
    """An :class:`EvaluationInputError` naming ``path`` unless it is a regular file (symlinks followed)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            why = "a symlink loop"
        elif path.is_symlink():
            why = f"a dangling symlink (to {os.readlink(path)})"
        else:
            why = f"cannot be read ({exc.strerror or exc})"
        raise EvaluationInputError(f"{path}: {why}, not a dump file{hint}") from None
    if stat.S_ISDIR(mode):
        raise EvaluationInputError(f"{path}: a folder, not a dump file{hint}")
    if not stat.S_ISREG(mode):
        raise EvaluationInputError(f"{path}: not a regular file (a pipe or a device), not a dump file{hint}")


def _open(path: Path):
    try:
        return path.open("rb")
    except OSError as exc:
        raise EvaluationInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def count_lines(path: str | Path) -> int:
    """The number of lines of a dump file (for a progress bar); unreadable: an error naming it."""
    path = Path(path)
    total = 0
    with _open(path) as handle:
        try:
            for block in iter(lambda: handle.read(1 << 20), b""):
                total += block.count(b"\n")
        except OSError as exc:
            raise EvaluationInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return total


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


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """``(line number, object)`` per non-blank line (see :func:`read_jsonl_lines`)."""
    return read_jsonl_lines(path)[0]


def read_jsonl_lines(path: Path) -> tuple[list[tuple[int, dict]], list[int]]:
    """``(line number, object)`` per non-blank line, and the numbers of the blank lines (white space only: skipped,
    for the tools to count and say). Refused, naming the file and line: a file that cannot be read, an empty one, a
    line that is not UTF-8, not JSON (a torn last line included: the file is refused, not cut), not a JSON object,
    nested too deeply, or longer than :data:`MAX_LINE_BYTES`."""
    path = Path(path)
    lines, blank = [], []
    with _open(path) as handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise EvaluationInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
            if not raw:
                break
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise EvaluationInputError(
                    f"{path} line {number}: longer than {MAX_LINE_BYTES >> 20} MiB (not a dump line: a binary file?)"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EvaluationInputError(f"{path} line {number}: not UTF-8 text ({exc.reason})") from None
            if not line.strip():
                blank.append(number)
                continue
            try:
                record = json.loads(line)
            except RecursionError:
                raise EvaluationInputError(f"{path} line {number}: not JSON (nested too deeply)") from None
            except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
                why = getattr(exc, "msg", None) or str(exc)
                torn = "" if raw.endswith(b"\n") else "; the file's last line has no newline: cut off by a killed run?"
                raise EvaluationInputError(f"{path} line {number}: not JSON ({why}){torn}") from None
            if not isinstance(record, dict):
                raise EvaluationInputError(f"{path} line {number}: not a JSON object")
            lines.append((number, record))
    if not lines:
        raise EvaluationInputError(f"{path}: empty (no dump lines)")
    return lines, blank
