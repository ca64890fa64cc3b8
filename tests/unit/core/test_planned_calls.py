"""One rule for a group's judge calls: the figure the recipes' dry run prints (``judge calls per routed group``,
tools.recipe.judge_calls_per_group) is what the runner makes, for every strategy, both orders or one, with and
without a budget, at N = 4, 8, 16; a schedule the settings refuse is one the runner refuses too."""

import asyncio
import itertools

import numpy as np
import pytest

from arena_verl.core.strategies import STRATEGY_REGISTRY, strategy_names
from arena_verl.core.tournament import live_call_count, planned_calls, round_robin_call_count, run_tournament
from arena_verl.settings import arena_settings
from arena_verl.tools.recipe import judge_calls_per_group

STRATEGIES = strategy_names()
FIXED_COUNT_STRATEGIES = tuple(name for name in STRATEGIES if STRATEGY_REGISTRY[name].fixed_count)

REFUSED = "refused"
CASES = list(itertools.product(STRATEGIES, (False, True), (None, 14), (4, 8, 16)))


def dry_run_figure(strategy, two_sided, budget, n):
    try:
        settings = arena_settings(mode="arena", strategy=strategy, budget=budget, two_sided=two_sided, group_size=n)
    except ValueError:
        return REFUSED
    return judge_calls_per_group(settings)


def runner_calls(strategy, two_sided, budget, n, seed):
    """Calls the runner makes with a judge of random soft verdicts, some of them failures (None)."""
    rng = np.random.default_rng(seed)

    async def judge(first, second):
        return None if rng.random() < 0.1 else float(rng.random())

    try:
        result = asyncio.run(run_tournament(n, judge, strategy, budget, seed=seed, two_sided=two_sided))
    except ValueError:
        return REFUSED
    return result.judge_calls


@pytest.mark.parametrize(("strategy", "two_sided", "budget", "n"), CASES)
def test_the_dry_runs_figure_is_the_runners_count(strategy, two_sided, budget, n):
    figure = dry_run_figure(strategy, two_sided, budget, n)
    assert all(runner_calls(strategy, two_sided, budget, n, seed) == figure for seed in range(3)), figure


def test_the_figures_users_read():
    assert dry_run_figure("random", True, 14, 8) == 14  # the dry run printed 28: each pair's two orders fit in 14
    assert dry_run_figure("live", False, None, 8) == live_call_count(8) == 18
    assert dry_run_figure("live", True, None, 8) == 36
    assert dry_run_figure("round_robin", False, None, 16) == round_robin_call_count(16) == 120
    assert dry_run_figure("info_gain", False, None, 8) == 18  # a budgeted strategy without a budget: live's count
    assert dry_run_figure("random", False, 14, 4) == 6  # random plays each pair at most once
    for strategy in FIXED_COUNT_STRATEGIES:
        assert dry_run_figure(strategy, False, 14, 8) == REFUSED
    assert dry_run_figure("paced", True, 14, 16) == REFUSED  # 7 pairs cannot connect 16 traces


def test_planned_calls_refuses_what_the_runner_refuses():
    with pytest.raises(ValueError, match="fixed number of calls"):
        planned_calls(8, "live", 14)
    with pytest.raises(ValueError, match="cannot connect"):
        planned_calls(16, "info_gain", 14, two_sided=True)
