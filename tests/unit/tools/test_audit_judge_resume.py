"""``arena-verl audit-judge`` resumes like ``score``: a rerun skips the pairs in ``pairs.jsonl`` and gives the figures
of an uninterrupted run, a torn last line is dropped, a larger --max-pairs extends the file; a file of another
judge, verdict mode or dump is refused; and bad input is one ``error:`` line with exit status 2."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from pathlib import Path

import pytest

from arena_verl.core.judge_protocol import JudgeStats
from arena_verl.tools.audit import command, judging
from helpers.score_dumps import write_dump

PATTERNS = {1: [[1, 1, 1, 1], [1, 0, 0, 1], [0, 0, 0]], 2: [[0, 1, 1, 1], [1, 1, 1, 1, 1, 1]]}
PAIRS = (2 * 2 + 1 * 3) + (1 + 1 + 2) * 3  # labelled (c * (n - c)) + same-outcome (3 per triple)


class Counting:
    """A deterministic scripted judge (prefers the longer trace, ties on equal length) that counts its calls."""

    name = "script"

    def __init__(self):
        self.stats = JudgeStats()
        self.calls = 0

    async def compare(self, problem, first, second, reference=None, *, task="math", group=None):
        self.calls += 1
        await asyncio.sleep(0)
        return 0.5 + 0.25 * ((len(first.text) > len(second.text)) - (len(first.text) < len(second.text)))


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("audit") / "rollout", PATTERNS)


def audit(dump, out: Path, monkeypatch, *extra: str, judge=None, spec: str = "simulated") -> int:
    judge = judge or Counting()
    monkeypatch.setattr(judging, "make_judge", lambda settings: judge)
    return command.main([str(dump), "--judge", spec, "--out", str(out), "--workers", "1", *extra])


def figures(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    return {key: value for key, value in summary.items() if key not in ("seconds_per_call", "run")}


def error_line(capsys) -> str:
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ")
    return line


def test_a_rerun_skips_the_judged_pairs_and_gives_the_uninterrupted_figures(dump, tmp_path, monkeypatch, capsys):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert audit(dump, whole, monkeypatch) == 0
    assert audit(dump, cut, monkeypatch) == 0
    pairs = cut / "pairs.jsonl"
    lines = pairs.read_bytes().splitlines(keepends=True)
    assert len(lines) == PAIRS
    pairs.write_bytes(b"".join(lines[:5]) + lines[5][:17])  # killed while writing the sixth line
    capsys.readouterr()
    judge = Counting()
    assert audit(dump, cut, monkeypatch, judge=judge) == 0
    err = capsys.readouterr().err
    assert "dropped a torn last line (17 bytes)" in err and f"5 pairs already judged; {PAIRS - 5} to go" in err
    assert judge.calls == 2 * (PAIRS - 5)
    assert figures(cut) == figures(whole)
    assert len(pairs.read_bytes().splitlines()) == PAIRS
    judge = Counting()
    assert audit(dump, cut, monkeypatch, judge=judge) == 0  # complete: nothing judged, the same report
    assert judge.calls == 0 and figures(cut) == figures(whole)


def test_a_larger_max_pairs_extends_the_file_and_a_smaller_one_reports_its_own_selection(
    dump, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch, "--max-pairs", "2") == 0
    judge = Counting()
    assert audit(dump, out, monkeypatch, "--max-pairs", "100", judge=judge) == 0
    assert judge.calls == 2 * (PAIRS - 4)
    capsys.readouterr()
    assert audit(dump, out, monkeypatch, "--max-pairs", "2") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["pairs_labelled"], summary["pairs_same_outcome"]) == (2, 2)
    assert f"{PAIRS - 4} pairs of the pairs file are not in this selection" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, spec",
    [
        ((), "simulated?sharpness=2"),
        (("--verdict", "probability"), "simulated"),
        (("--seed", "3"), "simulated"),
        (("--answer-extraction", "lenient"), "simulated"),
    ],
)
def test_a_file_of_other_settings_is_refused_untouched(dump, tmp_path, monkeypatch, capsys, extra, spec):
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch) == 0
    before = (out / "pairs.jsonl").read_bytes()
    capsys.readouterr()
    assert audit(dump, out, monkeypatch, *extra, spec=spec) == 2
    line = error_line(capsys)
    assert "line 1 was judged with" in line and "write to another --out" in line
    assert (out / "pairs.jsonl").read_bytes() == before


def test_a_file_of_another_dump_is_refused(dump, tmp_path, monkeypatch, capsys):
    other = write_dump(tmp_path / "other", PATTERNS)
    for path in other.glob("*.jsonl"):
        path.write_text(path.read_text().replace("5f0a7c3b-", "9e1d4a22-"))  # another run: other prompt uuids
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch) == 0
    capsys.readouterr()
    assert audit(other, out, monkeypatch) == 2
    assert "was judged on another dump's step file" in error_line(capsys)
    only_step_2 = tmp_path / "step2"
    only_step_2.mkdir()
    (only_step_2 / "2.jsonl").write_bytes((dump / "2.jsonl").read_bytes())
    assert audit(only_step_2, out, monkeypatch) == 2
    assert "this dump has no step 1 file" in error_line(capsys)


def test_a_corrupt_line_before_the_last_is_refused_by_number(dump, tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch) == 0
    pairs = out / "pairs.jsonl"
    lines = pairs.read_bytes().splitlines(keepends=True)
    pairs.write_bytes(lines[0] + b"garbage\n" + b"".join(lines[1:]))
    before = pairs.read_bytes()
    capsys.readouterr()
    assert audit(dump, out, monkeypatch) == 2
    assert "pairs.jsonl line 2: not JSON" in error_line(capsys)
    assert pairs.read_bytes() == before
    record = json.loads(lines[0])
    record["outcomes"] = [1.5, None]
    pairs.write_bytes(json.dumps(record).encode() + b"\n")
    assert audit(dump, out, monkeypatch) == 2
    assert "outcomes is not two verdicts" in error_line(capsys)


def test_a_file_that_is_no_pairs_file_is_refused_untouched(dump, tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / "pairs.jsonl").write_bytes(b"my notes, no newline")
    assert audit(dump, out, monkeypatch) == 2
    assert "line 1: not a pairs line" in error_line(capsys)
    assert (out / "pairs.jsonl").read_bytes() == b"my notes, no newline"


def test_a_file_another_run_is_writing_is_refused(dump, tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    out.mkdir()
    fd = os.open(out / "pairs.jsonl", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert audit(dump, out, monkeypatch) == 2
        assert "another audit-judge run is writing this file" in error_line(capsys)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "args, message",
    [
        (("--max-pairs", "0"), "--max-pairs must be >= 1"),
        (("--concurrency", "0"), "--concurrency must be >= 1"),
        (("--workers", "0"), "--workers must be >= 1"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(dump, tmp_path, monkeypatch, capsys, args, message):
    out = tmp_path / "report"
    assert audit(dump, out, monkeypatch, *args) == 2
    assert message in error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    "spec, message", [("simulated?nope=1", "unknown simulated option"), ("transformers:/no/such", "does not exist")]
)
def test_a_bad_judge_spec_is_one_error_line(dump, tmp_path, monkeypatch, capsys, spec, message):
    assert audit(dump, tmp_path / "report", monkeypatch, spec=spec) == 2
    assert message in error_line(capsys)


def test_an_empty_folder_and_a_missing_one_are_refused(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert audit(empty, tmp_path / "a", monkeypatch) == 2
    assert str(empty) in error_line(capsys)
    assert audit(tmp_path / "missing", tmp_path / "b", monkeypatch) == 2
    assert "no such file or folder" in error_line(capsys)


def test_a_dump_without_ground_truth_has_nothing_to_audit(dump, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "no_gts"
    folder.mkdir()
    for path in dump.glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        (folder / path.name).write_text("".join(json.dumps({**r, "gts": None}) + "\n" for r in records))
    assert audit(folder, tmp_path / "report", monkeypatch) == 2
    line = error_line(capsys)
    assert "nothing to audit" in line and "5 not verified (no ground truth (gts) to verify against)" in line


def test_no_diverse_group_gives_no_labelled_pair_and_a_null_accuracy(tmp_path, monkeypatch, capsys):
    uniform = write_dump(tmp_path / "uniform", {1: [[1, 1, 1], [0, 0, 0, 0]]})
    out = tmp_path / "report"
    assert audit(uniform, out, monkeypatch) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["pairs_labelled"], summary["pairs_same_outcome"]) == (0, 6)
    assert summary["accuracy"] is summary["accuracy_first_order"] is summary["accuracy_second_order"] is None
    assert summary["transitivity_violations"] is not None
    assert "no diverse group" in capsys.readouterr().err
    assert not (out / "labelled_outcomes.png").exists() and (out / "same_outcome_outcomes.png").exists()


def test_no_non_diverse_group_gives_no_same_outcome_pair_and_no_transitivity(tmp_path, monkeypatch, capsys):
    diverse = write_dump(tmp_path / "diverse", {1: [[1, 0], [0, 1, 1]]})
    out = tmp_path / "report"
    assert audit(diverse, out, monkeypatch) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["pairs_labelled"], summary["pairs_same_outcome"]) == (3, 0)
    assert summary["transitivity_violations"] is None and summary["accuracy"] is not None
    assert "no non-diverse group" in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused(dump, tmp_path, monkeypatch, capsys):
    out = tmp_path / "a_file"
    out.write_text("not a folder")
    assert audit(dump, out, monkeypatch) == 2
    assert "cannot be written" in error_line(capsys)
    assert out.read_text() == "not a folder"
