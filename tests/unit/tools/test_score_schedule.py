"""``arena-verl score`` schedules a group's tournament as training does: by default its calls and verdicts are those
of a ``Tournament`` built with training's default options (``ArenaSettings().tournament``,
the referee's mapping) for the same seed and arrival order; with ``--wait-for-verdicts`` they are
``run_tournament``'s (the paper's rule). The judge is the SIMULATED one."""

from __future__ import annotations

import asyncio
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from arena_verl.core.tournament import Tournament, run_tournament
from arena_verl.judge import Trace, make_judge
from arena_verl.judge.spec import judge_settings_from_spec
from arena_verl.settings import ArenaSettings
from arena_verl.tools.score import main, read_score_file
from helpers.verl_dumps import write_v1_lines

N = 8  # enough traces for the live schedule to differ between eager and waiting arrivals
QUESTION, TRUTH = "What is 3 + 4?", "7"
OUTPUTS = [f"Attempt {i}: {'three and four ' * i}make \\boxed{{7}}." for i in range(N)]  # all correct: non-diverse


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_v1_lines(tmp_path_factory.mktemp("dump") / "rollout", 3, [(QUESTION, TRUTH, OUTPUTS, [1.0] * N)])


def scored_line(dump: Path, out: Path, *extra: str) -> dict:
    command = [str(dump), "--judge", "simulated", "--out", str(out), "--workers", "1", "--concurrency", "1"]
    assert main([*command, *extra]) == 0
    (line,) = read_score_file(out)
    return line


def replay(line: dict, wait: bool) -> tuple[list[list], int, np.ndarray]:
    """The group's tournament outside the command: (pairs with verdicts in call order, calls, strengths)."""
    judge = make_judge(judge_settings_from_spec("simulated"))
    tag = f"{line['step']}/{line['group']}"
    problem = f"system: Reason step by step.\nuser: {QUESTION}\nassistant:"

    async def judge_pair(first: int, second: int):
        return await judge.compare(
            problem, Trace(OUTPUTS[first]), Trace(OUTPUTS[second]), TRUTH, task="math", group=tag
        )

    seed = zlib.crc32(f"0/{tag}".encode())
    options = ArenaSettings().tournament  # training's defaults: eager
    assert options.wait_for_verdicts is False

    async def tournament():
        if wait:
            kwargs = {
                k: v for k, v in options.tournament_kwargs().items() if k not in ("prefix_aware", "wait_for_verdicts")
            }
            return await run_tournament(N, judge_pair, seed=seed, **kwargs)
        built = Tournament(N, judge_pair, seed=seed, **options.tournament_kwargs())
        for _ in range(N):  # the whole group arrives, in dump order
            built.add()
        return await built.finish()

    result = asyncio.run(tournament())
    return [[a, b, o] for a, b, o in result.comparisons], result.judge_calls, result.strengths


def test_score_schedules_as_training_by_default_and_as_run_tournament_when_waiting(dump, tmp_path):
    eager = scored_line(dump, tmp_path / "eager.jsonl")
    waiting = scored_line(dump, tmp_path / "waiting.jsonl", "--wait-for-verdicts")
    assert (eager["wait_for_verdicts"], waiting["wait_for_verdicts"]) == (False, True)
    for line, wait in ((eager, False), (waiting, True)):
        pairs, calls, strengths = replay(line, wait)
        assert line["pairs"] == pairs
        assert line["judge_calls"] == calls == len(pairs)
        assert line["strengths"] == pytest.approx(strengths.tolist())
    # The two schedules really differ here, so the equalities above tell them apart.
    assert [p[:2] for p in eager["pairs"]] != [p[:2] for p in waiting["pairs"]]


def test_a_file_scored_with_one_schedule_is_not_resumed_with_the_other(dump, tmp_path, capsys):
    out = tmp_path / "scores.jsonl"
    scored_line(dump, out)
    assert main([str(dump), "--judge", "simulated", "--out", str(out), "--wait-for-verdicts"]) == 2
    assert "wait_for_verdicts=False, verdict=generate, this run has" in capsys.readouterr().err


def test_a_line_written_before_the_schedule_was_recorded_counts_as_waiting(dump, tmp_path, capsys):
    out = tmp_path / "old.jsonl"
    line = scored_line(dump, out, "--wait-for-verdicts")
    del line["wait_for_verdicts"]  # what the command wrote when it always ran run_tournament's schedule
    out.write_text(json.dumps(line, separators=(",", ":")) + "\n")
    assert main([str(dump), "--judge", "simulated", "--out", str(out), "--workers", "1"]) == 2
    assert main([str(dump), "--judge", "simulated", "--out", str(out), "--workers", "1", "--wait-for-verdicts"]) == 0
    assert "1 groups already scored; 0 to go" in capsys.readouterr().out
