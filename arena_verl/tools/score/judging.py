"""Judging the groups of ``arena-verl score``: each group's tournament scheduled as training schedules it.

The tournament is built as the referee builds it (:class:`~arena_verl.core.options.TournamentOptions`
from the settings: the one settings -> tournament mapping), with the command's strategy, budget and seed. Training's
default is eager (``reward.arena.wait_for_verdicts: false``): the group's traces arrive in dump order, all at once
(as when the reward loop submits a whole batch), and each arrival's opponents are chosen from the verdicts in hand.
``--wait-for-verdicts`` is the paper's rule instead (what :func:`~arena_verl.core.tournament.run_tournament` does):
each arrival's matches, and the scheduler's idle-time work, are judged before the next trace arrives.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from typing import Any

from arena_verl.backend_registry import backend_of
from arena_verl.core.options import TournamentOptions
from arena_verl.core.referee.metrics import position_figures
from arena_verl.core.routing import tournament_rewards
from arena_verl.core.tournament import (
    CallBounds,
    Tournament,
    TournamentResult,
    bound_judge,
    group_certainty,
    valid_outcome,
)
from arena_verl.judge import Trace, make_judge
from arena_verl.settings_judge import JudgeSettings
from arena_verl.tools.common.dump_groups import ARENA, DumpGroup, response_digest
from arena_verl.tools.common.judge_runs import ray_for_judge, run_workers
from arena_verl.tools.score.score_file import ScoreFile

__all__ = ["judge_groups", "replay_tournament", "score_group", "tournament_options", "tournament_seed"]


def tournament_options(settings: dict[str, Any]) -> TournamentOptions:
    """Training's tournament options (the arena's defaults) with this run's strategy, budget and schedule."""
    return ARENA.tournament.with_strategy(
        settings["strategy"], budget=settings["budget"], wait_for_verdicts=settings["wait_for_verdicts"]
    )


def tournament_seed(seed: int, step: int | None, key: str) -> int:
    """Each group's own seed (presentation order, random schedules), stable across runs and resumes."""
    return zlib.crc32(f"{seed}/{step}/{key}".encode())


async def replay_tournament(size: int, judge_pair, seed: int, options: TournamentOptions) -> TournamentResult:
    """One group's tournament over ``size`` traces arriving in index order (see the module docstring)."""
    tournament = Tournament(size, judge_pair, seed=seed, **options.tournament_kwargs())
    for _ in range(size):
        tournament.add()
        if options.wait_for_verdicts:  # the paper's rule: this arrival's matches are judged before the next one
            await tournament.settle()
    return await tournament.finish()


def judge_groups(
    todo: list[DumpGroup],
    judge_settings: JudgeSettings,
    settings: dict[str, Any],
    concurrency: int,
    out: ScoreFile,
    total: int,
) -> None:
    """Judge ``todo``, appending each group's line as it finishes; the judge (and its engines) never outlive this."""
    from tqdm import tqdm

    with ray_for_judge(judge_settings):
        judge = make_judge(judge_settings)
        with tqdm(total=total, initial=total - len(todo), unit="group", desc="score", disable=None) as progress:
            asyncio.run(_judge_all(todo, judge, judge_settings, settings, concurrency, out, progress))


async def _judge_all(todo, judge, judge_settings, settings, concurrency: int, out: ScoreFile, progress) -> None:
    async def handle(group: DumpGroup) -> None:
        simulated = backend_of(judge_settings).simulated
        out.append(await score_group(group, judge, settings, judge_settings.call_budget_s, simulated=simulated))
        progress.update(1)

    await run_workers(todo, handle, concurrency, judge)


async def score_group(
    group: DumpGroup, judge, settings: dict[str, Any], call_timeout_s: float, *, simulated: bool
) -> dict[str, Any]:
    """One group's tournament with ``judge``, scheduled as training schedules it; the score file's line for it.
    ``simulated``: whether the judge is a SIMULATED one (the registry's fact of its backend), written on the line."""
    calls: list[list] = []  # [first, second, outcome] in call order
    tag = f"{group.step}/{group.key}"

    async def judge_pair(first: int, second: int) -> float | None:
        call = [first, second, None]
        calls.append(call)
        shown_first, shown_second = Trace(group.responses[first]), Trace(group.responses[second])
        # a timeout or an error is a failed call: the bounded call makes it None, the tournament counts it (and the
        # entry stays null)
        outcome = await judge.compare(
            group.problem, shown_first, shown_second, group.reference, task=group.task, group=tag
        )
        call[2] = valid_outcome(outcome)  # stored as the judge gave it: a soft outcome's float is written exactly
        return outcome

    started = time.monotonic()
    seed = tournament_seed(settings["seed"], group.step, group.key)
    bounded = bound_judge(judge_pair, CallBounds(deadline_s=call_timeout_s))  # the call budget, as in training
    result = await replay_tournament(len(group.responses), bounded, seed, tournament_options(settings))
    rewards = tournament_rewards("arena", result.strengths, group.verifier_rewards, ARENA.referee.reward_scale)
    position = position_figures(calls)  # the tracker's definition: soft outcomes count their value
    return {
        "step": group.step,
        "group": group.key,
        **settings,
        "judge_backend": judge.name,
        "simulated": simulated,
        "samples": len(group.responses),
        "sample_digests": [response_digest(text) for text in group.responses],
        "verifier_reward": group.verifier_rewards[0],
        "task": group.task,
        "data_source": group.data_source,
        "ground_truth_disagrees": group.truth_disagrees,
        "dump_file": group.dump_file,
        "judge_calls": result.judge_calls,
        "failures": result.failed_calls,
        "pairs": calls,
        "strengths": [float(x) for x in result.strengths],
        "rewards": [float(x) for x in rewards],
        # How sure the verdicts are that the traces differ: the factor certainty weighting puts on the group's
        # advantages in training (core/tournament/certainty.py).
        "certainty": group_certainty(len(group.responses), result.comparisons, result.strengths, result.order_effect),
        "first_wins": _number(position["verdicts_first_won"]),
        "decided": position["verdicts_decided"],
        "elapsed_s": round(time.monotonic() - started, 3),
    }


def _number(value: float) -> int | float:
    """A whole number as an int (hard verdicts' counts read as before), any other value as its exact float."""
    return int(value) if float(value).is_integer() else float(value)
