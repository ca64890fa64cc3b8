"""A stage under a deadline (``python -m arena_verl.tools.gpu_smoke bounded``), and a free port for the judge server."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from arena_verl.tools.gpu_smoke._util import error_text

__all__ = ["bounded", "free_port"]


def bounded(command: list[str], timeout_s: float, log: Path, grace_s: float = 10.0) -> int:
    """Run ``command`` in a session of its own, output to ``log``; at ``timeout_s`` (exit 124), or on SIGINT, SIGTERM
    or SIGHUP (exit 128+N), stop its process group, then kill it. With psutil, this process is also the subreaper of
    everything the command starts (Ray's daemons, vLLM's engine processes), and every such descendant is stopped
    afterwards (arena_verl.tools.supervise); without psutil, only the process group."""
    if importlib.util.find_spec("psutil") is not None:
        from arena_verl.tools.supervise import run_supervised

        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            rc, _, _ = run_supervised(command, timeout_s, log, grace_s)
        except OSError as exc:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"cannot start {command[0]}: {error_text(exc)}\n")
            return 127
        return rc
    return _bounded_group_only(command, timeout_s, log, grace_s)


def _bounded_group_only(command: list[str], timeout_s: float, log: Path, grace_s: float) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)  # fmt: skip
        except OSError as exc:
            out.write(f"cannot start {command[0]}: {error_text(exc)}\n".encode())
            return 127
    received: list[int] = []

    def stop(signum, frame):
        received.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL if len(received) > 1 else signal.SIGTERM)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    deadline, stop_at = time.monotonic() + timeout_s, None
    timed_out = False
    while True:
        try:
            rc = child.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now > deadline and not timed_out and not received:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)
        if (timed_out or received) and stop_at is None:
            stop_at = now + grace_s
        if stop_at is not None and now > stop_at:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)  # whatever of the group outlived its leader
    if received:
        return 128 + received[0]
    if timed_out:
        return 124
    return 128 - rc if rc < 0 else rc


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
