"""The judge protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Trace", "Judge", "JudgeStats"]


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
        """1.0 if ``first`` (shown first) is the better trace, 0.0 if ``second`` is, 0.5 for a tie, None if unusable.
        ``task`` (math, code, generic) picks the prompt; calls with the same ``group`` may share a prompt prefix."""
        ...

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        """Pointwise quality in {0, 0.5, 1}, None if unusable."""
        ...
