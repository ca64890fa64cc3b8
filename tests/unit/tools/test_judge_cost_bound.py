"""The judge-cost benchmark's bound (scripts/bench/judge_cost.py ``bounds``): each trace that is ever shown first is
computed once as a prefix, the second-shown trace and the template's tail in every call, the head once; with equal
lengths and every trace shown first it is the issue's ``(N + C) x L`` plus the template."""

import asyncio
import importlib.util

import pytest

from arena_verl.core.tournament.runner import run_tournament
from helpers import paths

_spec = importlib.util.spec_from_file_location("judge_cost", paths.REPO / "scripts" / "bench" / "judge_cost.py")
judge_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(judge_cost)


def live_pairs(n):
    """The pairs live's runner judges for a group of ``n`` (3N - 6), shown first in turn: the lower index in the
    first call, the higher in the next, so that every trace is shown first in some call."""
    judged = []

    async def record(first, second):
        judged.append(tuple(sorted((first, second))))
        return 0.5

    asyncio.run(run_tournament(n, record, "live"))
    return [(low, high) if i % 2 == 0 else (high, low) for i, (low, high) in enumerate(judged)]


def test_equal_lengths_meet_the_issues_formula_at_n8():
    shown = live_pairs(8)
    assert len(shown) == 18 and {first for first, _ in shown} == set(range(8))
    bound, formula = judge_cost.bounds(shown, [100] * 8, head=40, per_call=12)
    assert bound == formula == 40 + 18 * 12 + (8 + 18) * 100
    assert (bound - 40 - 18 * 12) / (8 * 100) == pytest.approx(3.25)  # against 4.5 with no reuse


def test_a_trace_never_shown_first_is_never_a_cached_prefix():
    # Trace 0 always first: only its prefix is reusable; every other trace is computed once per call it is second in.
    shown = [(0, 1), (0, 2), (0, 3)]
    bound, formula = judge_cost.bounds(shown, [10, 20, 30, 40], head=5, per_call=2)
    assert bound == 5 + 10 + 3 * 2 + (20 + 30 + 40)
    assert formula == pytest.approx(5 + 3 * 2 + (4 + 3) * 25.0) and formula > bound  # the formula counts 4 prefixes
