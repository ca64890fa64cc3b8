"""The group referee: collects the samples of each group as they arrive, routes the complete group, runs its
tournament (or pointwise judging) and answers every waiting sample. Pure asyncio; the Ray actor that hosts it lives
in :mod:`arena_verl.actors.referee_actor`. The policies it applies are pure units beside it: the group bookkeeping
(:mod:`.groups`), speculation (:mod:`.speculation`), the judge pool's admission and load shedding (:mod:`.admission`),
the verdicts (:mod:`.answers`) and the counters (:mod:`.metrics`).

Guarantees: every submitted sample gets an answer. A group that never completes is answered at its deadline with
verifier rewards; a tournament that fails or runs past its timeout gives verifier rewards; both are counted as
fallbacks, and so does a tournament answered with fewer than ``min_verdict_share`` of its planned verdicts (a
"thin" group: one verdict must not become a group's full-size advantages). Samples beyond the group size, and
samples that arrive after their group was answered, get their verifier reward (counted); a sample submitted twice
gets the same answer twice.
"""

from __future__ import annotations

import asyncio
import logging
import time

from arena_verl.core.counts import is_count
from arena_verl.core.judge_protocol import CallRecord, Judge, current_call, recording_call
from arena_verl.core.limiter import PRIORITY_COMPLETE, PriorityLimiter
from arena_verl.core.modes import mode_of
from arena_verl.core.names import (
    FALLBACK_DEADLINE,
    FALLBACK_JUDGE_DOWN,
    FALLBACK_JUDGE_ERROR,
    FALLBACK_LATE,
    FALLBACK_OVERFLOW,
    FALLBACK_THIN,
    ROUTE_POINTWISE,
    ROUTE_TOURNAMENT,
)
from arena_verl.core.options import RefereeOptions, TournamentOptions
from arena_verl.core.referee.admission import (
    LatencyEstimate,
    call_priority,
    completion_deadline,
    shed_counter,
)
from arena_verl.core.referee.answers import pointwise_verdicts, tournament_verdicts, verdicts_needed, verifier_verdicts
from arena_verl.core.referee.breaker import CallHealth, JudgeBreaker, JudgeDown, unless_judge_down
from arena_verl.core.referee.groups import (
    Arrival,
    Group,
    GroupBook,
    Submission,
    Verdict,
    group_key,
    normalised,
    stable_seed,
)
from arena_verl.core.referee.members import group_member_counts
from arena_verl.core.referee.metrics import (
    JUDGE_STAT_COUNTERS,
    StepCounters,
    derive_metrics,
    group_counts,
    position_figures,
)
from arena_verl.core.referee.speculation import Speculation, speculation_step
from arena_verl.core.routing import is_uniform, route_of, tournament_rewards
from arena_verl.core.tournament import (
    CallBounds,
    Tournament,
    bound_judge,
    bounded_call,
    count_planned_calls,
    group_certainty,
)

logger = logging.getLogger(__name__)
BREAKER_DEFAULT_CAP_S = 60.0  # breaker_open_after_s null: one call's bound, at most this

__all__ = ["Referee"]


