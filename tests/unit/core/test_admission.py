"""The referee's judge-pool admission and speculation policies, as pure functions over plain numbers (no event loop)."""

import pytest

from arena_verl.core.limiter import PRIORITY_COMPLETE, PRIORITY_SPECULATIVE, PriorityLimiter
from arena_verl.core.referee.admission import (
    LATENCY_EMA,
    SHED_BUDGET_AT,
    SHED_SPECULATION_AT,
    LatencyEstimate,
    call_priority,
    completion_deadline,
    pool_share,
    shed_counter,
)
from arena_verl.core.referee.speculation import Speculation, speculation_step


def test_the_thresholds_shed_speculation_before_a_complete_groups_budget():
    assert 0 < SHED_SPECULATION_AT < SHED_BUDGET_AT
    assert (SHED_SPECULATION_AT, SHED_BUDGET_AT) == (1.0, 4.0)  # documented: a full pool's worth, then four


@pytest.mark.parametrize(
    ("pressure", "complete", "expected"),
    [
        (0.0, False, None),
        (0.0, True, None),
        (SHED_SPECULATION_AT - 1e-9, False, None),  # just below: speculative work still starts
        (SHED_SPECULATION_AT, False, "shed_speculation"),  # at the threshold it is shed
        (SHED_SPECULATION_AT, True, None),  # a complete group keeps its budget under the same load
        (SHED_BUDGET_AT - 1e-9, True, None),
        (SHED_BUDGET_AT, True, "shed_budget"),
        (SHED_BUDGET_AT * 10, True, "shed_budget"),
        (SHED_BUDGET_AT * 10, False, "shed_speculation"),  # a group still arriving counts as speculation, not budget
    ],
)
def test_shed_counter_names_the_shedding_that_applies_or_none(pressure, complete, expected):
    assert shed_counter(pressure, complete) == expected


def test_the_limiters_pressure_is_the_unit_of_the_thresholds():
    """Four slots and four queued calls: a full pool's worth is waiting, so speculation stops but budgets do not."""
    limiter = PriorityLimiter(4)
    limiter.waiting = 4
    assert limiter.pressure == 1.0
    assert shed_counter(limiter.pressure, complete=False) == "shed_speculation"
    assert shed_counter(limiter.pressure, complete=True) is None
    limiter.waiting = 16
    assert shed_counter(limiter.pressure, complete=True) == "shed_budget"


@pytest.mark.parametrize(
    ("max_concurrency", "num_referees", "share"),
    [(32, 1, 32), (32, 2, 16), (32, 3, 11), (33, 2, 17), (32, 64, 1), (1, 1, 1)],
)
def test_each_shard_takes_its_rounded_up_share_of_the_pool_and_at_least_one(max_concurrency, num_referees, share):
    assert pool_share(max_concurrency, num_referees) == share


def test_complete_groups_calls_go_before_speculative_ones():
    assert call_priority(True) == PRIORITY_COMPLETE
    assert call_priority(False) == PRIORITY_SPECULATIVE
    assert call_priority(True) < call_priority(False)  # the limiter serves the lowest number first


def test_the_latency_estimate_starts_at_the_first_call_then_moves_by_the_ema_weight():
    latency = LatencyEstimate()
    assert latency.seconds is None
    latency.observe(2.0)
    assert latency.seconds == 2.0
    latency.observe(4.0)
    assert latency.seconds == pytest.approx(2.0 + LATENCY_EMA * 2.0)
    for _ in range(500):
        latency.observe(1.0)
    assert latency.seconds == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("grace", "latency", "expected"),
    [(None, 1.5, None), (2.0, None, None), (None, None, None), (2.0, 1.5, 3.0), (0.0, 1.5, 0.0)],
)
def test_a_complete_group_waits_grace_typical_calls_or_for_all_of_them(grace, latency, expected):
    assert completion_deadline(grace, latency) == expected


@pytest.mark.parametrize(
    ("mode", "speculative", "uniform", "judging", "members", "expected"),
    [
        ("arena", False, True, False, 1, Speculation.SKIP),  # speculation off
        ("rlvr", True, True, False, 1, Speculation.SKIP),  # modes without tournaments never speculate
        ("pointwise", True, True, False, 3, Speculation.SKIP),
        ("adaptive_pointwise", True, True, False, 3, Speculation.SKIP),
        ("arena", True, True, False, 1, Speculation.JUDGE),  # the first sample starts the tournament
        ("arena", True, True, True, 5, Speculation.JUDGE),  # still non-diverse: keep judging
        ("arena", True, False, True, 5, Speculation.STOP),  # turned diverse: cancel
        ("arena", True, False, False, 6, Speculation.STOP),  # already cancelled: stopping again is harmless
        ("arena", True, True, False, 6, Speculation.SKIP),  # cancelled before: a diverse group stays diverse
        ("tournament_all", True, False, False, 1, Speculation.JUDGE),  # every group plays, diverse or not
        ("tournament_all", True, False, True, 5, Speculation.JUDGE),
    ],
)
def test_speculation_step(mode, speculative, uniform, judging, members, expected):
    assert speculation_step(mode, speculative, uniform, judging, members) is expected
