"""What counts as a count: the one rule the judges' token meters, the referee and the audit's pairs file apply to
figures they did not compute themselves (an engine's report, a line read back from disk)."""

from __future__ import annotations

from typing import Any

__all__ = ["is_count"]


def is_count(value: Any) -> bool:
    """Whether ``value`` is a non-negative integer (``True`` is not a count: bool is an int in Python)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
