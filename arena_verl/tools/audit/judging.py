"""Judging the audit's pairs: each pair in both orders (``first`` shown first, then ``second``), at most
``concurrency`` calls in flight, every call timed and its share of the judge's counters measured.

A call's outcome goes through :func:`~arena_verl.core.tournament.valid_outcome` (a number in [0, 1]; None, NaN, a
bool or anything out of range is a call without a verdict), and whatever the judge raises, a timeout included, is a
call without a verdict too (:func:`~arena_verl.core.tournament.contained`), as in training.

**Per-call measures.** ``seconds``: wall-clock time of the call as the caller sees it. The judge's counters
(:class:`~arena_verl.core.judge_protocol.JudgeStats`: ``low_mass``, and ``tokens_in`` / ``tokens_out`` where a judge
keeps them) are shared by every call in flight, so each increment is credited to the call that made it: the stats
object's class is swapped, for the run, for a subclass whose ``__setattr__`` adds each change of a counter to the
current call's meter (a context variable, which asyncio copies into the tasks a call starts). Token counts, in this
order:

1. the judge's own counters ``stats.tokens_in`` / ``stats.tokens_out`` (what the engine read and generated), where
   its stats have them;
2. else, for a model judge with a tokenizer (``count_tokens``): each generation's prompt (``_generate``: the messages
   through the judge's chat template when the judge holds its tokenizer, else their text) and its reply, and each
   probability read's prompt (``_next_token_probs``: the same, with the assistant turn's continuation; it generates
   no token), counted with that tokenizer; a call that did neither has no count;
3. else none (the SIMULATED judge reads no tokens): the figures are null.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from arena_verl.core.counts import is_count
from arena_verl.core.errors import InputError
from arena_verl.core.judge_protocol import Trace
from arena_verl.core.tournament import contained, valid_outcome
from arena_verl.judge.factory import make_judge
from arena_verl.settings import JudgeSettings
from arena_verl.tools.audit.selection import PairToJudge
from arena_verl.tools.common.judge_runs import ray_for_judge, run_workers

__all__ = ["STATS_TOKEN_FIELDS", "CallMeasure", "Metering", "judge_pairs", "judge_pairs_with"]

STATS_TOKEN_FIELDS = ("tokens_in", "tokens_out")  # JudgeStats counters a backend may keep (prompt, generated)
ENGINE_TOKEN_FIELDS = ("prompt_tokens", "cached_tokens")  # JudgeStats counters of a judge that reports_usage
_CURRENT: ContextVar[_Meter | None] = ContextVar("arena_verl_audit_call", default=None)


@dataclass
class _Meter:
    counters: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # changes of the judge's counters
    tokens_in: int | None = None  # measured with the judge's tokenizer (source 2)
    tokens_out: int | None = None


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


class Metering:
    """Credits a judge's counters and token use to the call that caused them (see the module docstring), for the
    duration of a ``with`` block; ``token_source`` says where token counts come from (None: nowhere)."""

    def __init__(self, judge):
        self.judge = judge
        self.token_source: str | None = None
        self._stats_class = None
        self._wrapped: list[str] = []  # the judge's methods metered by an instance attribute (source 2)

    def __enter__(self) -> Metering:
        stats = getattr(self.judge, "stats", None)
        if stats is not None and not getattr(type(stats), "_audit_attributed", False):
            with contextlib.suppress(TypeError):  # a stats object whose class cannot be swapped: no per-call counts
                original = type(stats)
                stats.__class__ = _attributed(original)
                self._stats_class = original
        if getattr(self.judge, "name", None) == "simulated":
            return self  # the SIMULATED judge reads no tokens
        if stats is not None and all(hasattr(stats, name) for name in STATS_TOKEN_FIELDS):
            self.token_source = "the judge's counters (stats.tokens_in, stats.tokens_out)"
        elif callable(getattr(self.judge, "count_tokens", None)):
            for name, metered in (("_generate", _metered_generate), ("_next_token_probs", _metered_read)):
                if callable(getattr(self.judge, name, None)):  # an instance attribute: the method is untouched
                    setattr(self.judge, name, metered(self.judge, getattr(self.judge, name)))
                    self._wrapped.append(name)
            if self._wrapped:
                self.token_source = "the judge's tokenizer on each generation's prompt and reply and each read's prompt"
        return self

    def __exit__(self, *exc) -> None:
        if self._stats_class is not None:
            self.judge.stats.__class__ = self._stats_class
        for name in self._wrapped:
            delattr(self.judge, name)

    async def call(self, run: Callable[[], Any], timeout_s: float, what: str) -> CallMeasure:
        """Await one compare call (``run()``), bounded by ``timeout_s``, and measure it."""
        meter = _Meter()
        token = _CURRENT.set(meter)
        started = time.perf_counter()
        try:
            outcome = await contained(asyncio.wait_for(run(), timeout_s), what)
        finally:
            seconds = time.perf_counter() - started
            _CURRENT.reset(token)
        if self.token_source is None:
            tokens = (None, None)
        elif self._wrapped:
            tokens = (meter.tokens_in, meter.tokens_out)
        else:
            tokens = tuple(meter.counters.get(name, 0) for name in STATS_TOKEN_FIELDS)
        engine = (None, None)
        if getattr(self.judge, "reports_usage", False):  # the engine's counts of what it read and had cached
            engine = tuple(meter.counters.get(name, 0) for name in ENGINE_TOKEN_FIELDS)
        return CallMeasure(valid_outcome(outcome), seconds, meter.counters.get("low_mass", 0), *tokens, *engine)


_ATTRIBUTED: dict[type, type] = {}


def _attributed(stats_class: type) -> type:
    """A subclass of ``stats_class`` (same layout, so ``__class__`` can be swapped) that credits every change of an
    integer counter to the current call's meter."""
    if stats_class not in _ATTRIBUTED:

        def __setattr__(self, name: str, value: Any) -> None:
            meter = _CURRENT.get()
            before = getattr(self, name, None)
            if meter is not None and is_count(value) and is_count(before):
                meter.counters[name] += value - before
            super(subclass, self).__setattr__(name, value)

        subclass = type(
            f"Attributed{stats_class.__name__}",
            (stats_class,),
            {"__slots__": (), "__setattr__": __setattr__, "_audit_attributed": True},
        )
        _ATTRIBUTED[stats_class] = subclass
    return _ATTRIBUTED[stats_class]


