"""Trace tournaments: pair scheduling, order debiasing, Bradley-Terry fits, their certainty and rewards.

Pure numpy/scipy (layer L0): no Ray, verl, vLLM or HTTP imports, so it can be tested and benchmarked on its own.
The simulated judge lives with the judges (:mod:`arena_verl.judge.simulated.pairs`).
"""

from arena_verl.core.names import FAILURE_POLICIES
from arena_verl.core.rewards import strengths_to_rewards
from arena_verl.core.strategies import strategy_names
from arena_verl.core.tournament.bradley_terry import (
    as_comparison_array,
    bradley_terry_posterior,
    fit_bradley_terry,
    fit_bradley_terry_batch,
)
from arena_verl.core.tournament.certainty import group_certainty
from arena_verl.core.tournament.judge_call import (
    BoundedJudge,
    CallBounds,
    bound_judge,
    bounded_call,
    contained,
    valid_outcome,
)
from arena_verl.core.tournament.order import mirror, present
from arena_verl.core.tournament.runner import (
    Tournament,
    TournamentResult,
    count_planned_calls,
    planned_calls,
    run_tournament,
)
from arena_verl.core.tournament.schedulers import (
    InfoGainScheduler,
    LiveScheduler,
    PacedScheduler,
    RandomScheduler,
    RoundRobinScheduler,
    Scheduler,
    live_call_count,
    make_scheduler,
    round_robin_call_count,
)

__all__ = [
    "BoundedJudge",
    "CallBounds",
    "bound_judge",
    "bounded_call",
    "FAILURE_POLICIES",
    "STRATEGIES",
    "InfoGainScheduler",
    "PacedScheduler",
    "LiveScheduler",
    "RandomScheduler",
    "RoundRobinScheduler",
    "Scheduler",
    "Tournament",
    "TournamentResult",
    "as_comparison_array",
    "bradley_terry_posterior",
    "fit_bradley_terry",
    "fit_bradley_terry_batch",
    "group_certainty",
    "live_call_count",
    "make_scheduler",
    "mirror",
    "present",
    "round_robin_call_count",
    "contained",
    "count_planned_calls",
    "planned_calls",
    "run_tournament",
    "valid_outcome",
    "strengths_to_rewards",
]


def __getattr__(name: str):
    if name == "STRATEGIES":  # the registered strategies' names, now (a user's included)
        return strategy_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
