"""Step-time MODEL: a discrete-event model of one synchronous training step, per reward method.

Nothing here is measured. It predicts, from numbers a user sets for their cluster, what one step of verl's V1 sync
trainer costs under RLVR, RLVR + DAPO dynamic sampling, and the arena with a judge schedule: step time, generations
per step, judge calls per step and how busy the judge fleet is. The paper's reported figures are printed beside the
model's, labelled as the paper's claims.

    python scripts/bench/step_time.py                        # defaults: the paper's setting (assumed rates below)
    python scripts/bench/step_time.py --quick --json out.json
    python scripts/bench/step_time.py --judge-engines 4 --alpha 0.3 --adaptive live:0.9:1

Methods
    rlvr                    B prompts, N samples each; every sample's reward is its verifier reward.
    rlvr_dapo               verl V1 sync DAPO (``algorithm.filter_groups``, ``ReplayBuffer.sample``): a finished
                            non-diverse group is evicted and adds ``--dapo-refill-factor`` refill prompts (verl: 2);
                            refills start while at most ``--dapo-max-inflight-batches`` x B prompts are in flight;
                            once B diverse groups are finished, no more are started, the ones in flight are drained
                            and the surplus discarded. Generations count every dispatched prompt's N samples.
    arena_<schedule>        B prompts like rlvr; non-diverse groups are judged on the judge fleet (below).

Judge schedules (:class:`Schedule`, one line each; a routed group is a non-diverse one)
    wait_round_robin        all N(N-1)/2 pairs, started when the group's last trace arrives.
    live                    Reasoning Arena-Live: arrival i (0-based) starts min(i, 3) calls on arrival, 3N-6 in all.
    info_gain               this project's scheduler today: one call per arrival, the rest of live's budget in
                            rounds of N // 2 after the last trace.
    adaptive                any schedule given as (calls per routed group, share of the calls that start before
                            the last trace, rounds after the last trace): ``--adaptive CALLS:EARLY_SHARE:ROUNDS``,
                            CALLS an integer or ``live`` (3N-6). A placeholder for the schedule being designed.

The model (what is assumed; every number is a command-line option, defaults in ``--help``)
    - Prompts are independent. A group is non-diverse with probability ``alpha`` (regenerated DAPO prompts too). A
      diverse group has k ~ uniform{1..N-1} correct samples in a random order. Response lengths are log-normal
      (median, sigma), capped at the max length, independent of correctness.
    - Rollout: ``--rollout-engines`` engines, each decoding at most ``--rollout-max-seqs`` sequences at once and
      sharing ``--rollout-tokens-per-s`` equally among them (processor sharing), a single sequence never faster
      than ``--rollout-stream-tokens-per-s``. A new sequence goes to the least loaded engine with a free slot, else
      waits in one FIFO queue. All B x N sequences of a step are submitted at t=0 (verl sends each prompt's N
      sessions at once). Prefill and the verifier's seconds are not modelled (small against decoding).
    - Judge: its own GPUs (it never slows rollout). ``--judge-engines`` engines; at most ``--judge-concurrency``
      calls in flight over the fleet, the rest wait FIFO. A call costs ``prompt/prefill_rate + output/decode_rate``
      seconds of a whole engine; an engine shares itself equally among its calls, and one call takes at least
      ``prompt/prefill_rate + output/stream_rate`` seconds. A call can start once its two traces exist.
    - Speculation: while a group's verifier outcomes so far agree, its arrival calls are started (live, info_gain,
      adaptive). At the first disagreeing arrival the group is diverse: its queued calls are dropped, the ones
      already running finish (conservative) and count as wasted. Rounds after the last trace: the first starts at
      the last trace, each later one once every earlier call of the group has returned.
    - A sample's reward is ready at its generation's end (verifier) or, in a routed group, when the group's last
      judge call returns. The step's reward stage ends when the last sample has its reward; the reward tail is that
      minus the end of rollout. Step time = that + ``--actor-s-per-1k-tokens`` x the trained batch's tokens
      (B x N x (prompt + response tokens): log-probs, update and weight sync together).
    - Every method of one repeat sees the same prompts (same lengths and outcomes): paired comparisons.
      Figures are means over ``--repeats`` steps.

Default rates are ASSUMPTIONS for the paper's setting (an 8B policy, TP2, 16 engines on 32 GPUs; one 8-GPU
DeepSeek-Math-V2 judge engine; 512 prompts x 8), not measurements: set them from your own cluster (e.g.
``scripts/bench/judge.py`` for judge calls per second).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import math
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from arena_verl.core.tournament.schedulers import live_call_count, round_robin_call_count

# The paper's reported figures (Zhou et al., 2026), versus RLVR + DAPO-style filtering: CLAIMS, not measured here.
PAPER_STEP_TIME_VS_DAPO = (-0.41, -0.27)
PAPER_GENERATIONS_VS_DAPO = 0.5
PAPER_CLAIM_METHODS = ("arena_wait_round_robin", "arena_live")

RECORD_KEYS = (
    "method",
    "step_time_s",
    "step_time_s_std",
    "rollout_s",
    "reward_tail_s",
    "actor_update_s",
    "generations",
    "judge_calls",
    "judge_calls_wasted",
    "judge_busy_share",
    "step_time_vs_dapo",
    "generations_vs_dapo",
    "paper_step_time_vs_dapo",
    "paper_generations_vs_dapo",
    "source",
    "parameters",
)


# ---------------------------------------------------------------------------------------------------------------------
# Judge schedules


@dataclass(frozen=True)
class Schedule:
    """When the judge calls of one routed group can start.

    ``calls``, ``early_share`` and ``rounds_after_last`` are numbers or functions of the group size N.
    ``round(early_share * calls)`` calls (at most the pairs among the first N-1 traces) start as traces arrive,
    before the last one, spread as evenly as possible over arrivals ``1..N-2``: arrival i has i opponents, so it gets
    at most i calls, and what does not divide evenly goes to later arrivals (for live's budget and share this gives
    live's own 1, 2, 3, 3, ...). The rest are split evenly into ``rounds_after_last`` rounds: the first starts at
    the last trace, each later one once every earlier call of the group has returned. A new schedule is one line:
    ``Schedule("mine", live_call_count, 0.8, 1)``.
    """

    name: str
    calls: int | Callable[[int], int]
    early_share: float | Callable[[int], float]
    rounds_after_last: int | Callable[[int], int]

    def plan(self, n: int) -> tuple[list[int], list[int]]:
        """(calls started at each arrival 0..N-2, calls per round after the last trace)."""
        calls = int(self.calls(n) if callable(self.calls) else self.calls)
        share = float(self.early_share(n) if callable(self.early_share) else self.early_share)
        if calls < 0 or not 0.0 <= share <= 1.0:
            raise ValueError(
                f"schedule {self.name!r}: calls must be >= 0 and early_share in [0, 1], got {calls}, {share}"
            )
        # No more early calls than there are pairs among the traces before the last (small N).
        early = min(round(share * calls), round_robin_call_count(n - 1))
        rest = calls - early
        rounds = int(self.rounds_after_last(n) if callable(self.rounds_after_last) else self.rounds_after_last)
        if rest and rounds < 1:
            raise ValueError(f"schedule {self.name!r}: {rest} calls left for after the last trace but 0 rounds")
        return [0, *_spread_with_caps(early, list(range(1, n - 1)))], _split_evenly(rest, rounds)


def _spread_with_caps(total: int, caps: list[int]) -> list[int]:
    """``total`` over slots as evenly as caps allow (water-filling: every slot ``min(cap, level)``); what is left
    below the next level goes to the latest slots with room (later arrivals have more opponents)."""
    level = 0
    while sum(min(cap, level + 1) for cap in caps) <= total and level < max(caps, default=0):
        level += 1
    counts = [min(cap, level) for cap in caps]
    left = total - sum(counts)
    for i in reversed(range(len(caps))):
        if left and counts[i] < caps[i]:
            counts[i] += 1
            left -= 1
    return counts


def _split_evenly(total: int, parts: int) -> list[int]:
    if total == 0:
        return []
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts) if base + (i < extra) > 0]


def _info_gain_rounds(n: int) -> int:
    # InfoGainScheduler: the last arrival's call, then ceil(rest / (N // 2)) rounds of disjoint pairs; modelled as
    # that many even rounds after the last trace (same number of judge latencies, calls spread a little differently).
    return 1 + math.ceil((live_call_count(n) - (n - 1)) / max(1, n // 2))


WAIT_ROUND_ROBIN = Schedule("wait_round_robin", round_robin_call_count, 0.0, 1)
# Live: arrival i plays min(i, 3) earlier traces; the last arrival's min(N-1, 3) calls are its one round after.
LIVE = Schedule("live", live_call_count, lambda n: 1 - min(n - 1, 3) / live_call_count(n), 1)
INFO_GAIN = Schedule("info_gain", live_call_count, lambda n: (n - 2) / max(1, live_call_count(n)), _info_gain_rounds)


def parse_adaptive(text: str) -> Schedule:
    """``CALLS:EARLY_SHARE:ROUNDS`` (CALLS an integer or ``live``) -> the ``adaptive`` schedule."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"--adaptive wants CALLS:EARLY_SHARE:ROUNDS (e.g. live:0.83:1), got {text!r}")
    calls_text, share_text, rounds_text = parts
    try:
        calls = live_call_count if calls_text == "live" else int(calls_text)
        share, rounds = float(share_text), int(rounds_text)
    except ValueError:
        raise ValueError(
            f"--adaptive {text!r}: CALLS is an integer or 'live', EARLY_SHARE a number, ROUNDS an integer"
        ) from None
    if not 0.0 <= share <= 1.0 or rounds < 0 or (not callable(calls) and calls < 0):
        raise ValueError(f"--adaptive {text!r}: need CALLS >= 0, 0 <= EARLY_SHARE <= 1, ROUNDS >= 0")
    return Schedule("paced", calls, share, rounds)


# ---------------------------------------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class Params:
    prompts: int = 512
    group_size: int = 8
    alpha: float = 0.5
    rollout_engines: int = 16
    rollout_tokens_per_s: float = 3000.0
    rollout_max_seqs: int = 128
    rollout_stream_tokens_per_s: float = 90.0
    response_median: float = 3000.0
    response_sigma: float = 0.8
    max_response: int = 16384
    prompt_tokens: int = 400
    judge_engines: int = 1
    judge_tokens_per_s: float = 6000.0
    judge_prefill_tokens_per_s: float = 60000.0
    judge_stream_tokens_per_s: float = 40.0
    judge_concurrency: float = 256
    judge_prompt_tokens: int = 9000
    judge_output_tokens: int = 300
    actor_s_per_1k_tokens: float = 0.012
    dapo_refill_factor: int = 2
    dapo_max_inflight_batches: int = 1
    repeats: int = 10
    seed: int = 0

    def validate(self) -> None:
        positive = (
            "prompts", "group_size", "rollout_engines", "rollout_tokens_per_s", "rollout_max_seqs",
            "rollout_stream_tokens_per_s", "response_median", "max_response", "judge_engines", "judge_tokens_per_s",
            "judge_prefill_tokens_per_s", "judge_stream_tokens_per_s", "judge_concurrency", "dapo_refill_factor",
            "dapo_max_inflight_batches", "repeats",
        )  # fmt: skip
        for name in positive:
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {value}")
        for name in ("response_sigma", "prompt_tokens", "judge_prompt_tokens", "judge_output_tokens"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.actor_s_per_1k_tokens < math.inf:
            raise ValueError(f"--actor-s-per-1k-tokens must be finite and >= 0, got {self.actor_s_per_1k_tokens}")
        if not 0.0 <= self.alpha < 1.0:
            raise ValueError(
                f"--alpha must be in [0, 1) (DAPO never fills a batch of non-diverse groups), got {self.alpha}"
            )
        if self.group_size < 2:
            raise ValueError(f"--group-size must be >= 2 (a group of one is never diverse), got {self.group_size}")
        if math.isinf(self.rollout_tokens_per_s) and math.isinf(self.rollout_stream_tokens_per_s):
            raise ValueError("rollout throughput and stream speed cannot both be infinite")

    def judge_call_work_s(self) -> float:
        """Seconds of a whole judge engine one call costs (0 for an infinitely fast judge)."""
        return (
            self.judge_prompt_tokens / self.judge_prefill_tokens_per_s
            + self.judge_output_tokens / self.judge_tokens_per_s
        )

    def judge_call_min_s(self) -> float:
        """The fastest one call can be answered: its prefill at full rate, then one decoding stream."""
        return (
            self.judge_prompt_tokens / self.judge_prefill_tokens_per_s
            + self.judge_output_tokens / self.judge_stream_tokens_per_s
        )


# ---------------------------------------------------------------------------------------------------------------------
# Processor-sharing servers (rollout engines, judge engines)


class SharedServers:
    """Servers that share their capacity equally among their running jobs (processor sharing), each job capped.

    ``capacity`` is the work one server does per second when busy; a single job gets at most ``job_rate_cap`` work
    per second; a server runs at most ``slots_per_server`` jobs and all servers together at most ``max_running``;
    the rest wait in one FIFO queue and start on the least loaded server with a free slot. Because every job of a
    server runs at the same rate, each server keeps a virtual clock (work done by any of its jobs since t=0) and a
    heap of the virtual times at which its jobs finish.
    """

    def __init__(self, servers: int, capacity: float, job_rate_cap: float, slots_per_server: float, max_running: float):
        self.capacity, self.job_rate_cap = capacity, job_rate_cap
        self.slots_per_server, self.max_running = slots_per_server, max_running
        self.virtual = [0.0] * servers
        self.heaps: list[list[tuple[float, int, object]]] = [[] for _ in range(servers)]
        self.queue: deque[tuple[object, float, float]] = deque()
        self.running = 0
        self.now = 0.0
        self.work_done = 0.0
        self.done_now: list[object] = []  # finished jobs not yet collected
        self.dropped: list[object] = []  # queued jobs whose cancel time passed before they started
        self.started: Counter = Counter()  # job -> how many of its submissions started
        self._order = itertools.count()

    def _rate(self, jobs: int) -> float:
        return min(self.capacity / jobs, self.job_rate_cap)

    def submit(self, job: object, size: float, cancel_at: float = math.inf) -> None:
        self.queue.append((job, size, cancel_at))
        self._fill()

    def next_completion(self) -> float:
        best = math.inf
        for virtual, heap in zip(self.virtual, self.heaps):
            if heap:
                best = min(best, self.now + (heap[0][0] - virtual) / self._rate(len(heap)))
        return self.now if self.done_now else best

    def advance(self, until: float) -> None:
        """Move the clock to ``until``, which must not be past :meth:`next_completion`."""
        elapsed = until - self.now
        if elapsed < 0:
            raise RuntimeError(f"clock would go back from {self.now} to {until}")
        for s, heap in enumerate(self.heaps):
            if heap:
                rate = self._rate(len(heap))
                self.virtual[s] += rate * elapsed
                self.work_done += rate * len(heap) * elapsed
        self.now = until

    def collect(self) -> list[object]:
        """Jobs finished by now (starting queued jobs in the freed slots, some of which may finish at once)."""
        finished, self.done_now = self.done_now, []
        for s, heap in enumerate(self.heaps):
            while heap and heap[0][0] <= self.virtual[s] + 1e-9 * max(1.0, abs(heap[0][0])):
                finished.append(heapq.heappop(heap)[2])
                self.running -= 1
        self._fill()
        if self.done_now:
            finished.extend(self.collect())
        return finished

    def _fill(self) -> None:
        while self.queue and self.running < self.max_running:
            loads = [len(heap) for heap in self.heaps]
            server = min(range(len(loads)), key=loads.__getitem__)
            if loads[server] >= self.slots_per_server:
                return
            job, size, cancel_at = self.queue.popleft()
            if cancel_at <= self.now:
                self.dropped.append(job)
                continue
            self.started[job] += 1
            if size == 0 or math.isinf(self._rate(loads[server] + 1)):
                self.done_now.append(job)
                continue
            heapq.heappush(self.heaps[server], (self.virtual[server] + size, next(self._order), job))
            self.running += 1


def run_until_idle(servers: SharedServers, on_finish: Callable[[object, float], None], events=None) -> None:
    """Drive ``servers`` until no job is left, calling ``on_finish(job, time)``; ``events`` is a heap of
    ``(time, order, callback)`` external events (callbacks may submit jobs)."""
    events = [] if events is None else events
    while True:
        next_job = servers.next_completion()
        next_event = events[0][0] if events else math.inf
        if math.isinf(next_job) and math.isinf(next_event):
            return
        if next_event <= next_job:
            servers.advance(next_event)
            heapq.heappop(events)[2]()
            for job in servers.collect():
                on_finish(job, servers.now)
        else:
            servers.advance(next_job)
            for job in servers.collect():
                on_finish(job, servers.now)


# ---------------------------------------------------------------------------------------------------------------------
# Prompts and rollout


class PromptStream:
    """The step's prompts in the order a trainer draws them; prompt j is the same for every method of a repeat."""

    def __init__(self, params: Params, rng: np.random.Generator):
        self.params, self.rng = params, rng
        self.lengths = np.empty((0, params.group_size))
        self.correct = np.empty((0, params.group_size), dtype=bool)
        self.uniform = np.empty(0, dtype=bool)

    def ensure(self, count: int) -> None:
        p = self.params
        while len(self.uniform) < count:
            n, block = p.group_size, p.prompts
            raw = self.rng.lognormal(math.log(p.response_median), p.response_sigma, size=(block, n))
            lengths = np.clip(np.round(raw), 1, p.max_response)
            uniform = self.rng.random(block) < p.alpha
            all_correct = self.rng.random(block) < 0.5
            num_correct = np.where(uniform, np.where(all_correct, n, 0), self.rng.integers(1, n, size=block))
            correct = self.rng.permuted(np.arange(n)[None, :] < num_correct[:, None], axis=1)
            self.lengths = np.vstack([self.lengths, lengths])
            self.correct = np.vstack([self.correct, correct])
            self.uniform = np.concatenate([self.uniform, uniform])


@dataclass
class Rollout:
    """What a step's rollout produced: per dispatched prompt, its samples' finish times."""

    finish: dict[int, np.ndarray] = field(default_factory=dict)
    dispatched_s: dict[int, float] = field(default_factory=dict)
    kept: list[int] = field(default_factory=list)  # the prompts the update trains on
    end_s: float = 0.0

    @property
    def generations(self) -> int:
        return sum(len(times) for times in self.finish.values())


def simulate_rollout(params: Params, stream: PromptStream, dapo: bool) -> Rollout:
    """One step's generation; with ``dapo``, verl V1 sync dynamic sampling (see the module docstring)."""
    p, n = params, params.group_size
    engines = SharedServers(
        p.rollout_engines, p.rollout_tokens_per_s, p.rollout_stream_tokens_per_s, p.rollout_max_seqs, math.inf
    )
    rollout = Rollout()
    left: dict[int, int] = {}
    state = {"dispatched": 0, "inflight": 0, "credit": 0, "draining": False}
    diverse_done: list[int] = []

    def dispatch(count: int) -> None:
        start = state["dispatched"]
        stream.ensure(start + count)
        for j in range(start, start + count):
            rollout.finish[j] = np.full(n, math.nan)
            rollout.dispatched_s[j] = engines.now
            left[j] = n
            for k in range(n):
                engines.submit((j, k), float(stream.lengths[j, k]))
        state["dispatched"] += count
        state["inflight"] += count

    def on_finish(job: object, now: float) -> None:
        j, k = job
        rollout.finish[j][k] = now
        left[j] -= 1
        if left[j]:
            return
        state["inflight"] -= 1
        if not stream.uniform[j]:
            diverse_done.append(j)
        if not dapo or state["draining"]:
            return
        if len(diverse_done) >= p.prompts:
            state["draining"], state["credit"] = True, 0  # stop refilling; what is in flight finishes
            return
        if stream.uniform[j]:
            state["credit"] += p.dapo_refill_factor
        slots = p.dapo_max_inflight_batches * p.prompts - state["inflight"]
        count = min(state["credit"], max(0, slots))
        if count:
            state["credit"] -= count
            dispatch(count)
        if state["dispatched"] > 1000 * p.prompts:
            raise ValueError(f"DAPO needed over 1000 batches to fill one at alpha={p.alpha}: use a smaller --alpha")

    dispatch(p.prompts)
    run_until_idle(engines, on_finish)
    rollout.end_s = engines.now
    rollout.kept = diverse_done[: p.prompts] if dapo else list(range(p.prompts))
    return rollout


# ---------------------------------------------------------------------------------------------------------------------
# Judge


@dataclass
class Judging:
    answer_s: dict[int, float]  # routed group -> when it has its rewards (last call returned, group complete)
    calls: int  # calls started, wasted ones included
    wasted: int  # calls started on groups that turned out diverse
    work_s: float  # judge-engine seconds spent


def simulate_judge(params: Params, stream: PromptStream, rollout: Rollout, schedule: Schedule) -> Judging:
    """The judge fleet serving one step's groups under ``schedule`` (see the module docstring)."""
    p, n = params, params.group_size
    work = p.judge_call_work_s()
    cap = math.inf if work == 0 else work / p.judge_call_min_s()
    judge = SharedServers(p.judge_engines, 1.0, cap, math.inf, p.judge_concurrency)
    arrival_calls, rounds = schedule.plan(n)

    events: list[tuple[float, int, Callable[[], None]]] = []
    order = itertools.count()
    outstanding: dict[int, int] = {}
    rounds_started: dict[int, int] = {}
    last_return: dict[int, float] = {}

    def submit(group: int, count: int, cancel_at: float) -> None:
        outstanding[group] += count
        for _ in range(count):
            judge.submit(group, work, cancel_at)

    def start_round(group: int) -> None:
        index = rounds_started[group]
        if index < len(rounds):
            rounds_started[group] = index + 1
            submit(group, rounds[index], math.inf)

    routed = set()
    for j in rollout.kept:
        arrival_order = np.argsort(rollout.finish[j], kind="stable")
        times = rollout.finish[j][arrival_order]
        outcomes = stream.correct[j][arrival_order]
        outstanding[j], rounds_started[j] = 0, 0
        if stream.uniform[j]:
            routed.add(j)
            cancel_at, speculated = math.inf, n - 1
            heapq.heappush(events, (times[-1], next(order), lambda j=j: start_round(j)))
        else:  # speculation runs until the first arrival that disagrees with the first one
            speculated = int(np.argmax(outcomes != outcomes[0]))
            cancel_at = times[speculated]
        for i in range(speculated):
            if arrival_calls[i]:
                submit_now = lambda j=j, c=arrival_calls[i], x=cancel_at: submit(j, c, x)  # noqa: E731
                heapq.heappush(events, (times[i], next(order), submit_now))

    def on_finish(group: object, now: float) -> None:
        outstanding[group] -= 1
        last_return[group] = now
        if group in routed and outstanding[group] == 0 and rounds_started[group] >= 1:
            start_round(group)

    run_until_idle(judge, on_finish, events)
    calls = sum(judge.started.values())
    return Judging(
        answer_s={j: max(float(rollout.finish[j].max()), last_return.get(j, 0.0)) for j in routed},
        calls=calls,
        wasted=calls - sum(judge.started[j] for j in routed),
        work_s=judge.work_done,
    )


# ---------------------------------------------------------------------------------------------------------------------
# One step, many steps


@dataclass(frozen=True)
class StepResult:
    rollout_s: float  # last sample generated
    reward_end_s: float  # last sample has its reward
    actor_update_s: float
    generations: int
    judge_calls: int = 0
    judge_calls_wasted: int = 0
    judge_work_s: float = 0.0

    @property
    def step_time_s(self) -> float:
        return self.reward_end_s + self.actor_update_s

    @property
    def reward_tail_s(self) -> float:
        return self.reward_end_s - self.rollout_s


def method_names(schedules: list[Schedule]) -> list[str]:
    return ["rlvr", "rlvr_dapo", *(f"arena_{s.name}" for s in schedules)]


def simulate_step(params: Params, schedules: list[Schedule], repeat: int) -> dict[str, StepResult]:
    """One step of every method on the same prompts (seeded by ``params.seed`` and ``repeat``)."""
    stream = PromptStream(params, np.random.default_rng([params.seed, repeat]))
    plain = simulate_rollout(params, stream, dapo=False)
    dapo = simulate_rollout(params, stream, dapo=True)

    def update_s(rollout: Rollout) -> float:
        tokens = sum(float(stream.lengths[j].sum()) + params.group_size * params.prompt_tokens for j in rollout.kept)
        return params.actor_s_per_1k_tokens * tokens / 1000.0

    results = {
        "rlvr": StepResult(plain.end_s, plain.end_s, update_s(plain), plain.generations),
        "rlvr_dapo": StepResult(dapo.end_s, dapo.end_s, update_s(dapo), dapo.generations),
    }
    for schedule in schedules:
        judging = simulate_judge(params, stream, plain, schedule)
        results[f"arena_{schedule.name}"] = StepResult(
            plain.end_s,
            max([plain.end_s, *judging.answer_s.values()]),
            update_s(plain),
            plain.generations,
            judging.calls,
            judging.wasted,
            judging.work_s,
        )
    return results


def run_model(params: Params, schedules: list[Schedule]) -> list[dict]:
    """Mean figures over ``params.repeats`` steps: one record per method (keys: :data:`RECORD_KEYS`)."""
    params.validate()
    for schedule in schedules:
        schedule.plan(params.group_size)  # a bad schedule fails before any simulation
    steps = [simulate_step(params, schedules, r) for r in range(params.repeats)]
    mean = {
        name: {
            key: float(np.mean([getattr(step[name], key) for step in steps]))
            for key in (
                "step_time_s",
                "rollout_s",
                "reward_tail_s",
                "actor_update_s",
                "generations",
                "judge_calls",
                "judge_calls_wasted",
                "judge_work_s",
            )
        }  # fmt: skip
        for name in method_names(schedules)
    }
    dapo = mean["rlvr_dapo"]
    records = []
    for name, m in mean.items():
        claims = name in PAPER_CLAIM_METHODS
        records.append(
            {
                "method": name,
                "step_time_s": m["step_time_s"],
                "step_time_s_std": float(np.std([step[name].step_time_s for step in steps])),
                "rollout_s": m["rollout_s"],
                "reward_tail_s": m["reward_tail_s"],
                "actor_update_s": m["actor_update_s"],
                "generations": m["generations"],
                "judge_calls": m["judge_calls"],
                "judge_calls_wasted": m["judge_calls_wasted"],
                "judge_busy_share": m["judge_work_s"] / (params.judge_engines * m["step_time_s"]),
                "step_time_vs_dapo": m["step_time_s"] / dapo["step_time_s"] - 1.0,
                "generations_vs_dapo": m["generations"] / dapo["generations"],
                "paper_step_time_vs_dapo": list(PAPER_STEP_TIME_VS_DAPO) if claims else None,
                "paper_generations_vs_dapo": PAPER_GENERATIONS_VS_DAPO if claims else None,
                "source": "model (scripts/bench/step_time.py), not a measurement",
                "parameters": asdict(params),
            }
        )
    return records


# ---------------------------------------------------------------------------------------------------------------------
# Command line


def format_table(records: list[dict], params: Params, schedules: list[Schedule], seconds: float) -> str:
    n = params.group_size
    plans = "; ".join(
        f"{s.name}: {sum(s.plan(n)[0]) + sum(s.plan(n)[1])} calls, {sum(s.plan(n)[0])} before the last trace, "
        f"rounds after it {s.plan(n)[1]}"
        for s in schedules
    )
    low, high = (f"{100 * v:+.0f}%" for v in PAPER_STEP_TIME_VS_DAPO)
    lines = [
        f"Step-time MODEL (a discrete-event model, NOT a measurement), {params.repeats} steps, seed {params.seed}, "
        f"{seconds:.1f} s. B={params.prompts}, N={n}, alpha={params.alpha:g}; rollout {params.rollout_engines} x "
        f"{params.rollout_tokens_per_s:g} tok/s (<= {params.rollout_max_seqs} seqs, <= "
        f"{params.rollout_stream_tokens_per_s:g} tok/s each); responses log-normal median {params.response_median:g}, "
        f"sigma {params.response_sigma:g}, max {params.max_response}; judge {params.judge_engines} engine(s), "
        f"{params.judge_call_work_s():.3f} engine-s per call (>= {params.judge_call_min_s():.2f} s), "
        f"<= {params.judge_concurrency:g} calls in flight; update {params.actor_s_per_1k_tokens:g} s per 1k tokens; "
        f"DAPO refill x{params.dapo_refill_factor}, <= {params.dapo_max_inflight_batches} batch(es) in flight.",
        f"Schedules at N={n}: {plans}.",
        "",
        "| method | step time s (mean ± sd) | vs DAPO | rollout s | reward tail s | update s | generations | vs DAPO "
        "| judge calls (wasted) | judge busy | paper's claim vs DAPO (not measured) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in records:
        judge = f"{r['judge_calls']:.0f} ({r['judge_calls_wasted']:.0f})" if r["judge_calls"] else "0"
        claim = (
            f"step time {high} to {low}, ~{PAPER_GENERATIONS_VS_DAPO:g}x generations"
            if r["paper_step_time_vs_dapo"]
            else ""
        )
        lines.append(
            f"| {r['method']} | {r['step_time_s']:.0f} ± {r['step_time_s_std']:.0f} "
            f"| {100 * r['step_time_vs_dapo']:+.0f}% "
            f"| {r['rollout_s']:.0f} | {r['reward_tail_s']:.0f} | {r['actor_update_s']:.0f} | {r['generations']:.0f} "
            f"| {r['generations_vs_dapo']:.2f}x | {judge} | {100 * r['judge_busy_share']:.0f}% | {claim} |"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    d = Params()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--prompts", type=int, default=d.prompts, help=f"B, prompts per step (default {d.prompts})")
    add("--group-size", type=int, default=d.group_size, help=f"N, samples per prompt (default {d.group_size})")
    add("--alpha", type=float, default=d.alpha, help=f"share of non-diverse groups, in [0, 1) (default {d.alpha})")
    add("--rollout-engines", type=int, default=d.rollout_engines, help=f"default {d.rollout_engines}")
    add(
        "--rollout-tokens-per-s",
        type=float,
        default=d.rollout_tokens_per_s,
        help=f"decode tokens/s of one rollout engine when full (default {d.rollout_tokens_per_s:g})",
    )
    add(
        "--rollout-fleet-tokens-per-s",
        type=float,
        default=None,
        help="decode tokens/s of the whole rollout fleet; sets the per-engine rate to this / --rollout-engines",
    )
    add(
        "--rollout-max-seqs",
        type=int,
        default=d.rollout_max_seqs,
        help=f"sequences one engine decodes at once (vLLM max_num_seqs / KV room; default {d.rollout_max_seqs})",
    )
    add(
        "--rollout-stream-tokens-per-s",
        type=float,
        default=d.rollout_stream_tokens_per_s,
        help=f"fastest decode of a single sequence (default {d.rollout_stream_tokens_per_s:g})",
    )
    add(
        "--response-median",
        type=float,
        default=d.response_median,
        help=f"median response tokens (default {d.response_median:g})",
    )
    add(
        "--response-sigma",
        type=float,
        default=d.response_sigma,
        help=f"sigma of log response length (default {d.response_sigma:g})",
    )
    add("--max-response", type=int, default=d.max_response, help=f"length cap (default {d.max_response})")
    add(
        "--prompt-tokens",
        type=int,
        default=d.prompt_tokens,
        help=f"policy prompt tokens, counted in the update (default {d.prompt_tokens})",
    )
    add("--judge-engines", type=int, default=d.judge_engines, help=f"default {d.judge_engines}")
    add(
        "--judge-tokens-per-s",
        type=float,
        default=d.judge_tokens_per_s,
        help=f"output (decode) tokens/s of one judge engine when full, inf allowed (default {d.judge_tokens_per_s:g})",
    )
    add(
        "--judge-prefill-tokens-per-s",
        type=float,
        default=d.judge_prefill_tokens_per_s,
        help=f"prompt (prefill) tokens/s of one judge engine (default {d.judge_prefill_tokens_per_s:g})",
    )
    add(
        "--judge-stream-tokens-per-s",
        type=float,
        default=d.judge_stream_tokens_per_s,
        help=f"fastest decode of a single judge call (default {d.judge_stream_tokens_per_s:g})",
    )
    add(
        "--judge-concurrency",
        type=float,
        default=d.judge_concurrency,
        help=f"calls in flight over the judge fleet, inf allowed (default {d.judge_concurrency:g})",
    )
    add(
        "--judge-prompt-tokens",
        type=int,
        default=d.judge_prompt_tokens,
        help=f"prompt tokens per pairwise call, lower it for prefix-cache hits (default {d.judge_prompt_tokens})",
    )
    add(
        "--judge-output-tokens",
        type=int,
        default=d.judge_output_tokens,
        help=f"output tokens per call (default {d.judge_output_tokens})",
    )
    add(
        "--actor-s-per-1k-tokens",
        type=float,
        default=d.actor_s_per_1k_tokens,
        help=f"seconds per 1k trained tokens: log-probs, update, weight sync (default {d.actor_s_per_1k_tokens:g})",
    )
    add(
        "--dapo-refill-factor",
        type=int,
        default=d.dapo_refill_factor,
        help=f"prompts refilled per evicted group (verl V1 sync: 2; default {d.dapo_refill_factor})",
    )
    add(
        "--dapo-max-inflight-batches",
        type=int,
        default=d.dapo_max_inflight_batches,
        help=f"filter_groups.max_inflight_gen_batches (default {d.dapo_max_inflight_batches})",
    )
    add(
        "--adaptive",
        default="live:0.83:1",
        help="the adaptive schedule, CALLS:EARLY_SHARE:ROUNDS, CALLS an integer or 'live' (default live:0.83:1)",
    )
    add("--repeats", type=int, default=d.repeats, help=f"steps to average (default {d.repeats})")
    add("--seed", type=int, default=d.seed)
    add(
        "--quick",
        action="store_true",
        help="divide B, the rollout engines, the judge's token rates and concurrency by 8; 2 repeats (< 30 s)",
    )
    add("--json", metavar="PATH", help="write the records (one per method) as a JSON list")
    return parser


def params_from_args(args: argparse.Namespace) -> Params:
    values = {name: getattr(args, name) for name in Params.__dataclass_fields__}
    if args.rollout_fleet_tokens_per_s is not None:
        values["rollout_tokens_per_s"] = args.rollout_fleet_tokens_per_s / args.rollout_engines
    if args.quick:
        values.update(
            prompts=max(1, args.prompts // 8),
            rollout_engines=max(1, args.rollout_engines // 8),
            judge_tokens_per_s=args.judge_tokens_per_s / 8,
            judge_prefill_tokens_per_s=args.judge_prefill_tokens_per_s / 8,
            judge_concurrency=max(1.0, args.judge_concurrency / 8),
            repeats=2,
        )
    return Params(**values)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        params = params_from_args(args)
        schedules = [WAIT_ROUND_ROBIN, LIVE, INFO_GAIN, parse_adaptive(args.adaptive)]
        started = time.perf_counter()
        records = run_model(params, schedules)
    except ValueError as error:
        parser.error(str(error))
    print(format_table(records, params, schedules, time.perf_counter() - started))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(records, handle, indent=1)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
