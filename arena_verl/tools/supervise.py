"""Run one trainer command under a deadline and leave nothing behind, then summarise what its tracker logged.

    python -m arena_verl.cpu.supervise --timeout 1200 --out OUT_DIR --metrics OUT_DIR/metrics.jsonl -- CMD ...

The command runs in a session of its own, its output goes to the terminal and to ``OUT_DIR/train.log``. This
process makes itself the *subreaper* of everything the command starts (Linux ``PR_SET_CHILD_SUBREAPER``), so Ray's
head processes and actors (``TaskRunner``, ``WorkerDict``, agent-loop and reward workers, vLLM engines) stay its
descendants even when their parents exit first; when the command ends, times out or this process is interrupted,
every one of them is terminated, then killed (SIGINT, SIGTERM and SIGHUP of this process included; only its own
SIGKILL cannot be handled). A Ray cluster the command merely connected to (``RAY_ADDRESS``) is not a descendant and is
left alone. Writes ``OUT_DIR/summary.json`` (see :mod:`arena_verl.data.metrics_log`) and prints one line, whatever
the metrics file holds (records that are no usable record are skipped and counted: ``records_skipped``,
``records_skipped_by_reason``, and ``records_skipped=N`` in the line; an unreadable file is ``metrics_error``; a
metric value that is no finite number is null, counted in ``metrics_nulled`` and said in one ``warning:`` line), and
exits with the command's status. A bad ``--timeout`` (not finite, <= 0), no command or an ``--out`` that cannot be
written is one ``error:`` line and exit 2 before anything starts.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from arena_verl.core.errors import EXIT_BAD_INPUT, InputError
from arena_verl.data.metrics_log import nulled_note, one_line, summarise
from arena_verl.tools.errors import guarded, write_output

__all__ = ["run_supervised", "reap_descendants"]

_PR_SET_CHILD_SUBREAPER = 36
TIMEOUT_RC = 124

COMMAND_NOT_STARTED_RC = 127  # summary.json's rc when the command could not be started (the shell's code)


def become_subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: orphans go to init and only the process group is stopped
        return False


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


def run_supervised(command: list[str], timeout_s: float, log_path: Path, grace_s: float = 10.0):
    """Run ``command``; returns (exit code, 124 on timeout, 128+N when it or this process got signal N; wall seconds;
    processes reaped afterwards). SIGINT, SIGTERM and SIGHUP stop the run (SIGTERM to its process group, SIGKILL after
    ``grace_s``) and still reap everything; a second signal kills at once. Only SIGKILL of this process itself
    leaves the run's processes behind (they then belong to init)."""
    become_subreaper()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log = open(log_path, "ab")  # noqa: SIM115  (closed after the tee thread; appended: a resumed run keeps the log)
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError:
        log.close()
        raise
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

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, on_signal) for s in handled}
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
        reaped = reap_descendants(grace_s)  # still under the handlers: an interrupt here cannot orphan anything
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    tee.join(timeout=5)  # every writer of the pipe is gone now, so the tee reads to its end
    log.close()
    if received:
        rc = 128 + received[0]
    elif timed_out:
        rc = TIMEOUT_RC
    elif rc < 0:
        rc = 128 - rc  # the command was killed by a signal
    return rc, wall, reaped


def _signal_group(child: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


def _tee(stream, log) -> None:
    for line in iter(stream.readline, b""):
        with contextlib.suppress(ValueError, OSError):
            log.write(line)
            sys.stdout.buffer.write(line)
            sys.stdout.flush()


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, required=True, help="seconds before the run is stopped (rc 124)")
    parser.add_argument("--out", type=Path, required=True, help="folder for train.log and summary.json")
    parser.add_argument("--metrics", type=Path, required=True, help="verl's file-logger output (jsonl)")
    parser.add_argument("--label", default="cpu_smoke")
    parser.add_argument("command", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    """Check the flags and the output folder (exit 2 before anything starts), run the command, write summary.json
    whatever its metrics file holds (bad records skipped and counted) and return the command's status. Only a
    summary.json that cannot be written is said on stderr (status: the command's, 2 when that was 0)."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("no command given (after --)")
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout}: must be a finite number of seconds > 0")
    log_path = args.out / "train.log"
    try:  # the folder must take train.log and summary.json before the run starts
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab"):
            pass
    except OSError as exc:
        raise InputError(f"--out {args.out}: cannot be written ({exc.strerror or exc})") from None
    start_error = None
    try:
        rc, wall, reaped = run_supervised(command, args.timeout, log_path)
    except OSError as exc:  # not found, not executable: the summary still says what happened
        rc, wall, reaped = COMMAND_NOT_STARTED_RC, 0.0, 0
        start_error = f"{command[0]}: cannot be started ({exc.strerror or exc})"
    summary = summarise(args.metrics, rc=rc, wall_s=wall)
    summary["processes_reaped"] = reaped
    try:
        text = json.dumps(summary, indent=1, allow_nan=False) + "\n"  # strict JSON: bad values are null already
        write_output(args.out / "summary.json", text, what="summary")
    except InputError as exc:
        print(f"{args.label}: {one_line(summary)}", flush=True)
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        return rc or EXIT_BAD_INPUT
    print(f"{args.label}: {one_line(summary)}  -> {args.out / 'summary.json'}", flush=True)
    nulled = nulled_note(summary)
    if nulled:
        print(f"warning: {nulled}", file=sys.stderr, flush=True)
    if start_error:
        raise InputError(start_error)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