def _metered_generate(judge, generate):
    """``generate`` counting its prompt's tokens and its reply's."""

    async def metered(messages: list[dict], *args, **kwargs):
        meter = _CURRENT.get()
        if meter is not None:
            meter.tokens_in = (meter.tokens_in or 0) + judge.count_tokens(_prompt_text(judge, messages))
        reply = await generate(messages, *args, **kwargs)
        if meter is not None and isinstance(reply, str):
            meter.tokens_out = (meter.tokens_out or 0) + judge.count_tokens(str(reply))
        return reply

    return metered


def _metered_read(judge, read):
    """``read`` (a probability read after the assistant turn ``continuation``) counting its prompt's tokens."""

    async def metered(messages: list[dict], continuation: str, *args, **kwargs):
        meter = _CURRENT.get()
        if meter is not None:
            prompt = _prompt_text(judge, messages) + str(continuation)
            meter.tokens_in = (meter.tokens_in or 0) + judge.count_tokens(prompt)
            meter.tokens_out = meter.tokens_out or 0  # a read generates no token
        return await read(messages, continuation, *args, **kwargs)

    return metered


def _prompt_text(judge, messages: list[dict]) -> str:
    """The prompt as the judge's model reads it: through its chat template when the judge holds its tokenizer."""
    tokenizer = getattr(judge, "tokenizer", None)
    if tokenizer is not None:
        from arena_verl.judge.backends.transformers_backend import render_chat

        return render_chat(tokenizer, messages)
    return "\n\n".join(str(m.get("content", "")) for m in messages)


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
    with (
        Metering(judge) as metering,
        tqdm(total=total, initial=total - len(todo), unit="pair", desc="audit", disable=None) as progress,
    ):
        asyncio.run(_judge_all(iter(todo), judge, metering, call_timeout_s, concurrency, write, progress))
        return metering.token_source


async def _judge_all(pending: Iterator[PairToJudge], judge, metering, timeout_s, concurrency, write, progress):
    async def handle(pair: PairToJudge) -> None:
        group, tag = pair.group, f"{pair.group.step}/{pair.group.key}"
        measures = []
        for shown_first, shown_second in ((pair.first, pair.second), (pair.second, pair.first)):
            a, b = Trace(group.responses[shown_first]), Trace(group.responses[shown_second])
            call = functools.partial(judge.compare, group.problem, a, b, group.reference, task=group.task, group=tag)
            measures.append(await metering.call(call, timeout_s, f"judge call ({pair.id}, {shown_first} first)"))
        write(pair, tuple(measures), judge)
        progress.update(1)

    await run_workers(pending, handle, concurrency, judge)
