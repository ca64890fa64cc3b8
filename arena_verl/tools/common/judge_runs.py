"""What the commands that judge a dump offline (``score``, ``audit-judge``) share: a Ray of their own for a vllm judge,
and a pool of workers that takes the work items from one iterator and closes the judge at the end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator

from arena_verl.backend_registry import backend_of
from arena_verl.settings_judge import JudgeSettings

__all__ = ["ray_for_judge", "run_workers"]


@contextlib.contextmanager
def ray_for_judge(judge_settings: JudgeSettings) -> Iterator[None]:
    """vLLM engines live in Ray actors: start Ray for a judge whose engines are Ray actors (the registry's
    ``gpu_engines``: vllm) unless it runs already; a Ray started here is stopped on the way out."""
    started = False
    if backend_of(judge_settings).gpu_engines:
        import ray

        if not ray.is_initialized():
            ray.init()
            started = True
    try:
        yield
    finally:
        if started:
            import ray

            ray.shutdown()


async def run_workers(items: Iterable, handle: Callable[[object], Awaitable[None]], concurrency: int, judge) -> None:
    """``handle`` every item with ``concurrency`` workers (at least one, at most one per item when ``items`` has a
    length), once the judge is ready (its ``ready()``, when it has one); one shared iterator, so each item is taken by
    exactly one worker. The first error stops the others; the judge is closed at the end when it has ``close``."""
    pending = iter(items)
    count = max(1, concurrency if not hasattr(items, "__len__") else min(concurrency, len(items)))

    async def worker() -> None:
        for item in pending:
            await handle(item)

    workers = []
    try:
        ready = getattr(judge, "ready", None)
        if ready is not None:  # an engine's start is neither a call's time nor cut by a call's timeout
            await ready()
        workers = [asyncio.ensure_future(worker()) for _ in range(count)]
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        close = getattr(judge, "close", None)
        if close is not None:
            await close()
