"""The one error type for bad input to the tools (a dump, a data file, a flag), and the one error path: the commands
print its message as one ``error:`` line on stderr and exit 2, never a traceback; an output file is written whole or
not at all. Stdlib only, so that every layer's command line (the data commands too) shares it."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["InputError", "EXIT_OK", "EXIT_FAILED", "EXIT_BAD_INPUT", "guarded", "write_output"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class InputError(ValueError):
    """Input that cannot be used as given; the message names the file, row, key or flag, and what to do."""


def guarded(run: Callable, args) -> int:
    """``run(args)``'s exit status; an :class:`InputError` from it is printed as one ``error:`` line, status 2."""
    try:
        return int(run(args) or 0)
    except InputError as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__  # one line, whatever the message held
        print(f"error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


def write_output(path: str | Path, text: str, *, what: str = "output") -> None:
    """Write ``text`` to ``path`` atomically (a temporary file in the same folder, then a rename): a reader never
    sees half a file, and a failed write leaves the old file (or none). A path that cannot be written is an
    :class:`InputError` naming it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise InputError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
