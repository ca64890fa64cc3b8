"""The referee as a Ray actor: named per job (and per shard of uids), created on first use by any reward worker."""

from __future__ import annotations

import dataclasses
import time
import zlib
from typing import Any

import ray

from arena_verl.core.judge_protocol import JudgeStats
from arena_verl.core.plugin_loader import load_plugins
from arena_verl.core.referee import Referee, Submission, Verdict, group_key
from arena_verl.judge import make_judge
from arena_verl.settings import ArenaSettings

__all__ = ["RefereeActor", "build_referee", "referee_handle", "forget_referee"]

_HANDLES: dict[str, Any] = {}
# One referee holds every waiting sample of its shard: a batch of 1024 prompts x 16 samples waits at once.
_MAX_CONCURRENCY = 100_000


def build_referee(settings: ArenaSettings) -> Referee:
    """The referee of ``settings`` with its judge: what the actor hosts, and what an in-process client holds
    (:mod:`arena_verl.verl_edge.local_referee`)."""
    # rlvr: the referee only counts groups (what the arena would route); no judge is built or called.
    load_plugins(settings.plugins)  # a user's backend or strategy, in this process too (a Ray actor's)
    judge = make_judge(settings.judge) if settings.uses_judge else _NoJudge()
    return Referee(**settings.referee_kwargs(), judge=judge)


class RefereeActor:
    """Hosts a :class:`Referee`. Restarted by Ray if its process dies (the state of groups in flight is lost)."""

    def __init__(self, settings: ArenaSettings):
        self.referee = build_referee(settings)
        # Which life of the named actor this is: Ray restarts a dead referee under the same name with fresh counters,
        # and the tracker must start its differences again rather than read a drop (or a smaller rise) as counts.
        self.started_at = time.time()

    async def submit(self, submission: Submission) -> Verdict:
        return await self.referee.submit(submission)

    async def observe(self, submission: Submission) -> None:
        """Returns at once (the caller holds no call open while the group fills)."""
        self.referee.observe(submission)

    async def metrics(self, step: int | None = None) -> dict[str, float]:
        return self.referee.metrics(step)

    async def clock(self) -> dict[str, float]:
        return {**self.referee.clock(), "started_at": self.started_at}

    async def count_fallback(self, step: int | None, reason: str) -> None:
        """A reward worker gave a sample its verifier reward without this referee's answer (``referee_lost``): counted
        here, where the tracker reads the counters, once the referee can be reached again; as a sample too (the
        referee that lost it lost its count), so that the step's fallback share is of all its samples."""
        self.referee._count(step, "samples")
        self.referee._count(step, f"fallback_{reason}")

    async def advantage_groups(self, uids: list) -> dict:
        """The arena's advantage estimator asks how each group of ``uids`` was rewarded (Referee.advantage_groups)."""
        return self.referee.advantage_groups(uids)

    def judge_backend(self) -> str:
        return self.referee.judge.name

    def judge_stats(self) -> dict[str, int]:
        return dataclasses.asdict(self.referee.judge.stats)


class _NoJudge:
    """The judge of a counting-only referee (mode rlvr): it is never asked; a call would be a bug, so it fails."""

    name = "none"

    def __init__(self):
        self.stats = JudgeStats()

    async def compare(self, *args, **kwargs):
        raise RuntimeError("mode rlvr has no judge")

    async def score(self, *args, **kwargs):
        raise RuntimeError("mode rlvr has no judge")


def shard_name(settings: ArenaSettings, uid: str) -> str:
    shard = zlib.crc32(group_key(uid).encode("utf-8", errors="replace")) % settings.num_referees
    return f"{settings.referee_name}_{shard}"


def referee_handle(settings: ArenaSettings, uid: str):
    """The referee of ``uid``'s shard, created if it does not exist yet (``get_if_exists`` makes the creation safe
    when several reward workers race for it)."""
    name = shard_name(settings, uid)
    handle = _HANDLES.get(name)
    if handle is None:
        handle = (
            ray.remote(RefereeActor)
            .options(
                name=name,
                get_if_exists=True,
                num_cpus=0,
                max_restarts=-1,
                max_concurrency=_MAX_CONCURRENCY,
            )
            .remote(settings)
        )
        _HANDLES[name] = handle
    return handle


def forget_referee(settings: ArenaSettings, uid: str) -> None:
    """Drop a cached handle after an error, so that the next sample looks the actor up again."""
    _HANDLES.pop(shard_name(settings, uid), None)
