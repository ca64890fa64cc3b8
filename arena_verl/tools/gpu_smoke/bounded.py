"""A stage under a deadline (``python -m arena_verl.tools.gpu_smoke bounded``), and a free port for the judge server."""

from __future__ import annotations

import socket
from pathlib import Path

from arena_verl.tools.common.supervisor import COMMAND_NOT_STARTED_RC, run_supervised
from arena_verl.tools.gpu_smoke._util import error_text

__all__ = ["bounded", "free_port"]


def bounded(command: list[str], timeout_s: float, log: Path, grace_s: float = 10.0) -> int:
    """Run ``command`` under :mod:`arena_verl.tools.common.supervisor`, output to ``log`` only: exit 124 at
    ``timeout_s``, 128+N on signal N, 127 (and a ``cannot start`` line in the log) when it cannot be started. With
    psutil, everything the command started (Ray's daemons, vLLM's engine processes) is stopped afterwards; without,
    only its process group."""
    try:
        rc, _, _ = run_supervised(command, timeout_s, log, grace_s, copy_to_stdout=False)
    except OSError as exc:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"cannot start {command[0]}: {error_text(exc)}\n")
        return COMMAND_NOT_STARTED_RC
    return rc


def free_port(prefer: int | None, strict: bool) -> int | None:
    def free(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
            return True

    if prefer and free(prefer):
        return prefer
    if strict:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