class Referee:
    """Group referee for one job (or one shard of its uids)."""

    def __init__(
        self,
        options: RefereeOptions,
        tournament: TournamentOptions,
        judge: Judge,
        *,
        call_budget_s: float,
        judge_slots: int,
    ):
        """``options`` and ``tournament``: the settings' parts; ``call_budget_s``: the longest one judge call may take
        (its retries included); ``judge_slots``: this referee's share of the judge's concurrency."""
        self.options = options
        self.tournament = tournament
        self.call_budget_s = call_budget_s
        self.judge = judge
        self._limiter = PriorityLimiter(judge_slots)
        self._latency = LatencyEstimate()  # typical duration of one judge call
        # The judge breaker: open while the judge has stopped answering (no call is sent, groups fall back at once).
        open_after = options.breaker_open_after_s
        if open_after is None:  # a judge silent for as long as one call may take, or a minute, is down
            open_after = min(call_budget_s, BREAKER_DEFAULT_CAP_S)
        self._breaker = JudgeBreaker(open_after, options.breaker_probe_s)
        self._judge_down = asyncio.Event()  # set while the breaker is open
        self._probe_pair: tuple | None = None  # the last comparison asked: what a probe asks again
        self._probe_task: asyncio.Task | None = None
        self._breaker_check: asyncio.TimerHandle | None = None  # the spell's length reached between two failures
        self._last_step: int | None = None  # the step the breaker's openings and probes are counted in
        self._judge_seen = dict.fromkeys(JUDGE_STAT_COUNTERS.values(), 0)  # judge counts already charged to a step
        self._book = GroupBook(options.group_size, options.groups_remembered)
        self._tasks: set[asyncio.Task] = set()
        self._counters = StepCounters(options.steps_remembered)
        self._planned: dict[int, int] = {}  # judge calls a tournament of N traces plans, by N (the runner's count)
        # Wall-clock times (time.time(), comparable across referee shards) behind arena/tail_after_last_sample_s.
        self._last_arrival_at = 0.0
        self._last_routed_answer_at = 0.0

    @property
    def _groups(self) -> dict[str, Group]:
        """The open groups by uid (a view of the book, for tests and debugging)."""
        return self._book.open

    @property
    def _recent(self) -> dict[str, Group]:
        """The recently answered groups by uid, without their traces (a view of the book)."""
        return self._book.recent

    @property
    def _step_counters(self) -> dict[int, dict[str, float]]:
        """The per-step counters kept (a view; the soak benchmark watches its size)."""
        return self._counters.by_step

    async def submit(self, sub: Submission) -> Verdict:
        """Register one sample and wait for its group's answer."""
        sub = normalised(sub)
        self._count(sub.step, "samples")
        self._last_arrival_at = time.time()
        self._last_step = sub.step if sub.step is not None else self._last_step
        group = self._book.find(sub.uid) or self._open(sub.uid)
        arrival, original = group.arrival(sub)
        if arrival in (Arrival.DUPLICATE, Arrival.PADDING):
            # the same sample again, or a copy verl's batch path padded a batch with: its original's answer
            self._count(sub.step, "duplicates")
            return await asyncio.shield(group.futures[original])
        if arrival is Arrival.OVERFLOW:
            self._count(sub.step, "fallback_overflow")
            return Verdict(reward=sub.verifier_reward, fallback=FALLBACK_OVERFLOW)
        if arrival is Arrival.LATE:
            self._count(sub.step, "fallback_late")
            return Verdict(reward=sub.verifier_reward, fallback=FALLBACK_LATE)

        future = asyncio.get_running_loop().create_future()
        group.join(sub, future)
        self._speculate(group)
        if group.full:
            group.complete = True
            self._spawn(self._answer(group))
        return await asyncio.shield(future)

    def observe(self, sub: Submission) -> None:
        """Register a sample whose caller does not wait for the answer (mode rlvr: counting only). Returns at once;
        the sample joins its group like a submitted one."""
        self._spawn(self.submit(sub))

    def metrics(self, step: int | None = None) -> dict[str, float]:
        """Counters and derived figures, for one step (``global_steps``, when verl sends it) or since the start."""
        return derive_metrics(self._counters.counts(step))

    def clock(self) -> dict[str, float]:
        """When the last sample arrived and when the last routed group was answered (``time.time()``; 0 = never).
        The tracker hook turns them into ``arena/tail_after_last_sample_s``."""
        return {"last_arrival": self._last_arrival_at, "last_routed_answer": self._last_routed_answer_at}

    async def drain(self) -> None:
        """Wait for the groups being answered (tests and shutdown)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    # -- groups ---------------------------------------------------------------------------------------------------

    def _open(self, uid: str) -> Group:
        group = self._book.start(uid)
        loop = asyncio.get_running_loop()
        group.deadline = loop.call_later(self.options.group_deadline_s, self._on_deadline, group)
        return group

    def _speculate(self, group: Group) -> None:
        """Live tournament: start judging the newest trace while the group can still be routed to a tournament."""
        if self._breaker.is_open:  # no call is sent while the judge does not answer: the group is judged when
            return  # complete, if the breaker has closed by then
        s = self.options
        # only a mode whose route depends on diversity (the arena) asks whether the rewards so far are equal
        mode = mode_of(s.mode)
        reads_diversity = s.speculative and mode.speculates and mode.routes_by_diversity
        uniform = reads_diversity and is_uniform(group.rewards(), s.diversity_tol)
        step = speculation_step(s.mode, s.speculative, uniform, group.tournament is not None, len(group.members))
        if step is Speculation.STOP:
            self._stop_judging(group)
        if step is not Speculation.JUDGE:
            return
        if group.tournament is None:
            group.tournament = self._new_tournament(group)
        while group.tournament.arrived < len(group.members):
            group.tournament.add()

    def _stop_judging(self, group: Group) -> tuple[int, int]:
        """Cancel the group's tournament, if any; returns the judge calls it made and the failures among them
        (charged to the group)."""
        if group.tournament is not None:
            group.tournament.cancel()
            group.speculative_calls = group.tournament.judge_calls
            group.speculative_failures = group.tournament.failures
            group.tournament = None
        return group.speculative_calls, group.speculative_failures

    # -- the judge pool -------------------------------------------------------------------------------------------

    def _call_bounds(self, group: Group | None = None) -> CallBounds:
        """What bounds each of this referee's judge calls (:func:`~arena_verl.core.tournament.judge_call.bounded_call`,
        the one wrapper): a slot of the judge pool's cap (complete groups' calls first: ``group``'s priority is read at
        call time; a pointwise call is a complete group's), the call budget as the deadline, and the latency estimate
        that learns from both answers and timeouts."""

        def slot():
            priority = PRIORITY_COMPLETE if group is None else call_priority(group.complete)
            return self._limiter.slot(priority)

        return CallBounds(slot=slot, deadline_s=self.call_budget_s, latency=CallHealth(self))

    def _idle_gate(self, group: Group):
        """Load shedding for one group's tournament (see admission.SHED_SPECULATION_AT)."""

        def gate(complete: bool) -> bool:
            shed = shed_counter(self._limiter.pressure, complete)
            if shed is not None:
                self._count(group.step, shed)
            return shed is None

        return gate

    def _new_tournament(self, group: Group) -> Tournament:
        async def compare(first: int, second: int) -> float | None:
            a, b = group.members[first], group.members[second]
            self._probe_pair = (a.problem, a.trace, b.trace, a.reference, a.task, group.uid)
            outcome = await self.judge.compare(a.problem, a.trace, b.trace, a.reference, task=a.task, group=group.uid)
            record = current_call()
            if record is not None and record.members is not None:  # a judge ensemble: what each member said
                group.member_calls.append((first, second, outcome, record.members))
            return outcome

        return Tournament(
            group.size,
            bound_judge(compare, self._call_bounds(group)),  # bounded here, once: the tournament calls it as it is
            seed=stable_seed(group.uid),
            idle_gate=self._idle_gate(group),
            **self.tournament.tournament_kwargs(),
        )

    # -- answering ------------------------------------------------------------------------------------------------

    async def _answer(self, group: Group) -> None:
        s = self.options
        rewards = group.rewards()
        uniform = is_uniform(rewards, s.diversity_tol)  # once per group: the route and the counters read it
        route = route_of(s.mode, uniform)
        try:
            if route in (ROUTE_TOURNAMENT, ROUTE_POINTWISE) and self._breaker.is_open:
                raise JudgeDown()
            if route == ROUTE_TOURNAMENT:
                judged = unless_judge_down(self._judge_down, self._tournament(group, uniform))
                verdicts = await asyncio.wait_for(judged, s.tournament_timeout_s)
            elif route == ROUTE_POINTWISE:
                judged = unless_judge_down(self._judge_down, self._pointwise(group, uniform))
                verdicts = await asyncio.wait_for(judged, s.tournament_timeout_s)
            else:
                calls, failures = self._stop_judging(group)
                verdicts = verifier_verdicts(rewards, judge_calls=calls, judge_failures=failures, uniform=uniform)
        except Exception as exc:  # noqa: BLE001  (a failed judge never fails the step: verifier rewards instead)
            down = isinstance(exc, JudgeDown)  # the breaker is open: no warning per group (the breaker said it once)
            if not down:
                logger.warning("group %s: judging failed (%r); verifier rewards used", group.uid, exc)
            calls, failures = self._stop_judging(group)
            verdicts = verifier_verdicts(
                rewards,
                judge_calls=calls,
                judge_failures=failures,
                fallback=FALLBACK_JUDGE_DOWN if down else FALLBACK_JUDGE_ERROR,
                route=route,
                uniform=uniform,
            )
        self._deliver(group, verdicts, uniform)

    async def _tournament(self, group: Group, uniform: bool) -> list[Verdict]:
        if group.tournament is None:
            group.tournament = self._new_tournament(group)
        while group.tournament.arrived < group.size:
            group.tournament.add()
        deadline = completion_deadline(self.options.completion_grace, self._latency.seconds)
        planned = await self._planned_calls(group.size)
        # The grace never cuts a group below what the thin rule needs while calls in flight could still give it.
        enough = max(1, verdicts_needed(planned, self.options.min_verdict_share))
        result = await group.tournament.finish(deadline_s=deadline, min_verdicts=enough)
        self._count(group.step, "judge_calls_dropped", result.dropped_calls)
        rewards = tournament_rewards(self.options.mode, result.strengths, group.rewards(), self.options.reward_scale)
        group.position = position_figures(result.comparisons)
        if self.tournament.order_effect and result.answered_calls > 0:
            group.order_effect = float(result.order_effect)
        certainty = group_certainty(group.size, result.comparisons, result.strengths, result.order_effect)
        verdicts = tournament_verdicts(
            result, rewards, uniform, group.rewards(), planned, self.options.min_verdict_share, certainty
        )
        if verdicts and verdicts[0].fallback == FALLBACK_THIN:
            self._count(group.step, "thin_verdicts", result.answered_calls)
            self._count(group.step, "thin_planned", planned)
        return verdicts

    async def _planned_calls(self, size: int) -> int:
        """The judge calls a group of ``size`` traces plans under this referee's schedule (computed once per size)."""
        if size not in self._planned:
            self._planned[size] = await count_planned_calls(size, **self.tournament.tournament_kwargs())
        return self._planned[size]

    # -- the judge breaker ----------------------------------------------------------------------------------------

    def _judge_answered(self) -> None:
        if self._breaker.answered():
            self._judge_down.clear()
            self._latency = LatencyEstimate()  # the timed-out calls inflated it: afresh
            self._count(self._last_step, "breaker_closings")
            logger.warning("judge breaker closed: the judge answered a probe; judge calls resume")

    def _judge_silent(self, ran_s: float) -> None:
        silent_for = self._breaker.silent_for_s()
        if self._breaker.failed(time.monotonic() - ran_s):
            self._breaker_opened(max(silent_for, ran_s))
        self._arm_breaker_check()  # nothing to time while open

    def _arm_breaker_check(self) -> None:
        """One timer at a time, for when the spell without an answer reaches its length (None: no spell)."""
        if self._breaker_check is None and (due_in := self._breaker.opens_in_s()) is not None:
            self._breaker_check = asyncio.get_running_loop().call_later(due_in, self._breaker_due)

    def _breaker_due(self) -> None:
        """The spell may have reached its length between two failures: open if groups still wait."""
        self._breaker_check = None
        if self._book.open and self._breaker.overdue():
            self._breaker_opened(self._breaker.silent_for_s())
        elif self._book.open:  # a later spell
            self._arm_breaker_check()

    def _breaker_opened(self, silent_for: float) -> None:
        self._judge_down.set()
        self._count(self._last_step, "breaker_openings")
        logger.warning(
            "judge breaker open: no answer from the judge for %.0f s (transport failures and timeouts only): no judge "
            "call is sent, groups fall back to their verifier rewards (judge_down) until a probe (every %g s) is "
            "answered",
            silent_for,
            self.options.breaker_probe_s,
        )
        for group in list(self._book.open.values()):  # incomplete groups' speculative calls: cut now
            if not group.complete:
                self._stop_judging(group)
        if self._probe_task is None or self._probe_task.done():  # not a group's task: drain() does not wait for it
            self._probe_task = asyncio.ensure_future(self._probe_while_open())

    async def _probe_while_open(self) -> None:
        """One probe every ``breaker_probe_s`` while the breaker is open: the last comparison asked, again."""
        period = self.options.breaker_probe_s
        while self._breaker.is_open:
            await asyncio.sleep(period)
            if not self._breaker.is_open or self._probe_pair is None:
                continue
            self._count(self._last_step, "breaker_probes")
            problem, first, second, reference, task, group = self._probe_pair
            recording_call(CallRecord())  # this task's: the judge's transport failures land here
            probe = self.judge.compare(problem, first, second, reference, task=task, group=group)
            await bounded_call(probe, CallBounds(deadline_s=period, latency=CallHealth(self, learn=False)), "probe")

    async def _pointwise(self, group: Group, uniform: bool) -> list[Verdict]:
        bounds = self._call_bounds()

        async def score(member: Submission) -> float | None:
            # a grade in {0, 0.5, 1} or an expected score in [0, 1]; else a failed call
            return await bounded_call(
                self.judge.score(member.problem, member.trace, member.reference, task=member.task, group=group.uid),
                bounds,
            )

        scores = await asyncio.gather(*(score(m) for m in group.members), return_exceptions=True)
        s = self.options
        return pointwise_verdicts(s.mode, scores, group.rewards(), s.reward_scale, uniform)

    def _on_deadline(self, group: Group) -> None:
        if group.complete or group.answered:
            return
        logger.warning(
            "group %s: %d of %d samples at the deadline; verifier rewards used",
            group.uid,
            len(group.members),
            group.size,
        )
        calls, failures = self._stop_judging(group)
        rewards = group.rewards()
        verdicts = verifier_verdicts(rewards, judge_calls=calls, judge_failures=failures, fallback=FALLBACK_DEADLINE)
        self._deliver(group, verdicts, is_uniform(rewards, self.options.diversity_tol))

    def advantage_groups(self, uids) -> dict[str, tuple[str, float]]:
        """For the arena's advantage estimator: each answered group of ``uids`` this referee remembers, as
        ``(route_class, weight)``: ``route_class`` "routed" (its rewards came from judge verdicts), "mixed" (a diverse
        group with its verifier rewards) or "uniform" (the rest); ``weight`` the factor on its GRPO advantages, the
        group's certainty for a routed tournament when ``certainty_weighting`` is on, else 1. Unknown uids are left
        out (the estimator gives them GRPO's advantages)."""
        weighting = self.options.certainty_weighting
        out = {}
        for uid in uids:
            group = self._book.recent.get(group_key(uid))
            if group is None or group.route_class is None:
                continue
            weight = group.certainty if weighting and group.certainty >= 0 else 1.0
            out[uid] = (group.route_class, float(weight))
        return out

    def _deliver(self, group: Group, verdicts: list[Verdict], uniform: bool) -> None:
        group.answered = True
        routed = any(v.routed for v in verdicts)
        group.route_class = "routed" if routed else "mixed" if not uniform and group.complete else "uniform"
        group.certainty = max((v.certainty for v in verdicts), default=-1.0) if routed else -1.0
        if group.deadline is not None:
            group.deadline.cancel()
        for future, verdict in zip(group.futures, verdicts):
            if not future.done():
                future.set_result(verdict)
        self._record_group(group, verdicts, uniform)
        self._book.close(group)  # remembered for duplicates and late samples, without its traces

    # -- counting -------------------------------------------------------------------------------------------------

    def _record_group(self, group: Group, verdicts: list[Verdict], uniform: bool) -> None:
        counts = group_counts(
            verdicts,
            group.rewards(),
            uniform=uniform,
            complete=group.complete,
            position=group.position,
            order_effect=group.order_effect,
            norm_by_std=self.options.advantage_norm_by_std is not False,  # null: verl's default, true
        )
        if counts["samples_routed"]:
            self._last_routed_answer_at = time.time()
        if group.member_calls:  # a judge ensemble's members, on this group's calls
            counts.update(group_member_counts(group, self.tournament, routed=counts["groups_routed"] > 0))
            group.member_calls = []
        if getattr(self.judge, "simulated", False):  # a judge's own fact (the SIMULATED judges say so)
            counts["judge_calls_simulated"] = counts["judge_calls"]
        # The judge counts low-mass calls and tokens across groups; what is new is charged to the next group answered.
        for counter, field in JUDGE_STAT_COUNTERS.items():
            total = getattr(self.judge.stats, field, 0)
            total = total if is_count(total) else 0
            counts[counter] = max(0, total - self._judge_seen[field])
            self._judge_seen[field] = max(self._judge_seen[field], total)
        self._counters.add_all(group.step, counts)

    def _count(self, step: int | None, key: str, amount: float = 1) -> None:
        self._counters.add(step, key, amount)

    def _spawn(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
