"""Ground truths as math-verify input: the forms verl's data pipeline hands over (parquet rows become numpy arrays
and scalars) made one text."""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

__all__ = ["ground_truth_text"]


def ground_truth_text(ground_truth: Any) -> str | None:
    """The reference as math-verify input, or None when there is none.

    Strings, bytes, ints, finite floats (``42.0`` is ``42``), fractions and decimals, numpy scalars and arrays, and
    lists or tuples: a one-element list or array is its element, a longer one a set answer (``["2", "3"]`` is
    ``2, 3``). Booleans, dicts, empty strings or lists and anything else: None.
    """
    value = ground_truth
    if not isinstance(value, (str, bytes, bytearray)) and callable(getattr(value, "tolist", None)):
        try:
            value = value.tolist()  # numpy scalars and arrays (and tensors) as Python objects
        except Exception:  # noqa: BLE001
            return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (list, tuple)):
        items = [ground_truth_text(item) for item in value]
        if not items or any(item is None for item in items):
            return None
        return items[0] if len(items) == 1 else ", ".join(items)
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Rational):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            return None
        return str(int(number)) if number.is_integer() else repr(number)
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Complex):  # Decimal
        text = str(value)
        return text if re.fullmatch(r"-?\d+(\.\d+)?(E[+-]?\d+)?", text, re.IGNORECASE) else None
    return None
