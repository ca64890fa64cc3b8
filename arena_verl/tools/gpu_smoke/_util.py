"""What the other modules of :mod:`arena_verl.tools.gpu_smoke` share: atomic JSON files, error texts, a log's tail."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

__all__ = ["now", "write_json", "json_default", "read_json", "error_text", "tail"]

_TAIL_LINES = 8


def now() -> float:
    return time.time()


def write_json(path: Path, payload: dict) -> None:
    """Atomically: a reader (or a run killed mid-write) never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(payload, out, indent=1, default=json_default)
        out.write("\n")
    os.replace(tmp, path)


def json_default(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def error_text(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tail(path: str | Path | None, lines: int = _TAIL_LINES) -> list[str]:
    if not path:
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line[:300] for line in text.splitlines() if line.strip()][-lines:]
