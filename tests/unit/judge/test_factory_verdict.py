"""make_judge hands the verdict mode to the SIMULATED judge: probability mode answers numbers inside (0, 1)."""

import asyncio

from arena_verl.core.judge_protocol import Trace
from arena_verl.judge import make_judge
from arena_verl.settings import judge_settings


def outcomes(verdict):
    judge = make_judge(judge_settings(verdict=verdict, seed=3))

    async def ask():
        return [await judge.compare("p", Trace(f"a{i}"), Trace(f"b{i}")) for i in range(20)]

    return asyncio.run(ask())


def test_probability_mode_reaches_the_simulated_judge():
    hard, soft = outcomes("generate"), outcomes("probability")
    assert set(hard) <= {0.0, 0.5, 1.0}
    assert all(0.0 <= x <= 1.0 for x in soft) and any(x not in (0.0, 0.5, 1.0) for x in soft)
