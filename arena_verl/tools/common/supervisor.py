"""Run one command under a deadline and leave nothing of it behind: the one supervisor of ``python -m
arena_verl.cpu.supervise`` (a trainer run) and ``python -m arena_verl.tools.gpu_smoke bounded`` (a GPU smoke stage).

The command runs in a session of its own, its output appended to a log (and copied to stdout when asked). At the
deadline, or on SIGINT, SIGTERM or SIGHUP of this process, its process group gets SIGTERM, then SIGKILL after a grace;
a second signal kills at once. With psutil, this process is also the *subreaper* of everything the command starts
(Linux ``PR_SET_CHILD_SUBREAPER``), so Ray's daemons and actors and vLLM's engine processes stay its descendants even
when their parents exit first, and every one of them is terminated, then killed, afterwards. Without psutil only the
process group is stopped (what left it, e.g. with ``setsid``, lives on) and no descendant is counted. Only SIGKILL
of this process itself leaves the command's processes behind (they then belong to init).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "COMMAND_NOT_STARTED_RC",
    "TIMEOUT_RC",
    "become_subreaper",
    "pid_alive",
    "reap_descendants",
    "run_supervised",
]

_PR_SET_CHILD_SUBREAPER = 36
TIMEOUT_RC = 124  # the exit code of coreutils' timeout
COMMAND_NOT_STARTED_RC = 127  # the shell's code for a command that cannot be started
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def become_subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: orphans go to init and only the process group is stopped
        return False


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts: it cannot be signalled, but it runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_descendants(grace_s: float = 10.0) -> int:
    """SIGTERM every descendant of this process, SIGKILL what is left after ``grace_s``; returns how many there were.
    Ray workers can ignore SIGTERM while busy, hence the kill. Processes may exit at any moment meanwhile."""
    import psutil

    me = psutil.Process()
    found: set[int] = set()
    deadline = time.monotonic() + grace_s
    while True:
        alive = []
        for process in me.children(recursive=True):
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if process.pid not in found:
                    found.add(process.pid)
                    process.send_signal(signal.SIGTERM)
                alive.append(process)
            except psutil.Error:  # exited in between
                continue
        _collect_zombies()
        if not alive:
            break
        if time.monotonic() > deadline:
            for process in alive:
                with contextlib.suppress(psutil.Error):
                    process.kill()
            psutil.wait_procs(alive, timeout=5)
            break
        time.sleep(0.2)
    _collect_zombies()
    return len(found)


def _collect_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_supervised(
    command: list[str],
    timeout_s: float,
    log_path: Path,
    grace_s: float = 10.0,
    *,
    copy_to_stdout: bool,
    env: Mapping[str, str] | None = None,
) -> tuple[int, float, int]:
    """Run ``command`` (see the module docstring; ``env``: its environment, this process's when None); returns (exit
    code, 124 on timeout, 128+N when it or this process got signal N; wall seconds; descendants reaped afterwards, 0
    without psutil). The log is appended to (a resumed run keeps it). A command that cannot be started raises the
    :class:`OSError`."""
    reaping = _psutil_importable()
    if reaping:
        become_subreaper()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = open(log_path, "ab")  # noqa: SIM115  (closed once the command's output has all been read)
    try:
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE if copy_to_stdout else log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else dict(env),
        )
    except OSError:
        log.close()
        raise
    tee = None
    if copy_to_stdout:
        tee = threading.Thread(target=_tee, args=(child.stdout, log), daemon=True)
        tee.start()
    received: list[int] = []
    stop_since: list[float] = []

    def on_signal(signum, frame):
        received.append(signum)
        if len(received) > 1:
            _signal_group(child, signal.SIGKILL)
        else:
            _signal_group(child, signal.SIGTERM)
            stop_since.append(time.monotonic())

    previous = {s: signal.signal(s, on_signal) for s in _STOP_SIGNALS}
    timed_out = False
    try:
        while True:
            try:
                rc = child.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if not timed_out and not stop_since and now - started > timeout_s:
                print(f"\n[supervise] no exit after {timeout_s:.0f} s: stopping the run", file=sys.stderr, flush=True)
                timed_out = True
                _signal_group(child, signal.SIGTERM)
                stop_since.append(now)
            if stop_since and now - stop_since[0] > grace_s:
                _signal_group(child, signal.SIGKILL)
        wall = time.monotonic() - started
        # Still under the handlers: an interrupt here cannot orphan anything.
        if reaping:
            reaped = reap_descendants(grace_s)
        else:
            _signal_group(child, signal.SIGKILL)  # whatever of the group outlived its leader
            reaped = 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if tee is not None:
        tee.join(timeout=5)  # every writer of the pipe is gone now, so the tee reads to its end
    log.close()
    if received:
        rc = 128 + received[0]
    elif timed_out:
        rc = TIMEOUT_RC
    elif rc < 0:
        rc = 128 - rc  # the command was killed by a signal
    return rc, wall, reaped


def _psutil_importable() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def _signal_group(child: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


def _tee(stream, log) -> None:
    for line in iter(stream.readline, b""):
        with contextlib.suppress(ValueError, OSError):
            log.write(line)
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
