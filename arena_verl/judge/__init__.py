"""Judges: the async protocol the referee uses, and its backends.

A judge compares two traces of one problem (``compare``: 1.0 = first shown won, 0.0 = second won, 0.5 = tie,
``None`` = no usable verdict) or scores one trace (``score``: 0, 0.5 or 1, ``None`` = no usable score). A judge
never raises for a bad verdict: failures are ``None`` and are counted by the caller.

The names below load on first use (PEP 562), so that importing one light module of this package (the templates,
the verdict parser) does not import the backends' dependencies.
"""

from arena_verl.core.lazy import lazy_exports

_EXPORTS = {
    "Judge": "arena_verl.core.judge_protocol",
    "JudgeStats": "arena_verl.core.judge_protocol",
    "Trace": "arena_verl.core.judge_protocol",
    "SimulatedJudge": "arena_verl.judge.simulated.pairs",
    "SimulatedTraceJudge": "arena_verl.judge.simulated.trace_judge",
    "build_pairwise_messages": "arena_verl.judge.prompting.messages",
    "build_pointwise_messages": "arena_verl.judge.prompting.messages",
    "sanitize_trace": "arena_verl.judge.prompting.hygiene",
    "make_judge": "arena_verl.judge.factory",
    "parse_score": "arena_verl.judge.verdicts.parsing",
    "parse_verdict": "arena_verl.judge.verdicts.parsing",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
