"""``reward.arena.judge.backend: python``: a function of yours is the judge (docs/judges.md, "A Python judge").

``judge.callable`` names it (``package.module:function``; imported when the judge is built), ``judge.callable_kwargs``
adds keyword arguments. A pairwise call is ``function(problem=..., first=..., second=..., **callable_kwargs)`` and
returns P(``first`` is the better trace), a number in [0, 1]; a pointwise call is ``function(problem=...,
trace=..., **callable_kwargs)`` and returns a score in [0, 1]. The texts are what a model judge is shown: each one
sanitised and cut to ``max_trace_tokens`` (counted in UTF-8 bytes) by
:func:`~arena_verl.judge.prompting.hygiene.sanitize_trace`, with no delimiter (nothing wraps them). The reference answer
is never passed, whatever the call is given.

The judge goes through the referee like any other: same budget, presentation order, order effect, fallbacks and
counters. What applies of ``reward.arena.judge.*``: ``max_trace_tokens``, ``max_concurrency`` (calls in flight)
and ``timeout_s`` (each call, not retried); the templates, verdict mode, sampling and retry keys do not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import importlib
import inspect
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from arena_verl.backend_registry.builtin import PYTHON_JUDGE_ARGUMENTS, PythonOptions
from arena_verl.core.judge_protocol import JudgeStats, Trace
from arena_verl.core.tournament import valid_outcome
from arena_verl.judge.prompting.hygiene import sanitize_trace
from arena_verl.settings_judge import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = ["PythonJudge", "load_callable"]

_KEY = "reward.arena.judge.callable"
# What a failed call was, for the log (each kind logged once per judge; every one counted in stats).
_RAISED, _TIMED_OUT, _BAD_VALUE = "raised", "timed out", "returned no usable number"


def check_callable(judge: JudgeSettings) -> None:
    """The start-up check (the registry's ``preflight``): the function ``judge.callable`` names is imported, where it
    is set (required where the judge runs; rlvr may leave it out)."""
    if judge.options.callable is not None:
        load_callable(judge.options.callable)


def load_callable(target: str | None) -> Callable:
    """The function ``target`` (``package.module:function``) names, imported now; a ``ValueError`` naming
    ``reward.arena.judge.callable`` when the string is malformed, the module cannot be imported, or it has no such
    callable."""
    module_name, colon, attribute = (target or "").partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"{_KEY} must be 'package.module:function', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = f"no module named {exc.name!r}" if exc.name else str(exc)
        where = "" if exc.name == module_name or not exc.name else f" (imported by {module_name!r})"
        raise ValueError(
            f"{_KEY}={target!r}: {missing}{where}: install it, or put its folder on PYTHONPATH where the judge runs"
        ) from None
    except Exception as exc:  # noqa: BLE001  (the user's module failed while importing)
        raise ValueError(f"{_KEY}={target!r}: importing {module_name!r} failed: {exc!r}") from exc
    function = getattr(module, attribute, None)
    if function is None:
        raise ValueError(f"{_KEY}={target!r}: module {module_name!r} has no attribute {attribute!r}")
    if not callable(function):
        raise ValueError(f"{_KEY}={target!r}: {module_name}.{attribute} is not callable ({type(function).__name__})")
    return function


def _is_async(function: Callable) -> bool:
    """An ``async def`` function, or an object whose class has an ``async def __call__``."""
    if inspect.iscoroutinefunction(function):
        return True
    return inspect.iscoroutinefunction(inspect.getattr_static(type(function), "__call__", None))


class PythonJudge:
    """A judge that calls a Python function (see the module docstring).

    A plain function runs in a worker thread (at most ``max_concurrency``, daemon threads, so a hung one neither
    blocks the referee's event loop nor the process's exit); an ``async def`` function runs on the event loop (it
    must not block it). Every call is bounded by ``timeout_s``.

    A call that does not give a usable number is a failed call: it returns None (the referee then counts it as
    for a model judge: a tie or dropped by ``on_judge_failure``, never a win) and is counted in ``stats.failures``,
    and also

    - in ``stats.errors`` when the function raised (anything, ``ValueError`` for a problem it cannot read
      included) or ran past ``timeout_s`` (an async function is cancelled; a thread cannot be stopped: its result is
      dropped when it comes);
    - in ``stats.parse_failures`` when it returned something other than a real number in [0, 1]: None, a bool, a
      string, NaN, an infinity, a number out of range.

    The first failure of each of the three kinds (raised, timed out, bad value) is logged as a warning; later ones
    are counted only. ``stats.calls`` counts the calls. Nothing is ever raised into the caller but its own
    cancellation.
    """

    name = "python"

    def __init__(self, settings: JudgeSettings):
        if not isinstance(settings.options, PythonOptions):
            raise ValueError(f"PythonJudge needs reward.arena.judge.backend=python, got {settings.backend!r}")
        kwargs = dict(settings.options.callable_kwargs or {})
        clash = sorted(set(kwargs) & set(PYTHON_JUDGE_ARGUMENTS))
        if clash:
            raise ValueError(f"reward.arena.judge.callable_kwargs: {clash} are passed by the backend itself")
        self.settings = settings
        self.callable_name = settings.options.callable
        self.function = load_callable(settings.options.callable)
        self.kwargs = kwargs
        self.is_async = _is_async(self.function)
        self.stats = JudgeStats()
        self._limiter = asyncio.Semaphore(settings.max_concurrency)
        self._threads = _DaemonThreads(settings.max_concurrency, name=f"python-judge-{settings.options.callable}")
        self._logged: set[str] = set()

    def __repr__(self) -> str:
        return f"PythonJudge({self.callable_name!r}, kwargs={self.kwargs!r})"

    async def ready(self) -> None:
        """Nothing to wait for: the function was imported when the judge was built."""

    async def close(self) -> None:
        self._threads.shutdown()

    async def compare(
        self,
        problem: str,
        first: Trace,
        second: Trace,
        reference: str | None = None,
        *,
        task: str = "math",
        group: str | None = None,
    ) -> float | None:
        """P(``first`` is better) from the function, or None (a failed call). ``reference``, ``task`` and ``group``
        are not passed on."""
        return await self._call(problem=problem, first=first.text, second=second.text)

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        """The function's score of ``trace`` in [0, 1], or None (a failed call). ``reference`` is not passed on."""
        return await self._call(problem=problem, trace=trace.text)

    def shown(self, text: str | bytes | None) -> str:
        """``text`` as the function gets it: sanitised and cut to ``max_trace_tokens`` (UTF-8 bytes)."""
        return sanitize_trace(text, self.settings.max_trace_tokens)

    async def _call(self, **texts) -> float | None:
        self.stats.calls += 1
        arguments = {**self.kwargs, **{name: self.shown(text) for name, text in texts.items()}}
        async with self._limiter:
            task = asyncio.ensure_future(self._run(arguments))
            try:
                done, _ = await asyncio.wait({task}, timeout=self.settings.timeout_s)
            except asyncio.CancelledError:  # the caller's own cancellation: the call goes with it
                task.cancel()
                raise
        if not done:
            task.cancel()
            task.add_done_callback(_retrieve)
            return self._failed(_TIMED_OUT, f"no answer within timeout_s={self.settings.timeout_s:g}", errors=True)
        if task.cancelled():  # the function raised CancelledError of its own
            return self._failed(_RAISED, "raised CancelledError", errors=True)
        raised, value = task.result()
        if raised:
            return self._failed(_RAISED, f"raised {value!r}", errors=True, exc=value)
        outcome = valid_outcome(value)
        if outcome is None:
            return self._failed(_BAD_VALUE, f"returned {value!r} (a real number in [0, 1] is expected)", errors=False)
        return outcome

    async def _run(self, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """(False, what the function returned) or (True, what it raised): nothing escapes but cancellation (asyncio
        would let ``SystemExit`` out of a task through the event loop)."""
        try:
            if self.is_async:
                result = self.function(**arguments)
            else:
                call = functools.partial(contextvars.copy_context().run, self.function, **arguments)
                result = await asyncio.wrap_future(self._threads.submit(call))
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                result = await result
            return False, result
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001  (the user's function: anything it raises is a failed call)
            return True, exc

    def _failed(self, kind: str, what: str, *, errors: bool, exc: BaseException | None = None) -> None:
        self.stats.failures += 1
        if errors:
            self.stats.errors += 1
        else:
            self.stats.parse_failures += 1
        if kind not in self._logged:
            self._logged.add(kind)
            logger.warning(
                "python judge %s: a call %s; counted as a failed call (later calls that %s are counted, not logged)",
                self.callable_name,
                what,
                kind,
                exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None,
            )
        return None


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning


class _DaemonThreads:
    """At most ``size`` daemon worker threads, started as needed, running submitted calls in order. Unlike
    :class:`concurrent.futures.ThreadPoolExecutor` its threads are not joined at exit: a function that hangs forever
    cannot keep the process (a tool run, a test session) from ending."""

    def __init__(self, size: int, name: str):
        self.size, self.name = max(1, int(size)), name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._closed = False

    def submit(self, call: Callable[[], Any]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the python judge was closed")
            self._queue.put((future, call))
            if self._idle == 0 and self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self.name}-{self._threads}", daemon=True).start()
            else:
                self._idle = max(0, self._idle - 1)  # that idle worker takes it
        return future

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            for _ in range(self._threads):
                self._queue.put(None)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, call = item
            if future.set_running_or_notify_cancel():  # False: cancelled (timed out) before it started
                try:
                    future.set_result(call())
                except BaseException as exc:  # noqa: BLE001  (handed to the caller, which counts it)
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1
