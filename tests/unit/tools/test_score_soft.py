"""``arena-verl score`` with soft outcomes (``--verdict probability``): every outcome is stored as the judge gave it,
exactly, so that the strengths of a line are the fit of its pairs and a resumed file is the file of an uninterrupted
run; first_wins is the sum of the decided outcomes (the tracker's definition); the verdict mode is one of the run's
settings. The judge is a scripted one whose outcome depends only on the two texts shown (as a deterministic model's
forward pass does), so that a resumed run can be compared with an uninterrupted one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import arena_verl.tools.score.judging as judging
from arena_verl.core.judge_protocol import JudgeStats
from arena_verl.core.referee.metrics import position_figures
from arena_verl.core.tournament import fit_bradley_terry, mirror
from arena_verl.tools.common.dump_groups import ARENA
from arena_verl.tools.score import read_score_file
from arena_verl.tools.score.score_file import _wrong_type
from helpers.score_dumps import PATTERNS, keys_of, non_diverse_keys, score, write_dump


class TextKeyedSoftJudge:
    """P(first is better) from a hash of the two texts: a float with all its digits, never 0, 0.5 or 1 (and a
    failed call for one pair in eleven, to show failures stay null)."""

    name = "scripted-soft"

    def __init__(self):
        self.stats = JudgeStats()
        self.given: dict[tuple[str, str], float | None] = {}

    @staticmethod
    def outcome(first: str, second: str) -> float | None:
        digest = hashlib.blake2b(f"{first}\0{second}".encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        if value % 11 == 0:
            return None
        return 0.02 + 0.96 * (value / 2.0**64)

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        outcome = self.outcome(first.text, second.text)
        self.given[first.text, second.text] = outcome
        return outcome

    async def score(self, problem, trace, reference=None, *, task="math", group=None):
        raise AssertionError("score judges pairs only")


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("rollouts") / "rollout_data", PATTERNS)


@pytest.fixture
def soft_judge(monkeypatch) -> TextKeyedSoftJudge:
    judge = TextKeyedSoftJudge()
    monkeypatch.setattr(judging, "make_judge", lambda settings: judge)
    return judge


def soft_score(dump: Path, out: Path, *extra: str) -> int:
    return score(dump, out, "--verdict", "probability", "--concurrency", "3", *extra)


def comparable(lines: list[dict]) -> dict:
    """Lines by key, without what depends on the clock."""
    return {(line["step"], line["group"]): {k: v for k, v in line.items() if k != "elapsed_s"} for line in lines}


def responses(dump: Path) -> dict[tuple[int, str], list[str]]:
    out: dict[tuple[int, str], list[str]] = {}
    for path in sorted(dump.glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            row = json.loads(raw)
            key = (row["step"], f"uid {row['uid'].rsplit('_', 2)[0]}")
            out.setdefault(key, []).append(row["output"])
    return out


def test_soft_outcomes_are_stored_exactly_and_the_strengths_are_their_fit(dump, tmp_path, soft_judge):
    out = tmp_path / "soft.jsonl"
    assert soft_score(dump, out) == 0
    lines = read_score_file(out)
    assert sorted(keys_of(lines)) == sorted(non_diverse_keys(PATTERNS))
    texts = responses(dump)
    soft = failed = 0
    for line in lines:
        assert line["verdict"] == "probability"
        group = texts[line["step"], line["group"]]
        for first, second, outcome in line["pairs"]:
            # exactly the judge's float, read back from the JSON line
            assert outcome == TextKeyedSoftJudge.outcome(group[first], group[second])
            soft += outcome is not None and outcome not in (0.0, 0.5, 1.0)
            failed += outcome is None
        assert line["failures"] == sum(o is None for *_, o in line["pairs"])
        # The stored strengths are the fit of the stored pairs (failed calls as ties, the arena's default policy),
        # to the last bit: nothing was rounded on the way to the file.
        fitted = [(f, s, 0.5 if o is None else o) for f, s, o in line["pairs"]]
        if ARENA.tournament.mirror_augment:
            fitted = mirror(fitted)
        theta = fit_bradley_terry(
            line["samples"], fitted, l2=ARENA.tournament.l2, order_effect=ARENA.tournament.order_effect
        )
        np.testing.assert_array_equal(theta, np.array(line["strengths"]))
        # first_wins / decided: the tracker's position figures of the same outcomes
        figures = position_figures(line["pairs"])
        assert line["decided"] == figures["verdicts_decided"] == sum(o is not None for *_, o in line["pairs"])
        assert line["first_wins"] == figures["verdicts_first_won"] == sum(o for *_, o in line["pairs"] if o is not None)
    assert soft > 20 and failed > 0  # the file really holds soft outcomes and failed calls


def test_a_resumed_soft_file_is_the_file_of_an_uninterrupted_run(dump, tmp_path, soft_judge, capsys):
    whole, resumed = tmp_path / "whole.jsonl", tmp_path / "resumed.jsonl"
    assert soft_score(dump, whole) == 0
    assert soft_score(dump, resumed) == 0
    lines = resumed.read_bytes().splitlines(keepends=True)
    resumed.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # killed while writing line 3
    capsys.readouterr()
    assert soft_score(dump, resumed) == 0
    printed = capsys.readouterr().out
    assert f"2 groups already scored; {len(lines) - 2} to go" in printed
    assert comparable(read_score_file(resumed)) == comparable(read_score_file(whole))
    assert "a soft verdict counts its probability" in printed  # the report read the soft first_wins


def test_the_verdict_mode_is_a_setting_of_the_file(dump, tmp_path, soft_judge, capsys):
    out = tmp_path / "soft.jsonl"
    assert soft_score(dump, out) == 0
    content = out.read_bytes()
    assert score(dump, out) == 2  # generated verdicts on a file of probability verdicts
    assert "verdict=probability, this run has" in capsys.readouterr().err
    assert out.read_bytes() == content


def test_a_line_written_before_the_verdict_mode_was_recorded_counts_as_generated(dump, tmp_path, capsys):
    out = tmp_path / "old.jsonl"
    assert score(dump, out) == 0
    old = [json.loads(raw) for raw in out.read_text().splitlines()]
    for line in old:
        assert line["verdict"] == "generate"
        del line["verdict"]
    out.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in old))
    capsys.readouterr()
    assert soft_score(dump, out) == 2
    assert score(dump, out) == 0
    assert f"{len(old)} groups already scored; 0 to go" in capsys.readouterr().out


def test_hard_verdicts_keep_integer_counts(dump, tmp_path):
    out = tmp_path / "hard.jsonl"
    assert score(dump, out) == 0  # the SIMULATED judge, generated verdicts
    for line in read_score_file(out):
        assert type(line["first_wins"]) is int and type(line["decided"]) is int
        assert line["first_wins"] == sum(o == 1.0 for *_, o in line["pairs"])
        assert line["decided"] == sum(o in (0.0, 1.0) for *_, o in line["pairs"])


BASE = {"step": 1, "group": "g", "rewards": [0.5], "sample_digests": ["x"], "judge_calls": 3, "failures": 0}


@pytest.mark.parametrize(
    "first_wins, decided, wrong",
    [
        (1.75, 3, None),
        (3, 3, None),
        (0, 0, None),
        (3.5, 3, "first_wins is not a number"),
        (-0.25, 3, "first_wins is not a number"),
        (True, 3, "first_wins is not a number"),
        (float("nan"), 3, "first_wins is not a number"),
        ("1.5", 3, "first_wins is not a number"),
        (1.5, 2.0, "decided is not a count"),
    ],
)
def test_a_line_holds_a_sum_of_outcomes_at_most_its_decided_count(first_wins, decided, wrong):
    record = {**BASE, "first_wins": first_wins, "decided": decided}
    found = _wrong_type(record)
    assert found is None if wrong is None else found.startswith(wrong)
