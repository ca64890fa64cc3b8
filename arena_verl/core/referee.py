"""The group referee: collects the samples of each group as they arrive, routes the complete group, runs its
tournament (or pointwise judging) and answers every waiting sample. Pure asyncio; the Ray actor that hosts it lives
in :mod:`arena_verl.actors.referee_actor`.

Guarantees: every submitted sample gets an answer. A group that never completes is answered at its deadline with
verifier rewards; a tournament that fails or runs past its timeout gives verifier rewards; both are counted as
fallbacks. Samples beyond the group size, and samples that arrive after their group was answered, get their verifier
reward (counted); a sample submitted twice gets the same answer twice.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import math
import time
import zlib
from dataclasses import dataclass

import numpy as np

from arena_verl.core.limiter import PRIORITY_COMPLETE, PRIORITY_SPECULATIVE, PriorityLimiter
from arena_verl.core.names import (
    FALLBACK_DEADLINE,
    FALLBACK_JUDGE_ERROR,
    FALLBACK_LATE,
    FALLBACK_OVERFLOW,
    FALLBACK_REASONS,
)
from arena_verl.core.routing import (
    ROUTE_POINTWISE,
    ROUTE_TOURNAMENT,
    ROUTE_VERIFIER,
    decide_route,
    is_uniform,
    pointwise_reward,
    tournament_rewards,
)
from arena_verl.core.tournament import Tournament, contained, valid_outcome
from arena_verl.core.tournament.options import TournamentOptions
from arena_verl.judge.base import Judge, Trace
from arena_verl.settings import ArenaSettings

logger = logging.getLogger(__name__)

__all__ = [
    "Submission",
    "Verdict",
    "Referee",
    "FALLBACK_REASONS",
    "COUNTERS",
    "derive_metrics",
    "group_key",
    "grpo_advantages",
    "position_figures",
]

NEUTRAL_SCORE = 0.5  # what a failed pointwise score counts as
_RECENT_GROUPS = 20_000  # answered groups remembered (without traces) for duplicates and late samples
_STEPS_KEPT = 512  # per-step counters kept for metrics(step)
# Load shedding, in queued judge calls per slot of the judge pool (PriorityLimiter.pressure): above the first, no new
# speculative idle-time work for groups still arriving; above the second, complete groups give up the rest of their
# budget too. Below both, the deadline fallback is the last resort.
SHED_SPECULATION_AT, SHED_BUDGET_AT = 1.0, 4.0
# |advantage| above this moves the policy. Computed in float64: a constant group's advantage is ~1e-10 here, while
# verl's float32 arithmetic leaves some constant groups of non-dyadic rewards (e.g. all 0.7) a uniform ~0.05.
_NONZERO_ADVANTAGE = 1e-6
_LATENCY_EMA = 0.05  # weight of a new call's duration in the typical judge latency (completion_grace's unit)
# Every metrics() answer carries these counters (0 when nothing happened), so tracker series stay aligned.
COUNTERS = (
    "samples",
    "samples_routed",
    "duplicates",
    "groups",
    "groups_routed",
    "groups_uniform",
    "groups_all_correct",
    "groups_all_incorrect",
    "judge_calls",
    "judge_calls_routed",
    "judge_calls_wasted",
    "judge_failures",
    "judge_calls_dropped",  # in flight at a complete group's grace deadline (completion_grace): cancelled
    "shed_speculation",  # idle-time speculative work held back: the judge pool had a full pool's worth queued
    "shed_budget",  # a complete group's remaining budget given up: the judge pool was far behind
    *(f"fallback_{name}" for code, name in FALLBACK_REASONS.items() if code),
    # Sample utilisation (the paper's Figure 5): GRPO's outcome advantage of every answered sample, from the rewards
    # the referee gave and from the verifier rewards alone (what RLVR gives the same samples).
    "advantage_samples",
    "nonzero_advantage",
    "nonzero_advantage_rlvr",
    "abs_advantage_sum",
    "abs_advantage_sum_rlvr",
    # The judge's position bias, from the verdicts that entered tournament fits.
    "verdicts_decided",  # a win for one side (ties and failed calls are not)
    "verdicts_first_won",  # ... for the trace shown first
    "order_pairs",  # pairs judged in both presentation orders, both decided
    "order_pairs_consistent",  # ... where the same trace won both times
    "order_effect_sum",  # the fitted first-position bonus (order_effect: true), summed over routed tournaments
    "order_effect_fits",
)


@dataclass(frozen=True)
class Submission:
    uid: str  # the group (verl's uid: one per prompt, shared by its n samples)
    sample_key: str  # the sample within its group (session id, or a hash of the response)
    problem: str
    trace: Trace
    verifier_reward: float
    reference: str | None = None
    step: int | None = None
    content_key: str | None = None  # a hash of the response: tells a padding copy from a new sample
    task: str = "math"  # which prompt the judge uses: math, code or generic


@dataclass(frozen=True)
class Verdict:
    reward: float
    route: int = ROUTE_VERIFIER
    uniform: bool = False
    strength: float = 0.0
    win_rate: float = -1.0  # -1 = the sample played no match
    judge_calls: int = 0  # charged to the whole group
    judge_failures: int = 0  # of the group's judge calls
    fallback: int = 0
    routed: bool = False  # the reward came from judge verdicts (a tournament whose every call failed: False)


class _Group:
    def __init__(self, uid: str, size: int):
        self.uid, self.size = uid, size
        self.members: list[Submission] = []
        self.futures: list[asyncio.Future] = []
        self.index_of: dict[str, int] = {}
        self.content: dict[str, int] = {}
        self.received = 0
        self.tournament: Tournament | None = None
        self.speculative_calls = 0
        self.position: dict[str, int] = {}  # position_figures() of its tournament's verdicts
        self.order_effect: float | None = None  # its fitted first-position bonus (order_effect: true)
        self.complete = False
        self.answered = False
        self.deadline: asyncio.TimerHandle | None = None

    def rewards(self) -> list[float]:
        return [m.verifier_reward for m in self.members]

    @property
    def step(self) -> int | None:
        """The training step of its first sample (per-step counters); None once answered and forgotten."""
        return self.members[0].step if self.members else None


class Referee:
    """Group referee for one job (or one shard of its uids)."""

    def __init__(self, settings: ArenaSettings, judge: Judge):
        self.settings = settings
        self.judge = judge
        self._tournament_options = TournamentOptions.from_settings(settings)
        # max_concurrency caps the judge pool's calls in flight over all referee shards: each shard takes its share.
        self._limiter = PriorityLimiter(max(1, math.ceil(settings.judge.max_concurrency / settings.num_referees)))
        self._latency_s: float | None = None  # running typical duration of one judge call
        self._groups: dict[str, _Group] = {}
        self._recent: collections.OrderedDict[str, _Group] = collections.OrderedDict()
        self._tasks: set[asyncio.Task] = set()
        self._counters: collections.Counter[str] = collections.Counter()
        self._step_counters: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        # Wall-clock times (time.time(), comparable across referee shards) behind arena/tail_after_last_sample_s.
        self._last_arrival_at = 0.0
        self._last_routed_answer_at = 0.0

    async def submit(self, sub: Submission) -> Verdict:
        """Register one sample and wait for its group's answer."""
        sub = _normalised(sub)
        self._count(sub.step, "samples")
        self._last_arrival_at = time.time()
        group = self._groups.get(sub.uid) or self._recent.get(sub.uid)
        if group is None:
            group = self._open(sub.uid)
        if sub.sample_key in group.index_of:
            self._count(sub.step, "duplicates")
            return await asyncio.shield(group.futures[group.index_of[sub.sample_key]])
        if group.received >= group.size and sub.content_key is not None and sub.content_key in group.content:
            # verl's batch path pads a batch with copies of its first rows: answer a copy like its original.
            self._count(sub.step, "duplicates")
            return await asyncio.shield(group.futures[group.content[sub.content_key]])
        if group.received >= group.size:
            self._count(sub.step, "fallback_overflow")
            return Verdict(reward=sub.verifier_reward, fallback=FALLBACK_OVERFLOW)
        if group.answered:
            self._count(sub.step, "fallback_late")
            return Verdict(reward=sub.verifier_reward, fallback=FALLBACK_LATE)

        index = len(group.members)
        group.members.append(sub)
        group.received += 1
        group.index_of[sub.sample_key] = index
        if sub.content_key is not None:
            group.content.setdefault(sub.content_key, index)
        future = asyncio.get_running_loop().create_future()
        group.futures.append(future)
        self._speculate(group)
        if len(group.members) == group.size:
            group.complete = True
            self._spawn(self._answer(group))
        return await asyncio.shield(future)

    def observe(self, sub: Submission) -> None:
        """Register a sample whose caller does not wait for the answer (mode rlvr: counting only). Returns at once;
        the sample joins its group like a submitted one."""
        self._spawn(self.submit(sub))

    def metrics(self, step: int | None = None) -> dict[str, float]:
        """Counters and derived figures, for one step (``global_steps``, when verl sends it) or since the start."""
        counts = self._step_counters.get(step, collections.Counter()) if step is not None else self._counters
        out = derive_metrics({key: float(counts[key]) for key in COUNTERS})
        out["arena/simulated_judge"] = float(self.judge.name == "simulated")
        return out

    def clock(self) -> dict[str, float]:
        """When the last sample arrived and when the last routed group was answered (``time.time()``; 0 = never).
        The tracker hook turns them into ``arena/tail_after_last_sample_s``."""
        return {"last_arrival": self._last_arrival_at, "last_routed_answer": self._last_routed_answer_at}

    async def drain(self) -> None:
        """Wait for the groups being answered (tests and shutdown)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    # -- groups ---------------------------------------------------------------------------------------------------

    def _open(self, uid: str) -> _Group:
        group = _Group(uid, self.settings.group_size)
        self._groups[uid] = group
        loop = asyncio.get_running_loop()
        group.deadline = loop.call_later(self.settings.group_deadline_s, self._on_deadline, group)
        return group

    def _speculate(self, group: _Group) -> None:
        """Live tournament: start judging the newest trace while the group can still be routed to a tournament."""
        s = self.settings
        if not s.speculative or s.mode not in ("arena", "tournament_all"):
            return
        if s.mode == "arena" and not is_uniform(group.rewards(), s.diversity_tol):
            self._stop_judging(group)  # the group turned out diverse
            return
        if group.tournament is None:
            if len(group.members) > 1 and s.mode == "arena":
                return  # speculation was cancelled before; a diverse group never becomes uniform again
            group.tournament = self._new_tournament(group)
        while group.tournament.arrived < len(group.members):
            group.tournament.add()

    def _stop_judging(self, group: _Group) -> int:
        """Cancel the group's tournament, if any; returns the judge calls it made (charged to the group)."""
        if group.tournament is not None:
            group.tournament.cancel()
            group.speculative_calls = group.tournament.judge_calls
            group.tournament = None
        return group.speculative_calls

    async def _bounded(self, call, priority: int = PRIORITY_COMPLETE) -> float | None:
        """One judge call under the judge pool's cap (complete groups' calls first) and the call budget; a timeout,
        and anything the judge raises (``SystemExit`` and ``KeyboardInterrupt`` included), is no verdict. Only the
        cancellation of the caller itself propagates."""
        async with self._limiter.slot(priority):
            started = time.monotonic()
            try:
                # contained inside wait_for's own task: asyncio lets SystemExit/KeyboardInterrupt out of a task
                outcome = await asyncio.wait_for(contained(call, "judge call"), self.settings.judge.call_budget_s)
            except asyncio.TimeoutError:
                return None
            if outcome is not None:
                took = time.monotonic() - started
                self._latency_s = (
                    took if self._latency_s is None else self._latency_s + _LATENCY_EMA * (took - self._latency_s)
                )
            return outcome

    def _idle_gate(self, group: _Group):
        """Load shedding for one group's tournament (see SHED_SPECULATION_AT)."""

        def gate(complete: bool) -> bool:
            pressure = self._limiter.pressure
            if not complete and pressure >= SHED_SPECULATION_AT:
                self._count(group.step, "shed_speculation")
                return False
            if complete and pressure >= SHED_BUDGET_AT:
                self._count(group.step, "shed_budget")
                return False
            return True

        return gate

    def _new_tournament(self, group: _Group) -> Tournament:
        async def judge(first: int, second: int) -> float | None:
            a, b = group.members[first], group.members[second]
            return await self._bounded(
                self.judge.compare(a.problem, a.trace, b.trace, a.reference, task=a.task, group=group.uid),
                PRIORITY_COMPLETE if group.complete else PRIORITY_SPECULATIVE,
            )

        return Tournament(
            group.size,
            judge,
            seed=_stable_seed(group.uid),
            idle_gate=self._idle_gate(group),
            **self._tournament_options.tournament_kwargs(),
        )

    async def _answer(self, group: _Group) -> None:
        s = self.settings
        rewards = group.rewards()
        route = decide_route(s.mode, rewards, s.diversity_tol)
        uniform = is_uniform(rewards, s.diversity_tol)
        try:
            if route == ROUTE_TOURNAMENT:
                verdicts = await asyncio.wait_for(self._tournament(group, uniform), s.tournament_timeout_s)
            elif route == ROUTE_POINTWISE:
                verdicts = await asyncio.wait_for(self._pointwise(group, uniform), s.tournament_timeout_s)
            else:
                calls = self._stop_judging(group)
                verdicts = [Verdict(reward=r, uniform=uniform, judge_calls=calls) for r in rewards]
        except Exception as exc:  # noqa: BLE001  (a failed judge never fails the step: verifier rewards instead)
            logger.warning("group %s: judging failed (%r); verifier rewards used", group.uid, exc)
            calls = self._stop_judging(group)
            verdicts = [
                Verdict(reward=r, route=route, uniform=uniform, judge_calls=calls, fallback=FALLBACK_JUDGE_ERROR)
                for r in rewards
            ]
        self._deliver(group, verdicts, route, uniform)

    async def _tournament(self, group: _Group, uniform: bool) -> list[Verdict]:
        if group.tournament is None:
            group.tournament = self._new_tournament(group)
        while group.tournament.arrived < group.size:
            group.tournament.add()
        grace = self.settings.completion_grace
        deadline = grace * self._latency_s if grace is not None and self._latency_s is not None else None
        result = await group.tournament.finish(deadline_s=deadline)
        self._count(group.step, "judge_calls_dropped", result.dropped_calls)
        rewards = tournament_rewards(self.settings.mode, result.strengths, group.rewards(), self.settings.reward_scale)
        group.position = position_figures(result.comparisons)
        answered = result.judge_calls - result.failed_calls - result.dropped_calls  # calls with a verdict
        if self.settings.order_effect and answered > 0:
            group.order_effect = float(result.order_effect)
        win_rate = result.win_rate
        return [
            Verdict(
                reward=float(rewards[i]),
                route=ROUTE_TOURNAMENT,
                uniform=uniform,
                strength=float(result.strengths[i]),
                win_rate=float(win_rate[i]) if result.games[i] else -1.0,
                judge_calls=result.judge_calls,
                judge_failures=result.failed_calls,
                routed=result.failed_calls < result.judge_calls,  # at least one verdict went into the fit
            )
            for i in range(group.size)
        ]

    async def _pointwise(self, group: _Group, uniform: bool) -> list[Verdict]:
        s = self.settings

        async def score(member: Submission) -> float | None:
            value = await self._bounded(
                self.judge.score(member.problem, member.trace, member.reference, task=member.task, group=group.uid)
            )
            return valid_outcome(value, allowed=(0.0, 0.5, 1.0))

        scores = await asyncio.gather(*(score(m) for m in group.members), return_exceptions=True)
        failures = sum(1 for x in scores if not isinstance(x, float))
        verdicts = []
        for member, value in zip(group.members, scores):
            judged = isinstance(value, float)
            # A failed score is the middle of the judge's scale: neutral (the verifier reward in adaptive_pointwise,
            # 0.5 in the judge-only pointwise baseline, which must not fall back on the verifier), and counted.
            score = value if judged else NEUTRAL_SCORE
            reward = pointwise_reward(s.mode, score, member.verifier_reward, s.reward_scale)
            verdicts.append(
                Verdict(
                    reward=reward,
                    route=ROUTE_POINTWISE,
                    uniform=uniform,
                    judge_calls=len(group.members),
                    judge_failures=failures,
                    fallback=0 if judged else FALLBACK_JUDGE_ERROR,
                    routed=judged,
                )
            )
        return verdicts

    def _on_deadline(self, group: _Group) -> None:
        if group.complete or group.answered:
            return
        logger.warning(
            "group %s: %d of %d samples at the deadline; verifier rewards used",
            group.uid,
            len(group.members),
            group.size,
        )
        calls = self._stop_judging(group)
        rewards = group.rewards()
        verdicts = [Verdict(reward=r, judge_calls=calls, fallback=FALLBACK_DEADLINE) for r in rewards]
        self._deliver(group, verdicts, ROUTE_VERIFIER, is_uniform(rewards, self.settings.diversity_tol))

    def _deliver(self, group: _Group, verdicts: list[Verdict], route: int, uniform: bool) -> None:
        group.answered = True
        if group.deadline is not None:
            group.deadline.cancel()
        for future, verdict in zip(group.futures, verdicts):
            if not future.done():
                future.set_result(verdict)
        self._groups.pop(group.uid, None)
        self._record_group(group, verdicts, route, uniform)
        # Remember the answered group for duplicates and late samples, without its traces (a long run answers
        # millions of groups).
        group.members, group.tournament = [], None
        self._recent[group.uid] = group
        while len(self._recent) > _RECENT_GROUPS:
            self._recent.popitem(last=False)

    def _record_group(self, group: _Group, verdicts: list[Verdict], route: int, uniform: bool) -> None:
        """Count the answered group. Routed means "the reward came from judge verdicts": a group counts as routed
        when at least one of its samples' rewards did (``samples_routed`` counts them one by one), and its judge
        calls are charged as routed; calls of a group that got no reward from them (it turned out diverse, every call
        failed, the deadline or an error came first) are charged as wasted."""
        step = group.step
        calls = verdicts[0].judge_calls if verdicts else 0
        routed = sum(v.routed for v in verdicts)
        self._count(step, "groups")
        self._count(step, "judge_calls", calls)
        self._count(step, "samples_routed", routed)
        if routed:
            self._count(step, "groups_routed")
            self._count(step, "judge_calls_routed", calls)
            self._last_routed_answer_at = time.time()
        else:
            self._count(step, "judge_calls_wasted", calls)
        if uniform and group.complete:
            self._count(step, "groups_uniform")
            self._count(step, "groups_all_correct" if group.members[0].verifier_reward > 0 else "groups_all_incorrect")
        self._count(step, "judge_failures", verdicts[0].judge_failures if verdicts else 0)
        for verdict in verdicts:
            if verdict.fallback:
                self._count(step, f"fallback_{FALLBACK_REASONS[verdict.fallback]}")
        if group.complete:  # an incomplete group's advantages are not the ones verl computes for its uid
            self._count_utilisation(step, [v.reward for v in verdicts], group.rewards())
        if routed:
            for key, amount in group.position.items():
                self._count(step, key, amount)
            if group.order_effect is not None:
                self._count(step, "order_effect_sum", group.order_effect)
                self._count(step, "order_effect_fits")

    def _count_utilisation(self, step: int | None, rewards: list[float], verifier: list[float]) -> None:
        """GRPO advantages of the group's samples under the given rewards and under the verifier's (RLVR)."""
        norm = self.settings.advantage_norm_by_std is not False
        self._count(step, "advantage_samples", len(rewards))
        for suffix, values in (("", rewards), ("_rlvr", verifier)):
            advantages = np.abs(grpo_advantages(values, norm))
            self._count(step, f"nonzero_advantage{suffix}", int((advantages > _NONZERO_ADVANTAGE).sum()))
            self._count(step, f"abs_advantage_sum{suffix}", float(advantages.sum()))

    def _count(self, step: int | None, key: str, amount: float = 1) -> None:
        self._counters[key] += amount
        if step is not None:
            self._step_counters[step][key] += amount
            if len(self._step_counters) > _STEPS_KEPT:
                del self._step_counters[min(self._step_counters)]

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def derive_metrics(counts: dict[str, float]) -> dict[str, float]:
    """``arena/<counter>`` for every counter, plus the ratios a user watches: alpha (the non-diverse share of groups,
    split into all-correct and all-incorrect), the share routed to the judge, judge calls per routed group, sample
    utilisation under the arena's rewards and under RLVR's (``*_rlvr``), and the judge's position bias. A ratio whose
    denominator is 0 is 0.0, except the position-bias figures, which are left out when nothing measured them (a
    0.0 or 0.5 would read as a measurement)."""
    out = {f"arena/{key}": float(counts.get(key, 0.0)) for key in COUNTERS}
    groups, routed, uniform = counts.get("groups", 0), counts.get("groups_routed", 0), counts.get("groups_uniform", 0)

    def share(numerator: str, denominator: float) -> float:
        return counts.get(numerator, 0.0) / denominator if denominator else 0.0

    out["arena/alpha"] = uniform / groups if groups else 0.0
    out["arena/all_correct_share"] = share("groups_all_correct", groups)
    out["arena/all_incorrect_share"] = share("groups_all_incorrect", groups)
    out["arena/all_correct_share_of_uniform"] = share("groups_all_correct", uniform)
    out["arena/alpha_routed"] = routed / groups if groups else 0.0
    out["arena/judge_calls_per_routed_group"] = share("judge_calls_routed", routed)
    samples = counts.get("advantage_samples", 0)
    for suffix in ("", "_rlvr"):
        out[f"arena/nonzero_advantage_share{suffix}"] = share(f"nonzero_advantage{suffix}", samples)
        out[f"arena/mean_abs_advantage{suffix}"] = share(f"abs_advantage_sum{suffix}", samples)
    if counts.get("verdicts_decided", 0):
        out["arena/first_position_win_share"] = share("verdicts_first_won", counts["verdicts_decided"])
    if counts.get("order_pairs", 0):
        out["arena/self_consistency"] = share("order_pairs_consistent", counts["order_pairs"])
    if counts.get("order_effect_fits", 0):
        out["arena/order_effect"] = share("order_effect_sum", counts["order_effect_fits"])
    return out


