"""The judge protocol. Declared in the pure core (:mod:`arena_verl.core.judge_protocol`, which the referee imports
without the judge package); re-exported here, where the judges and their callers import it."""

from __future__ import annotations

from arena_verl.core.judge_protocol import Judge, JudgeStats, Reply, Trace

__all__ = ["Trace", "Judge", "JudgeStats", "Reply"]
