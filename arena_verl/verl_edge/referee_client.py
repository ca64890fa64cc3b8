"""The manager's side of the referee: a sample submitted to its group's referee actor (and its verdict awaited),
observed without waiting (rlvr), or a fallback counted. A referee that cannot be reached never fails the step: the
sample gets its verifier reward and the fallback is counted."""

from __future__ import annotations

import asyncio
import logging

import ray

from arena_verl.actors.referee_actor import forget_referee, referee_handle
from arena_verl.core.names import FALLBACK_REASONS, FALLBACK_REFEREE_LOST
from arena_verl.core.referee import Submission, Verdict
from arena_verl.settings import ArenaSettings

logger = logging.getLogger(__name__)

__all__ = ["RefereeClient", "UNAVAILABLE_PATIENCE_S"]

UNAVAILABLE_PATIENCE_S = 120.0  # how long a sample waits for a restarting referee


class RefereeClient:
    def __init__(self, settings: ArenaSettings):
        self.settings = settings

    def observe(self, submission: Submission) -> None:
        """rlvr: tell the referee about the sample without waiting (fire and forget), so that the RLVR run logs how
        many groups were non-diverse and what the arena would have routed. Never delays the sample; a referee that
        cannot be reached only costs that sample's count."""
        try:
            # observe() returns at once: no call stays open in this worker while the group fills (a worker with
            # calls in flight would not exit promptly on SIGTERM), and the answer is never needed.
            referee_handle(self.settings, submission.uid).observe.remote(submission)
        except Exception as exc:  # noqa: BLE001
            logger.debug("rlvr observation of group %s not sent (%r)", submission.uid, exc)
            forget_referee(self.settings, submission.uid)

    async def verdict(self, submission: Submission) -> Verdict:
        s = self.settings
        # Past the group deadline plus the tournament timeout the referee itself would have answered.
        patience = s.referee.group_deadline_s + s.referee.tournament_timeout_s + 60.0
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + UNAVAILABLE_PATIENCE_S
        delay = 0.25
        try:
            while True:
                handle = referee_handle(s, submission.uid)
                try:
                    return await asyncio.wait_for(handle.submit.remote(submission), patience)
                except ray.exceptions.ActorUnavailableError:
                    # The referee is restarting (Ray raises this for calls in flight when its process died). The
                    # restarted referee rebuilds the group from the samples that submit again.
                    if loop.time() + delay > give_up_at:
                        raise
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 5.0)
        except Exception as exc:  # noqa: BLE001  (a lost referee never fails the step: verifier reward instead)
            logger.warning("referee for group %s unavailable (%r); verifier reward used", submission.uid, exc)
            forget_referee(s, submission.uid)
            self.report_fallback(submission, FALLBACK_REASONS[FALLBACK_REFEREE_LOST])
            return Verdict(reward=submission.verifier_reward, fallback=FALLBACK_REFEREE_LOST)

    def report_fallback(self, submission: Submission, reason: str) -> None:
        """Count a fallback decided here at the referee (fire and forget: a referee still gone costs the count only,
        and the sample already has its reward)."""
        try:
            referee_handle(self.settings, submission.uid).count_fallback.remote(submission.step, reason)
        except Exception as exc:  # noqa: BLE001
            logger.debug("fallback of group %s not counted (%r)", submission.uid, exc)
            forget_referee(self.settings, submission.uid)
