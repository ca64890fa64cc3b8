"""Trace tournaments: pair scheduling, order debiasing, Bradley-Terry fits and rewards.

Pure numpy/scipy: no Ray, verl, vLLM or HTTP imports, so it can be tested and benchmarked on its own.
"""

from .bradley_terry import as_comparison_array, bradley_terry_posterior, fit_bradley_terry, fit_bradley_terry_batch
from .order import mirror, present
from .rewards import strengths_to_rewards
from .runner import (
    FAILURE_POLICIES,
    Tournament,
    TournamentResult,
    contained,
    run_tournament,
    valid_outcome,
)
from .schedulers import (
    STRATEGIES,
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
from .simulated_judge import SimulatedJudge, position_bias_for_first_win_rate

__all__ = [
    "FAILURE_POLICIES",
    "STRATEGIES",
    "InfoGainScheduler",
    "PacedScheduler",
    "LiveScheduler",
    "RandomScheduler",
    "RoundRobinScheduler",
    "Scheduler",
    "SimulatedJudge",
    "Tournament",
    "TournamentResult",
    "as_comparison_array",
    "bradley_terry_posterior",
    "fit_bradley_terry",
    "fit_bradley_terry_batch",
    "live_call_count",
    "make_scheduler",
    "mirror",
    "position_bias_for_first_win_rate",
    "present",
    "round_robin_call_count",
    "contained",
    "run_tournament",
    "valid_outcome",
    "strengths_to_rewards",
]
