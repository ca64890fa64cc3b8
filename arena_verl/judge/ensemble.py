"""A judge ensemble (``reward.arena.judge.ensemble``): several judges, of any backends, asked about each comparison,
their verdicts combined into one outcome. It is a :class:`~arena_verl.core.judge_protocol.Judge` like any other: the
referee, the tournament and the tools call it as they call one judge.

- **Who is asked**: every member, or ``per_comparison`` of them chosen by a seeded hash of the group and the pair
  (not of the presentation order), so that both orders of a pair go to the same members and each member's position
  bias cancels as one judge's does.
- **Each member's call** is bounded by that member's own call bound (its timeout and retries) and contained: a member
  that raises, hangs or answers garbage is that member's failed call; the others' verdicts still count.
- **Combination** of the answering members' outcomes: ``mean`` (the mean probability: a soft outcome) or ``majority``
  (1 or 0 for the side more members prefer, 0.5 when as many prefer each; pointwise: the median score). Fewer answers
  than ``quorum`` is a failed call (``None``), to which the referee's thin-group rule applies as to any failed call.
- **What each member said** is reported to the call's record (:func:`~arena_verl.core.judge_protocol.report_members`):
  the referee turns it into per-member figures, the audit into per-member tables. The call is marked as having a
  failed attempt once the quorum can no longer be met (and the members still working are cancelled: no verdict can
  come of them), so that it counts as failed, not as a straggler.
- **The referee's deadline** of an ensemble call is its slowest member's bound plus a second
  (:data:`~arena_verl.settings_judge.ENSEMBLE_SLACK_S`): a member that hangs runs out its own bound first, and the
  others' verdicts are combined.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from arena_verl.core.judge_protocol import (
    CallRecord,
    Judge,
    JudgeStats,
    Trace,
    current_call,
    recording_call,
    report_failed_attempt,
    report_members,
)
from arena_verl.core.tournament.judge_call import CallBounds, bounded_call

__all__ = ["EnsembleJudge", "Member", "combine_outcomes", "combine_scores"]

logger = logging.getLogger(__name__)

# A record's counters a member's call adds to the ensemble call's record (its cost, and its attempts that reached no
# judge: the breaker opens on an ensemble call that got no verdict and had such attempts).
_COST_FIELDS = ("low_mass", "tokens_in", "tokens_out", "prompt_tokens", "cached_tokens", "transport_failures")


@dataclass(frozen=True)
class Member:
    name: str
    judge: Judge
    call_bound_s: float  # the longest one of its calls may take (its own timeout and retries)


def combine_outcomes(outcomes: Sequence[float], how: str) -> float:
    """One outcome from the answering members' outcomes (each P(first is better) in [0, 1])."""
    if how == "mean":
        return float(np.mean(outcomes))
    if how == "majority":
        first = sum(outcome > 0.5 for outcome in outcomes)
        second = sum(outcome < 0.5 for outcome in outcomes)
        return 1.0 if first > second else 0.0 if second > first else 0.5
    raise ValueError(f"unknown combination {how!r}")


def combine_scores(scores: Sequence[float], how: str) -> float:
    """One pointwise score from the answering members' scores: their mean, or their median (``majority``)."""
    if how == "mean":
        return float(np.mean(scores))
    if how == "majority":
        return float(np.median(scores))
    raise ValueError(f"unknown combination {how!r}")


