"""A pool of worker processes for tasks that may hang past any timeout: a caller waits at most its timeout plus a
grace period, and a worker that does not answer by then is killed and replaced.

Why processes: a task bounded by ``signal`` alarms (math-verify bounds sympy so) only works in a main thread, and
reward managers run in threads of Ray actors. Each worker runs its tasks in its own main thread, so their alarms
work; a worker stuck past the caller's wait (C code that ignores signals) is killed.

Why not ``multiprocessing.Pool``: an idle pool worker holds the pool's shared queue lock while it waits for work,
so a pool worker killed while idle (a SIGTERM to the process group, Ray killing a worker's children, the OOM
killer) leaves the lock taken for good: ``Pool.terminate()`` and multiprocessing's exit handler then wait for it
forever, the pool's handler thread starts a replacement worker, and the process (a Ray reward worker, ~500 MB)
never exits. The workers here are plain child processes, each with its own pair of pipes, no shared lock: killing
one costs nothing but its task. Every worker ends with the process that started it: on a closed pipe (its parent
exited), by ``PR_SET_PDEATHSIG`` (its parent was killed), by a watchdog on its parent id (reparented), by SIGTERM
(never ignored in a worker), and by ``close()``, ``weakref.finalize`` and ``atexit`` in the parent.

A worker is started as ``python -c "...; from MODULE import ENTRY; ENTRY(parent_pid, request_fd, reply_fd)"``
(``entry="MODULE:ENTRY"``); ``ENTRY`` calls :func:`serve` with the function that runs one task.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["WorkerPool", "WorkerStartError", "WorkerTimeout", "WorkerUnavailable", "serve"]

# The folder that holds the arena_verl package: appended to a worker's sys.path (after its own paths), so that the
# worker imports its entry module even where the parent found it through a path its environment does not carry
# (Ray's working_dir).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerTimeout(Exception):
    """The worker did not answer within the caller's wait; it was killed and will be replaced."""


class WorkerUnavailable(Exception):
    """No worker could run the task: see :class:`WorkerStartError`, or the worker died under it, twice."""


class WorkerStartError(WorkerUnavailable):
    """No worker could be started, or the pool was closed while one started (the cause is chained)."""


# ------------------------------------------------------------------------------------------- in the worker process


def serve(
    parent_pid: int,
    request_fd: int,
    reply_fd: int,
    handle: Callable[..., Any],
    prepare: Callable[[], None] | None = None,
) -> NoReturn:
    """A worker's loop: ``handle(*task)`` for each task until the parent closes the pipes or dies.

    ``prepare`` runs once before the worker says it is ready (slow imports), so that it does not count against the
    first task's time.
    """
    _die_with_parent(parent_pid)
    requests = Connection(request_fd, writable=False)
    replies = Connection(reply_fd, readable=False)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watch", daemon=True).start()
    if prepare is not None:
        prepare()
    try:
        replies.send(("ready", os.getpid()))
        while True:
            task = requests.recv()
            replies.send(handle(*task))
    except (EOFError, OSError):
        os._exit(0)  # the parent closed the pipes (close(), exit) or died


def _die_with_parent(parent_pid: int) -> None:
    # A worker ends on SIGTERM whatever its starter ignored or blocked (dispositions SIG_IGN and signal masks are
    # inherited across exec), and tasks may need SIGALRM (math-verify does); Ctrl-C (SIGINT to the whole process
    # group) is for the parent to handle: it kills its workers itself.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGALRM})
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except Exception:  # noqa: BLE001  (the watchdog and the pipe still end the worker)
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl
        os._exit(0)


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(0)


# ------------------------------------------------------------------------------------------- in the parent process


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self, proc: subprocess.Popen, requests: Connection, replies: Connection, generation: int):
        self.proc = proc
        self.requests = requests
        self.replies = replies
        self.generation = generation
        self.ready = False

    def close_pipes(self) -> None:
        for conn in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                conn.close()

    def kill(self) -> None:
        self.close_pipes()
        with contextlib.suppress(OSError):
            self.proc.kill()

    def reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.proc.wait(timeout=5.0)


def _bootstrap(entry: str, request_fd: int, reply_fd: int) -> str:
    """The ``python -c`` code of a worker (``entry`` is ``MODULE:FUNCTION``)."""
    module, _, function = entry.partition(":")
    return (
        f"import sys; sys.path.append({_PACKAGE_ROOT!r}); from {module} import {function}; "
        f"{function}({os.getpid()}, {request_fd}, {reply_fd})"
    )


def _start_worker(entry: str, generation: int) -> _Worker:
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _bootstrap(entry, request_r, reply_w)],
            pass_fds=(request_r, reply_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    except BaseException:
        for fd in (request_w, reply_r):
            os.close(fd)
        raise
    finally:
        os.close(request_r)
        os.close(reply_w)
    return _Worker(proc, Connection(request_w, readable=False), Connection(reply_r, writable=False), generation)


# PR_SET_PDEATHSIG fires when the *thread* that started a process ends, not the process: workers are started by one
# long-lived daemon thread, never by callers' threads (a ThreadPoolExecutor's threads come and go).
_spawner_lock = threading.Lock()
_spawner: tuple[int, queue.SimpleQueue] | None = None


def _spawn_worker(entry: str, generation: int) -> _Worker:
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():  # none yet, or a forked child
            requests: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_spawner_loop, args=(requests,), name="arena-verifier-spawner", daemon=True).start()
            _spawner = (os.getpid(), requests)
        requests = _spawner[1]
    future: Future = Future()
    requests.put((future, entry, generation))
    try:
        return future.result(timeout=30.0)
    except TimeoutError:  # the spawner thread is gone (interpreter shutdown): start it from this thread
        if future.cancel():
            return _start_worker(entry, generation)
        return future.result()


