"""The referee in the caller's own process, behind the interface of :class:`.referee_client.RefereeClient`: for a
trainer that runs the reward manager in one process (the experiment's fast trainer), where a Ray actor would only add
round trips. The same :class:`Referee` the actor hosts (:func:`arena_verl.actors.referee_actor.build_referee`), one
shard; the manager's event loop runs it.

It also answers what the trainer's other readers ask the actors: the arena estimator's ``advantage_groups`` (hand
:meth:`advantage_groups` to :func:`arena_verl.verl_edge.advantage.use_lookup`) and the tracker's counters
(:meth:`read_shard`, for :class:`arena_verl.verl_edge.tracking.ArenaMetricsReader`)."""

from __future__ import annotations

import time

from arena_verl.actors.referee_actor import build_referee
from arena_verl.core.referee import Submission, Verdict
from arena_verl.settings import ArenaSettings

__all__ = ["LocalRefereeClient"]


class LocalRefereeClient:
    def __init__(self, settings: ArenaSettings):
        self.settings = settings
        self.referee = build_referee(settings)
        self.started_at = time.time()

    def observe(self, submission: Submission) -> None:
        self.referee.observe(submission)

    async def verdict(self, submission: Submission) -> Verdict:
        return await self.referee.submit(submission)

    def advantage_groups(self, uids: list) -> dict:
        return self.referee.advantage_groups(uids)

    def read_shard(self, shard: int) -> tuple[dict[str, float], dict[str, float]]:
        """(counters since the start, clock) of the one shard, as the actor's ``metrics`` and ``clock`` give them."""
        return self.referee.metrics(), {**self.referee.clock(), "started_at": self.started_at}