class EnsembleJudge:
    """The members of an ensemble, asked and combined as ``combine``, ``per_comparison`` and ``quorum`` say (the
    settings are checked by :class:`~arena_verl.settings_judge.EnsembleOptions`)."""

    def __init__(
        self,
        members: Sequence[Member],
        combine: str = "mean",
        per_comparison: int | None = None,
        quorum: int = 1,
        seed: int = 0,
    ):
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = tuple(members)
        self.combine, self.quorum, self.seed = combine, quorum, seed
        self.per_comparison = len(self.members) if per_comparison is None else per_comparison
        self.name = "ensemble(" + ", ".join(f"{m.name}={m.judge.name}" for m in self.members) + ")"
        # SIMULATED only if every member is: one model-backed member means a model read the traces.
        self.simulated = all(getattr(m.judge, "simulated", False) for m in self.members)
        # Its engines' own token counts are reported (the audit's prompt/cached figures) if any member's are.
        self.reports_usage = any(getattr(m.judge, "reports_usage", False) for m in self.members)
        self._calls, self._failures = 0, 0

    async def ready(self) -> None:
        """Every member ready (an engine's start is no call's time): the tools await it before the first call."""
        await _each_member(self.members, "ready")

    async def close(self) -> None:
        """Close every member that can be closed (engines, sessions, threads); one failing does not stop the rest."""
        await _each_member(self.members, "close")

    @property
    def stats(self) -> JudgeStats:
        """Calls and failures are the ensemble's (a comparison, combined); what the engines computed (tokens,
        low-mass reads, reroutes) is the members' sum."""
        total = JudgeStats(calls=self._calls, failures=self._failures)
        for f in fields(JudgeStats):
            if f.name not in ("calls", "failures"):
                setattr(total, f.name, sum(int(getattr(m.judge.stats, f.name, 0) or 0) for m in self.members))
        return total

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
        chosen = self._chosen(group, problem, sorted((first.text, second.text)))
        answers = await self._ask(
            chosen, lambda judge: judge.compare(problem, first, second, reference, task=task, group=group)
        )
        return self._combined(answers, combine_outcomes)

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        chosen = self._chosen(group, problem, [trace.text])
        answers = await self._ask(chosen, lambda judge: judge.score(problem, trace, reference, task=task, group=group))
        return self._combined(answers, combine_scores)

    # -- internals ------------------------------------------------------------------------------------------------

    def _chosen(self, group: str | None, problem: str, texts: Sequence[str]) -> list[Member]:
        """The members asked: all of them, or ``per_comparison`` drawn by a hash of (seed, group, problem, texts)."""
        if self.per_comparison >= len(self.members):
            return list(self.members)
        digest = hashlib.blake2b(digest_size=8, person=b"arena-ensemble")
        for part in (str(self.seed), str(group), problem, *texts):
            data = part.encode("utf-8", errors="surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
        rng = np.random.default_rng(int.from_bytes(digest.digest(), "little"))
        picked = sorted(rng.choice(len(self.members), size=self.per_comparison, replace=False))
        return [self.members[i] for i in picked]

    async def _ask(
        self, chosen: list[Member], call: Callable[[Judge], Awaitable[float | None]]
    ) -> dict[str, float | None]:
        """Every chosen member's outcome (None: it failed), asked at once. Each member's call has a record of its
        own (its failed attempts are its own); its cost is added to this call's record as it ends."""
        outer = current_call()
        count_tokens = outer.count_tokens if outer is not None else False

        async def one(member: Member) -> tuple[str, float | None, CallRecord]:
            record = CallRecord(count_tokens=count_tokens)
            recording_call(record)  # this member task's own context

            async def asked():  # made inside the contained call: a judge that raises before awaiting is contained
                return await call(member.judge)

            bounds = CallBounds(deadline_s=member.call_bound_s)
            outcome = await bounded_call(asked(), bounds, f"ensemble member {member.name}")
            return member.name, outcome, record

        tasks = [asyncio.ensure_future(one(member)) for member in chosen]
        answers: dict[str, float | None] = {}
        failed = 0
        try:
            for done in asyncio.as_completed(tasks):
                name, outcome, record = await done
                answers[name] = outcome
                if outer is not None:
                    _add_cost(outer, record)
                failed += outcome is None
                if len(chosen) - failed < self.quorum:  # no verdict can come of it: stop waiting for the rest
                    report_failed_attempt()  # a failed call, not a straggler
                    break
        finally:
            for task in tasks:
                task.cancel()
        report_members({member.name: answers.get(member.name) for member in chosen})
        return answers

    def _combined(self, answers: dict[str, float | None], combine: Callable[[Sequence[float], str], float]):
        self._calls += 1
        answered = [outcome for outcome in answers.values() if outcome is not None]
        if len(answered) < self.quorum:
            self._failures += 1
            return None
        return combine(answered, self.combine)


async def _each_member(members: Sequence[Member], method: str) -> None:
    async def one(judge) -> None:
        result = getattr(judge, method)()
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            await result

    calls = [one(m.judge) for m in members if callable(getattr(m.judge, method, None))]
    for outcome in await asyncio.gather(*calls, return_exceptions=True):
        if isinstance(outcome, BaseException):
            logger.warning("an ensemble member's %s failed: %r", method, outcome)


def _add_cost(outer: CallRecord, inner: CallRecord) -> None:
    counts = {name: getattr(inner, name) for name in _COST_FIELDS if getattr(inner, name) is not None}
    outer.add(**counts)