def _spawner_loop(requests: queue.SimpleQueue) -> None:
    while True:
        future, entry, generation = requests.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(_start_worker(entry, generation))
        except BaseException as exc:  # noqa: BLE001  (handed to the caller)
            future.set_exception(exc)


class _Workers:
    """The worker processes of one pool; kept apart from it so that ``weakref.finalize`` can close them."""

    def __init__(self, size: int, entry: str):
        self.size = size
        self.entry = entry
        self.pid = os.getpid()
        self.cond = threading.Condition()
        self.idle: list[_Worker] = []
        self.live: set[_Worker] = set()
        self.started = 0  # live workers plus those being started
        self.generation = 0
        self.restarts = 0

    def _forget_after_fork(self) -> None:
        # A forked child shares its parent's worker pipes: it must neither use nor kill its parent's workers.
        if self.pid != os.getpid():
            for worker in self.live:
                worker.close_pipes()
            self.live, self.idle, self.started, self.pid = set(), [], 0, os.getpid()
            self.generation += 1

    def acquire(self) -> _Worker:
        with self.cond:
            self._forget_after_fork()
            while True:
                if self.idle:
                    return self.idle.pop()
                if self.started < self.size:
                    self.started += 1
                    generation = self.generation
                    break
                self.cond.wait()
        try:
            worker = _spawn_worker(self.entry, generation)
        except BaseException:
            with self.cond:
                if generation == self.generation:
                    self.started -= 1
                self.cond.notify()
            raise
        with self.cond:
            if generation == self.generation:
                self.live.add(worker)
                return worker
        worker.kill()  # closed while it started
        worker.reap()
        raise RuntimeError("worker pool closed")

    def release(self, worker: _Worker, healthy: bool) -> None:
        with self.cond:
            current = worker.generation == self.generation
            if healthy and current:
                self.idle.append(worker)
            elif current:
                self.live.discard(worker)
                self.started -= 1
                self.restarts += 1
            self.cond.notify()
        if not (healthy and current):
            worker.kill()
            worker.reap()

    def close(self) -> None:
        """Kill every worker (busy ones too: their callers get :class:`WorkerUnavailable`). Never blocks on one."""
        with self.cond:
            self._forget_after_fork()
            workers = list(self.live)
            self.live.clear()
            self.idle.clear()
            self.started = 0
            self.generation += 1
            self.cond.notify_all()
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.reap()


_ALL_WORKERS: weakref.WeakSet[_Workers] = weakref.WeakSet()


def _close_all_workers() -> None:
    for workers in list(_ALL_WORKERS):
        workers.close()


class WorkerPool:
    """Up to ``size`` worker processes (started on first use) running ``entry``; thread-safe.

    Parameters
    ----------
    size : int
        Worker processes at most; a caller waits for an idle one when all are busy.
    entry : str
        ``MODULE:FUNCTION`` a worker runs: ``FUNCTION(parent_pid, request_fd, reply_fd)``, which calls :func:`serve`.
    start_timeout_s : float
        A new worker must be ready by then (its interpreter and ``prepare`` imports).
    grace_s : float
        How long past a task's timeout a worker that has not answered is still waited for.
    """

    def __init__(self, size: int, entry: str, *, start_timeout_s: float = 120.0, grace_s: float = 5.0):
        if size < 1 or ":" not in entry:
            raise ValueError(f"a worker pool needs size >= 1 and entry 'MODULE:FUNCTION', got {size!r}, {entry!r}")
        self.start_timeout_s = float(start_timeout_s)
        self.grace_s = float(grace_s)
        self._workers = _Workers(int(size), entry)
        _ALL_WORKERS.add(self._workers)
        self._finalizer = weakref.finalize(self, self._workers.close)

    @property
    def restarts(self) -> int:
        """Workers killed or lost (a task past its timeout, a worker that died)."""
        return self._workers.restarts

    def call(self, task: tuple, timeout_s: float) -> Any:
        """``handle(*task)`` in a worker, waiting at most ``timeout_s`` plus the grace period.

        Raises
        ------
        WorkerTimeout
            The worker did not answer in time (it is killed and replaced).
        WorkerStartError
            No worker could be started, or the pool was closed while one started (the cause is chained).
        WorkerUnavailable
            The task's worker died, and so did the one it was retried on.
        """
        for attempt in range(2):
            try:
                worker = self._workers.acquire()
            except Exception as exc:  # noqa: BLE001  (could not start a worker)
                raise WorkerStartError(f"a worker could not start ({exc!r})") from exc
            healthy = False
            try:
                if not worker.ready:
                    if not worker.replies.poll(self.start_timeout_s):
                        raise EOFError("worker did not start")
                    worker.replies.recv()
                    worker.ready = True
                worker.requests.send(task)
                if not worker.replies.poll(timeout_s + self.grace_s):
                    raise WorkerTimeout(f"no answer within {timeout_s:g} s + {self.grace_s:g} s")  # release kills it
                result = worker.replies.recv()
                healthy = True
                return result
            except (EOFError, OSError, ValueError) as exc:  # the worker died (or was closed) under us: once more
                if attempt == 0:
                    continue
                raise WorkerUnavailable(f"the worker died ({exc!r})") from exc
            finally:
                self._workers.release(worker, healthy)
        raise AssertionError("unreachable: the second attempt returns or raises")

    def close(self) -> None:
        """Kill the worker processes (a later ``call`` starts new ones)."""
        self._workers.close()


# At interpreter exit (also ``sys.exit`` on a Ray worker's SIGTERM) every pool's workers are killed; if the process
# dies without it, the workers' pipe, PR_SET_PDEATHSIG and watchdog end them.
atexit.register(_close_all_workers)
