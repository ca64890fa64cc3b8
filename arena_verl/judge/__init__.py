"""Judges: the async protocol the referee uses, and its backends.

A judge compares two traces of one problem (``compare``: 1.0 = first shown won, 0.0 = second won, 0.5 = tie,
``None`` = no usable verdict) or scores one trace (``score``: 0, 0.5 or 1, ``None`` = no usable score). A judge
never raises for a bad verdict: failures are ``None`` and are counted by the caller.
"""

from arena_verl.judge.base import Judge, JudgeStats, Trace
from arena_verl.judge.factory import make_judge
from arena_verl.judge.prompts import build_pairwise_messages, build_pointwise_messages, sanitize_trace
from arena_verl.judge.simulated import SimulatedTraceJudge
from arena_verl.judge.verdict import parse_score, parse_verdict

__all__ = [
    "Judge",
    "JudgeStats",
    "Trace",
    "SimulatedTraceJudge",
    "build_pairwise_messages",
    "build_pointwise_messages",
    "make_judge",
    "parse_score",
    "parse_verdict",
    "sanitize_trace",
]
