"""Which reward function verifies a sample that is not math or multiple choice, and how its answer is read.

verl hands the manager either the user's ``custom_reward_function`` or its own ``default_compute_score``.
arena-verl's own verifier function (:mod:`arena_verl.verl_reward_fn`, needed only to make verl call the manager
beside a judge verl serves) is not a user's function: the manager's routing (multiple choice, math, verl's scorers
with their sandbox) stays in charge then."""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from arena_verl.verify.math_verifier import VerifyResult

logger = logging.getLogger(__name__)

__all__ = ["Scorers", "choose_scorers", "run_scorer"]


@dataclass(frozen=True)
class Scorers:
    """``user``: the user's function (it verifies every sample) or None; ``default``: the scorer of the data sources
    that are neither math nor multiple choice."""

    user: Callable | None
    default: Callable | None


def choose_scorers(config, compute_score: Callable | None) -> Scorers:
    custom = config.reward.get("custom_reward_function", {}) or {}
    if custom.get("path") and not _is_own_reward_fn(custom.get("path")):
        return Scorers(compute_score, compute_score)
    if custom.get("path"):
        return Scorers(None, _verl_default_scorer(config))
    return Scorers(None, compute_score)


async def run_scorer(scorer: Callable, loop: asyncio.AbstractEventLoop, **kwargs) -> VerifyResult:
    """Call a verl reward function (plain or async): its score, "correct" when it solved the sample. A scorer that
    raises or returns a non-finite score gives 0, counted as an error, never a crash."""
    try:
        if inspect.iscoroutinefunction(scorer):
            result = await scorer(**kwargs)
        else:
            result = await loop.run_in_executor(None, lambda: scorer(**kwargs))
        score = float(result["score"] if isinstance(result, dict) else result)
        if not math.isfinite(score):
            raise ValueError(f"score {score!r} is not finite")
        return VerifyResult(score, "correct" if _solved(result, score) else "wrong")
    except Exception as exc:  # noqa: BLE001
        logger.warning("reward function failed on a %s sample (%r); scored 0", kwargs.get("data_source"), exc)
        return VerifyResult(0.0, "error")


def _is_own_reward_fn(path: Any) -> bool:
    module = str(path).removeprefix("pkg://").replace("/", ".").removesuffix(".py")
    return module.endswith(("arena_verl.verl_reward_fn", "arena_verl.verl_edge.reward_fn"))


def _verl_default_scorer(config):
    """verl's default_compute_score with the job's sandbox settings, as verl builds it without a custom function
    (verl shares one semaphore across its processes; here one per reward worker bounds each worker's calls)."""
    from verl.utils.reward_score import default_compute_score

    sandbox = config.reward.get("sandbox_fusion", {}) or {}
    url = sandbox.get("url")
    if not url:
        return default_compute_score
    return partial(
        default_compute_score,
        sandbox_fusion_url=url,
        concurrent_semaphore=threading.Semaphore(int(sandbox.get("max_concurrent", 64))),
        memory_limit_mb=sandbox.get("memory_limit_mb", 1024),
    )


def _solved(result: Any, score: float) -> bool:
    """Correctness ("acc") from a reward function's answer: its own ``acc`` when it gives one (verl's math_dapo), else
    a full score (1 for right; verl's code scorers give the fraction of tests passed, and 0.1 passed is not solved)."""
    if isinstance(result, dict) and "acc" in result:
        return bool(result["acc"])
    return score >= 1.0
