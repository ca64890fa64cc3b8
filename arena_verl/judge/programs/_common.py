"""What the program judges share: their knobs' checks, the call's mode, and a deterministic hash as their noise."""

from __future__ import annotations

import asyncio
import hashlib
import math
from numbers import Real

__all__ = ["call_mode", "check_fraction", "check_latency", "check_seed", "uniforms", "wait"]


def check_fraction(name: str, value, low: float = 0.0, high: float = 1.0) -> float:
    """``value`` as a float in [low, high]; else a ``ValueError`` naming the knob."""
    if isinstance(value, bool) or not isinstance(value, Real) or not low <= float(value) <= high:
        raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def check_latency(value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not (math.isfinite(value) and value >= 0):
        raise ValueError(f"latency_s must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def check_seed(value) -> int:
    """A whole number (``3`` or ``3.0``: a spec's knobs are floats) as an int; else a ``ValueError``."""
    whole = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) and value == int(value)
    if not whole:
        raise ValueError(f"seed must be a whole number, got {value!r}")
    return int(value)


def call_mode(first, second, trace) -> str:
    """``pair`` (``first`` and ``second`` given) or ``point`` (``trace`` given); else a ``ValueError``."""
    if trace is None and first is not None and second is not None:
        return "pair"
    if trace is not None and first is None and second is None:
        return "point"
    raise ValueError("give first and second (a pairwise call) or trace (a pointwise call), not a mix")


def uniforms(count: int, seed: int, *parts: str) -> list[float]:
    """``count`` numbers in [0, 1), a deterministic function of ``seed`` and ``parts`` (blake2b, not Python's
    salted ``hash``: the same in every process and every run). Parts are length-prefixed, so no two lists of parts
    hash alike."""
    digest = hashlib.blake2b(digest_size=8 * count, person=b"arena-program")
    digest.update(str(seed).encode())
    for part in parts:
        data = str(part).encode("utf-8", errors="surrogatepass")
        digest.update(len(data).to_bytes(8, "little") + data)
    raw = digest.digest()
    return [int.from_bytes(raw[8 * i : 8 * i + 8], "little") / 2.0**64 for i in range(count)]


async def wait(latency_s: float) -> None:
    if latency_s > 0:
        await asyncio.sleep(latency_s)
