"""Facade kept for users' code: ``from arena_verl.tournament import fit_bradley_terry, run_tournament, mirror,
STRATEGIES, SimulatedJudge``. The tournament lives in :mod:`arena_verl.core.tournament`; the simulated judge with the
judges."""

from arena_verl.core.tournament import *  # noqa: F403
from arena_verl.core.tournament import __all__ as _core_all
from arena_verl.judge.simulated.law import position_bias_for_first_win_rate
from arena_verl.judge.simulated.pairs import SimulatedJudge

__all__ = [*_core_all, "SimulatedJudge", "position_bias_for_first_win_rate"]