def grpo_advantages(rewards, norm_by_std: bool = True) -> np.ndarray:
    """The outcome advantage verl's ``grpo`` estimator gives one group: ``(r - mean) / (std + 1e-6)`` with the
    unbiased std (``r - mean`` without ``norm_adv_by_std_in_grpo``); a group of one keeps its reward, as in verl."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.size < 2:
        return rewards.copy()
    centred = rewards - rewards.mean()
    return centred / (rewards.std(ddof=1) + 1e-6) if norm_by_std else centred


def position_figures(comparisons) -> dict[str, int]:
    """Position-bias counts over one tournament's verdicts ``(first, second, outcome)`` in presentation order:
    decided verdicts, those won by the trace shown first, and pairs judged in both orders (both decided) with how
    many of them the same trace won both times."""
    decided = [(first, second, outcome) for first, second, outcome in comparisons if outcome in (0.0, 1.0)]
    winners: dict[tuple[int, int], dict[int, set[int]]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for first, second, outcome in decided:
        winners[(min(first, second), max(first, second))][first].add(first if outcome == 1.0 else second)
    pairs = consistent = 0
    for by_first in winners.values():
        if len(by_first) == 2:  # judged with each trace shown first
            pairs += 1
            one, other = by_first.values()
            consistent += len(one) == 1 and one == other
    return {
        "verdicts_decided": len(decided),
        "verdicts_first_won": sum(outcome == 1.0 for _, _, outcome in decided),
        "order_pairs": pairs,
        "order_pairs_consistent": consistent,
    }


def group_key(uid) -> str:
    """A uid as the referee keys groups: strings as they are; anything else (ints, numpy scalars, tuples, bytes) by
    its type and value, so it can be hashed, seeded and sharded."""
    return uid if isinstance(uid, str) else f"{type(uid).__name__}:{uid!r}"


def _normalised(sub: Submission) -> Submission:
    """Every reward that leaves the referee is finite: a NaN or infinite verifier reward counts as 0."""
    changes = {}
    if not isinstance(sub.uid, str):
        changes["uid"] = group_key(sub.uid)
    try:
        reward = float(sub.verifier_reward)
    except (TypeError, ValueError):
        reward = math.nan
    if not math.isfinite(reward):
        logger.warning("group %s: verifier reward %r is not a finite number; 0 used", sub.uid, sub.verifier_reward)
        reward = 0.0
    if reward != sub.verifier_reward or type(sub.verifier_reward) is not float:
        changes["verifier_reward"] = reward
    return dataclasses.replace(sub, **changes) if changes else sub


def _stable_seed(uid: str) -> int:
    return zlib.crc32(group_key(uid).encode("utf-8", errors="replace"))
