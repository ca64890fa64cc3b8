"""The judge protocol: what the referee needs from a judge (a trace, two async calls, call statistics), declared in
the pure core so that the core never imports the judge package. The judges (:mod:`arena_verl.judge`) implement it;
:mod:`arena_verl.core.judge_protocol` re-exports these names."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "Trace",
    "Judge",
    "JudgeStats",
    "Reply",
    "CallRecord",
    "report_failed_attempt",
    "report_transport_failure",
    "report_cost",
    "report_members",
    "current_call",
    "counts_tokens",
    "recording_call",
]


@dataclass(frozen=True)
class Trace:
    """One rollout as the judge sees it. ``quality_hint`` is read by the SIMULATED judge only."""

    text: str
    quality_hint: float | None = None


@dataclass
class JudgeStats:
    calls: int = 0  # compare/score calls
    failures: int = 0  # calls that ended without a usable verdict
    parse_failures: int = 0  # generations whose verdict could not be parsed (a call may re-ask)
    errors: int = 0  # generations that raised or timed out
    truncated: int = 0  # generations cut by max_new_tokens (no verdict, whatever their text; counted in parse_failures)
    low_mass: int = 0  # probability verdicts: calls whose labels got less than low_mass_floor (still answered)
    # What the engine computed, as it reports it (0 from a judge that reads no tokens or a server without usage):
    prompt_tokens: int = 0  # prompt tokens of every generation and probability read, re-asks and retries included
    cached_tokens: int = 0  # ... of them served from the engine's prefix cache (computed = prompt - cached)
    trace_tokens: int = 0  # each trace's tokens as shown, once per group (the bound's L; needs the judge's tokenizer)
    # Several replicas or engines: requests sent past their group's own one because it was out of the ring (failed).
    rerouted: int = 0


@dataclass
class CallRecord:
    """What one judge call went through so far, written by the judge while the call runs and read by the tournament
    when it cuts the call (the completion grace, a cancelled group): a call cut after a failed attempt (it was
    waiting to retry) is a failure, one cut while the judge was still working on it without a failure is a dropped
    straggler. A dead judge is then never mistaken for a slow one.

    A caller that measures each call (``arena-verl audit-judge``) reads what the call cost from the same record: the
    judge adds this call's share of its counters (:func:`report_cost`), so that calls in flight at once never mix
    their counts."""

    failed_attempts: int = 0  # attempts that raised, timed out, or gave no readable verdict
    # ... of them, attempts that never reached an answering judge: a connection refused or reset, a 5xx, an attempt
    # that ran out its timeout, a dead engine (the judge breaker, core/referee/breaker.py, opens on these only)
    transport_failures: int = 0
    count_tokens: bool = False  # the caller asks for tokens_in / tokens_out (a tokenization a request: not in training)
    low_mass: int = 0  # probability reads of the call counted in JudgeStats.low_mass
    tokens_in: int | None = None  # prompt tokens of its generations and reads, by the judge's count (None: not counted)
    tokens_out: int | None = None  # tokens it generated (0: it only read probabilities)
    prompt_tokens: int | None = None  # its share of JudgeStats.prompt_tokens (the engine's report; None: no report)
    cached_tokens: int | None = None  # its share of JudgeStats.cached_tokens
    # A judge ensemble's call: each asked member's outcome by name (None: that member failed); None: not an ensemble.
    members: dict[str, float | None] | None = None

    def add(self, **counts: int) -> None:
        """Add ``counts`` to the counters they name (a counter still None starts from 0)."""
        for name, count in counts.items():
            setattr(self, name, (getattr(self, name) or 0) + count)


# The record of the call in progress: set by the caller (the tournament, the audit) in the task that runs one call
# (the task's own context, inherited by the tasks it starts), written by the judge. It flows up from judge to caller
# and carries nothing to the judge but whether to count tokens: the judge's inputs (the group among them) are its
# arguments.
_CALL_RECORD: contextvars.ContextVar[CallRecord | None] = contextvars.ContextVar("arena_judge_call", default=None)


def recording_call(record: CallRecord) -> None:
    """Make ``record`` the record of the judge call the current task runs (call it first thing in that task)."""
    _CALL_RECORD.set(record)


def report_failed_attempt() -> None:
    """A judge says that an attempt of the call in progress failed (a connection refused or reset, an HTTP error, a
    timeout, an unreadable answer), whether it will retry or not. Outside a tournament's call: nothing to record."""
    record = _CALL_RECORD.get()
    if record is not None:
        record.failed_attempts += 1


def report_transport_failure() -> None:
    """A judge says that an attempt of the call in progress did not reach an answering judge (a connection refused
    or reset, a 5xx, a timeout, a dead engine), as opposed to an answer it could not use. Call it beside
    :func:`report_failed_attempt`. Outside a tournament's call: nothing to record."""
    record = _CALL_RECORD.get()
    if record is not None:
        record.transport_failures += 1


def report_cost(**counts: int) -> None:
    """A judge adds what the call in progress cost to its record (:class:`CallRecord`'s counters: ``low_mass=1``,
    ``prompt_tokens=...``, ``tokens_in=...``), as it adds them to its ``stats``. Outside a recorded call: nothing."""
    record = _CALL_RECORD.get()
    if record is not None:
        record.add(**counts)


def report_members(outcomes: dict[str, float | None]) -> None:
    """A judge ensemble reports what each member it asked said in the call in progress (the referee's per-member
    figures, the audit's per-member tables). Outside a recorded call: nothing."""
    record = _CALL_RECORD.get()
    if record is not None:
        record.members = dict(outcomes)


def current_call() -> CallRecord | None:
    """The record of the judge call the current task runs (None outside a recorded call)."""
    return _CALL_RECORD.get()


def counts_tokens() -> bool:
    """Whether the caller of the call in progress asks for its ``tokens_in`` / ``tokens_out`` (a judge that counts
    them with its tokenizer does so only then)."""
    record = _CALL_RECORD.get()
    return record is not None and record.count_tokens


class Reply(str):
    """A judge's generated text; ``truncated`` when the token limit cut it. A cut reply has not ended, so a verdict
    token in it may be the start of an echoed instruction ("[[A]] if Attempt A is better, ..."): never a verdict."""

    truncated: bool = False

    def __new__(cls, text: str, truncated: bool = False):
        reply = super().__new__(cls, text)
        reply.truncated = bool(truncated)
        return reply


@runtime_checkable
class Judge(Protocol):
    name: str
    stats: JudgeStats

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
        """P(``first``, shown first, is the better trace), a number in [0, 1]: 1.0 / 0.0 / 0.5 for a generated
        verdict (first / second / tie), the label probabilities' share for a probability verdict; None if unusable.
        ``task`` (math, code, generic) picks the prompt; calls with the same ``group`` may share a prompt prefix."""
        ...

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        """Pointwise quality in [0, 1] (a grade in {0, 0.5, 1}, or an expected grade), None if unusable."""
        ...
