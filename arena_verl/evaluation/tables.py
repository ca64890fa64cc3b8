"""Plain-text tables and figures for the tools' console output: one formatter, so every command aligns and rounds
the same way. Missing values print as ``-``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["MISSING", "finite_or_none", "percent", "number", "table_cell", "text_table"]

MISSING = "-"


def finite_or_none(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when it is not a finite number."""
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float's range
        return None
    return value if math.isfinite(value) else None


def percent(value: Any, digits: int = 1, sign: str = "%") -> str:
    """A fraction as a percent (``0.125`` -> ``12.5%``); ``-`` for ``None``, NaN or infinity."""
    value = finite_or_none(value)
    return MISSING if value is None else f"{100 * value:.{digits}f}{sign}"


def number(value: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals; integers as integers; ``-`` for ``None``, NaN or infinity."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    value = finite_or_none(value)
    return MISSING if value is None else f"{value:.{digits}f}"


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "|": "\\|"}


def table_cell(value: Any) -> str:
    """``value`` as one line of a table cell: a newline, tab or other unprintable character (a data source name is
    anyone's text) is written escaped (``\\n``, ``\\u2028``), and ``|`` as ``\\|`` (the table pastes into markdown),
    so that each row stays one row."""
    text = str(value)
    if text.isprintable() and "|" not in text:
        return text
    return "".join(_ESCAPES.get(c) or (c if c.isprintable() else c.encode("unicode_escape").decode()) for c in text)


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, align: str = "left", rule: bool = True) -> str:
    """Columns separated by two spaces, each as wide as its widest cell; ``align`` ``left`` or ``right``; a dashed
    rule under the header. Left-aligned, the last column is free text: not padded, its rule as wide as its header
    (a note may be long). Every cell is one line (:func:`table_cell`)."""
    cells = [[table_cell(c) for c in row] for row in rows]
    columns = len(header)
    widths = [max([len(header[i]), *(len(row[i]) for row in cells if i < len(row))]) for i in range(columns)]
    pad = str.rjust if align == "right" else str.ljust
    lines = [list(header)]
    if rule:
        free_text = align != "right"
        lines.append(["-" * (len(header[i]) if free_text and i == columns - 1 else w) for i, w in enumerate(widths)])
    lines += cells
    out = []
    for row in lines:
        parts = [pad(cell, widths[i]) if i < columns - 1 or align == "right" else cell for i, cell in enumerate(row)]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)
