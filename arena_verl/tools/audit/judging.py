"""Judging the audit's pairs: each pair in both orders (``first`` shown first, then ``second``), at most
``concurrency`` calls in flight, every call timed and what it cost measured.

Each call goes through :func:`~arena_verl.core.tournament.bounded_call`, the one helper that bounds and contains a judge
call as training does: the call budget is its deadline, whatever the judge raises (a timeout included) is a call
without a verdict, and so is an outcome that is no verdict (:func:`~arena_verl.core.tournament.valid_outcome`: a
number in [0, 1]; None, NaN, a bool or anything out of range is not).

**Per-call measures.** ``seconds``: wall-clock time of the call as the caller sees it. The rest comes from the call's
own record (:class:`~arena_verl.core.judge_protocol.CallRecord`, made the call's record with
:func:`~arena_verl.core.judge_protocol.recording_call`, as the tournament does): the judge adds to it this call's share
of its counters as it adds them to its ``stats`` (:func:`~arena_verl.core.judge_protocol.report_cost`), so calls in
flight at once never mix their counts. ``low_mass``: the call's low-mass probability reads. ``prompt_tokens`` /
``cached_tokens``: what the judge's engine reported reading and serving from its prefix cache, for a judge that
``reports_usage`` (null otherwise). Token counts (``tokens_in`` / ``tokens_out``), asked of the judge for each call
(``CallRecord.count_tokens``):

1. a model judge with a tokenizer (``count_tokens``) counts each generation's prompt (the messages through the judge's
   chat template when the judge holds its tokenizer, else their text) and its reply, and each probability read's
   prompt (the same, with the assistant turn's continuation; it generates no token); a call that did neither has no
   count;
2. any other judge may report its own counts of the call (``report_cost(tokens_in=..., tokens_out=...)``);
3. else none (the SIMULATED judge reads no tokens): the figures are null.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from arena_verl.core.errors import InputError
from arena_verl.core.judge_protocol import CallRecord, Trace, recording_call
from arena_verl.core.tournament import CallBounds, bounded_call
from arena_verl.judge.factory import make_judge
from arena_verl.settings_judge import JudgeSettings
from arena_verl.tools.audit.selection import PairToJudge
from arena_verl.tools.common.judge_runs import ray_for_judge, run_workers

__all__ = ["TOKENIZER_SOURCE", "REPORTED_SOURCE", "CallMeasure", "measure_call", "judge_pairs", "judge_pairs_with"]

TOKENIZER_SOURCE = "the judge's tokenizer on each generation's prompt and reply and each read's prompt"
REPORTED_SOURCE = "the judge's own counts of each call"


@dataclass(frozen=True)
class CallMeasure:
    """One call: its outcome (None: no verdict) and what it cost."""

    outcome: float | None
    seconds: float
    low_mass: int = 0
    tokens_in: int | None = None
    tokens_out: int | None = None
    prompt_tokens: int | None = None  # the judge's engine's own counts (stats.prompt_tokens, stats.cached_tokens)
    cached_tokens: int | None = None
    members: dict[str, float | None] | None = None  # a judge ensemble: what each member it asked said


async def measure_call(judge, run: Callable[[], Any], timeout_s: float, what: str) -> CallMeasure:
    """Await one compare call (``run()``) as a :func:`bounded_call` with the deadline ``timeout_s``, and measure it
    (see the module docstring). Run it in the task that awaits it: the call's record is this task's."""
    record = CallRecord(count_tokens=True)
    recording_call(record)
    started = time.perf_counter()
    outcome = await bounded_call(run(), CallBounds(deadline_s=timeout_s), what)
    seconds = time.perf_counter() - started
    engine = (None, None)
    if getattr(judge, "reports_usage", False):  # the engine's counts of what it read and had cached
        engine = (record.prompt_tokens or 0, record.cached_tokens or 0)
    return CallMeasure(
        outcome, seconds, record.low_mass, record.tokens_in, record.tokens_out, *engine, members=record.members
    )


def token_source(judge, measures: list[CallMeasure]) -> str | None:
    """Where the calls' token counts came from (None: no call has one)."""
    if not any(m.tokens_in is not None or m.tokens_out is not None for m in measures):
        return None
    return TOKENIZER_SOURCE if callable(getattr(judge, "count_tokens", None)) else REPORTED_SOURCE


# --------------------------------------------------------------------------------------------------------- runs


def judge_pairs(
    todo: list[PairToJudge],
    judge_settings: JudgeSettings,
    concurrency: int,
    write: Callable[[PairToJudge, tuple[CallMeasure, CallMeasure], Any], None],
    total: int,
) -> str | None:
    """Judge ``todo`` with the judge ``judge_settings`` names, calling ``write(pair, (first order, second order),
    judge)`` as each pair finishes; the judge (and its engines, and a Ray this started) never outlive this. Returns
    the token source (None: tokens not measured)."""
    with ray_for_judge(judge_settings):
        try:
            judge = make_judge(judge_settings)  # the backend's SDK is imported here, only for that backend
        except (OSError, ValueError) as exc:  # a folder that holds no model, a tokenizer that cannot be read
            raise InputError(f"--judge: the judge cannot be loaded ({exc})") from None
        return judge_pairs_with(judge, todo, judge_settings.call_budget_s, concurrency, write, total)


def judge_pairs_with(
    judge,
    todo: list[PairToJudge],
    call_timeout_s: float,
    concurrency: int,
    write: Callable[[PairToJudge, tuple[CallMeasure, CallMeasure], Any], None],
    total: int | None = None,
) -> str | None:
    """:func:`judge_pairs` with a judge already built (any object with ``async compare``, e.g. a test's script); the
    judge is closed at the end when it has ``close``."""
    from tqdm import tqdm

    total = len(todo) if total is None else total
    measures: list[CallMeasure] = []
    with tqdm(total=total, initial=total - len(todo), unit="pair", desc="audit", disable=None) as progress:
        asyncio.run(_judge_all(iter(todo), judge, call_timeout_s, concurrency, write, progress, measures))
    return token_source(judge, measures)


async def _judge_all(pending: Iterator[PairToJudge], judge, timeout_s, concurrency, write, progress, measures):
    async def handle(pair: PairToJudge) -> None:
        group, tag = pair.group, f"{pair.group.step}/{pair.group.key}"
        calls = []
        for shown_first, shown_second in ((pair.first, pair.second), (pair.second, pair.first)):
            a, b = Trace(group.responses[shown_first]), Trace(group.responses[shown_second])
            call = functools.partial(judge.compare, group.problem, a, b, group.reference, task=group.task, group=tag)
            calls.append(await measure_call(judge, call, timeout_s, f"judge call ({pair.id}, {shown_first} first)"))
        measures.extend(calls)
        write(pair, tuple(calls), judge)
        progress.update(1)

    await run_workers(pending, handle, concurrency, judge)
