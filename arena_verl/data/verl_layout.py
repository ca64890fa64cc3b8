"""verl's parquet layout: one row per prompt, as verl's own preprocessing scripts write it; the names a row carries
(``--split``, ``--data-source``) checked; the file written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from arena_verl.core.errors import InputError

__all__ = ["MATH_SUFFIX", "label", "verl_row", "write_frame", "write_parquet"]

MATH_SUFFIX = "Please reason step by step, and put your final answer within \\boxed{}."


def verl_row(
    data_source: str, user_message: str, ground_truth: str, split: str, index: int, ability: str = "math"
) -> dict:
    """``prompt`` (one user message), ``data_source`` (picks the scorer), ``ability``, ``reward_model`` (the ground
    truth as text) and ``extra_info.split/index``."""
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": user_message}],
        "ability": ability,
        "reward_model": {"style": "rule", "ground_truth": ground_truth},
        "extra_info": {"split": split, "index": index},
    }


def label(value: object, flag: str) -> str:
    """A ``--split`` or ``--data-source`` value: non-empty text without surrounding white space or control
    characters (``" test"`` would never match the reward's ``test``, silently); an InputError naming ``flag``."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{flag} must not be empty")
    if value != value.strip() or not value.isprintable():
        raise InputError(f"{flag} {value!r}: no surrounding white space or control characters, please")
    return value


def write_parquet(records: list[dict], path: str | Path, *, what: str = "--output") -> None:
    """The records as a parquet file, written atomically (see :func:`write_frame`)."""
    import pandas as pd

    write_frame(pd.DataFrame.from_records(records), path, what=what)


def write_frame(frame, path: str | Path, *, what: str = "--output") -> None:
    """A DataFrame as the parquet file ``path``: its folder is created, the bytes go to a temporary file in the same
    folder that is renamed over ``path`` once complete (a reader never sees half a file; a failed write, a full disk
    included, leaves the old file or none, and no temporary). The file gets an existing file's permissions, else the
    umask's. A place that cannot be written is an InputError naming ``what`` and the path."""
    path = Path(path)

    def refused(exc: OSError) -> InputError:
        return InputError(f"{what} {path}: cannot be written ({exc.strerror or exc})")

    try:
        if path.is_dir():
            raise InputError(f"{what} {path}: is a directory, expected a file")
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a folder of the path should be
        raise InputError(f"{what} {path}: cannot be written (a part of {path.parent} is not a folder)") from None
    except OSError as exc:
        raise refused(exc) from None
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise refused(exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            frame.to_parquet(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise refused(exc) from None
        raise


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
