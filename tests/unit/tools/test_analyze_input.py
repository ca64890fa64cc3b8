"""``arena-verl analyze`` on hostile or careless input (issue 18): a uid twice in a step, dump folders whose step
files are not files, lines no dump holds, names that matplotlib would read as math text, and ``--metrics`` given as
the metrics folder or the run folder. Bad input is one ``error:`` line and exit 2; what is counted is in
summary.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arena_verl.core.errors import InputError
from arena_verl.tools.analyze import command
from arena_verl.tools.analyze.command import main
from helpers.verl_dumps import write_v1_lines, write_verl_parquet

RIGHT, WRONG = "So the answer is \\boxed{7}.", "So the answer is \\boxed{8}."


def analyze(capsys, *args) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def summary_of(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------------------------------ duplicate uids


def _with_repeat(tmp_path: Path, repeat_output: str, repeat_score: float) -> Path:
    path = write_v1_lines(tmp_path / "rollout", 3, [("What is 3 + 4?", "7", [RIGHT, RIGHT], [1.0, 1.0])])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    copy = dict(lines[0], output=repeat_output, score=repeat_score)  # uid ..._0_0 once more
    path.write_text("".join(json.dumps(line) + "\n" for line in [*lines, copy]))
    return path


def test_a_uid_twice_with_different_samples_leaves_its_group_unverified_and_is_reported(tmp_path, capsys):
    _with_repeat(tmp_path, WRONG, 0.0)  # one copy right, one wrong: which one the run trained on is unknown
    rc, err = analyze(capsys, tmp_path / "rollout", "--out", tmp_path / "out")
    assert rc == 0
    summary = summary_of(tmp_path / "out")
    assert summary["steps"][0]["duplicate_uids"] == 1 and summary["totals"]["duplicate_uids"] == 1
    assert summary["totals"]["duplicate_uid_groups_unverified"] == 1
    assert summary["totals"]["unverified"] == 1 and summary["totals"]["groups"] == 0  # never guessed
    assert "warning: 1 dump line(s) repeat a uid" in err and "3.jsonl" in err and "line 3" in err
    assert any("uid occurs twice" in note for note in summary["totals"]["notes"])


def test_an_identical_copy_of_a_uid_counts_once_and_is_reported(tmp_path, capsys):
    _with_repeat(tmp_path, RIGHT, 1.0)
    rc, err = analyze(capsys, tmp_path / "rollout", "--out", tmp_path / "out")
    assert rc == 0
    totals = summary_of(tmp_path / "out")["totals"]
    assert (totals["groups"], totals["samples"], totals["all_correct"]) == (1, 2, 1)  # two sessions, not three
    assert totals["duplicate_uids"] == 1 and totals["duplicate_uid_groups_unverified"] == 0
    assert "warning: 1 dump line(s) repeat a uid" in err


def test_the_reader_counts_duplicates_for_every_tool(tmp_path):
    from arena_verl.data.dump_notes import duplicate_note
    from arena_verl.data.dumps import read_dump_file

    file = read_dump_file(_with_repeat(tmp_path, WRONG, 0.0), None)
    assert [(d.line, d.first_line, d.conflicting) for d in file.duplicates] == [(3, 1, True)]
    assert file.prompts[0].conflicting_uids and len(file.prompts[0].samples) == 2  # the first copy is the sample
    assert "the first copy counts" in duplicate_note(file.duplicates)


# --------------------------------------------------------------------------------------------- dump folder entries


def _good_folder(tmp_path: Path) -> Path:
    write_v1_lines(tmp_path / "rollout", 1, [("What is 3 + 4?", "7", [RIGHT, WRONG], [1.0, 0.0])])
    return tmp_path / "rollout"


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda d: os.symlink(d / "gone.jsonl", d / "2.jsonl"), "a dangling symlink"),
        (lambda d: os.symlink(d / "2.jsonl", d / "2.jsonl"), "a symlink loop"),
        (lambda d: (d / "2.jsonl").mkdir(), "a folder, not a dump file"),
        (lambda d: os.mkfifo(d / "2.jsonl"), "not a regular file"),
        (lambda d: (d / "001.jsonl").write_text((d / "1.jsonl").read_text()), "are both step 1"),
    ],
    ids=["dangling", "loop", "folder", "fifo", "same-step"],
)
def test_a_step_entry_that_is_not_a_dump_file_is_named(tmp_path, capsys, make, said):
    folder = _good_folder(tmp_path)
    make(folder)
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out")
    line = one_error_line(err)
    assert rc == 2 and said in line and str(folder) in line
    assert not (tmp_path / "out").exists()


def test_names_that_are_not_step_numbers_are_ignored(tmp_path, capsys):
    folder = _good_folder(tmp_path)
    (folder / "².jsonl").write_text("not read")  # "²".isdigit() is true, int("²") is not a number
    (folder / "notes.jsonl").mkdir()
    rc, _ = analyze(capsys, folder, "--out", tmp_path / "out")
    assert rc == 0 and summary_of(tmp_path / "out")["totals"]["steps"] == 1


@pytest.mark.parametrize(
    "content, said",
    [
        (b"", "empty"),
        (b"\n  \n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff", "line 1: not UTF-8"),
        (b"[1, 2]\n", "line 1: not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deeply"),
        (b'{"input": "q", "output": "a", "score": ' + b"9" * 5000 + b"}\n", "line 1: not JSON"),
        (b'{"input": "q", "output": "a", "score": 1}\n{"input": "q", "out', "no newline"),
        (b'{"output": "a", "score": 1}\n', "not a verl dump"),
        (b'{"input": "q", "output": 3, "score": 1}\n', "output is missing or not a string"),
        (b'{"input": "q", "output": "a", "score": ' + b"9" * 400 + b"}\n", "not a finite number"),
        (b'{"input": "q", "output": "a", "score": 1, "step": Infinity}\n{"input": "q", "output": "b"}\n', "line 2"),
    ],
    ids=["empty", "blank", "binary", "array", "deep", "digits", "torn", "keys", "output", "overflow", "step-inf"],
)
def test_a_bad_step_file_is_one_error_naming_file_and_line(tmp_path, capsys, content, said):
    folder = tmp_path / "rollout"
    folder.mkdir()
    (folder / "1.jsonl").write_bytes(content)
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out")
    line = one_error_line(err)
    assert rc == 2 and said in line and "1.jsonl" in line


def test_a_line_longer_than_the_limit_is_refused(tmp_path, capsys, monkeypatch):
    from arena_verl.data import dump_files

    monkeypatch.setattr(dump_files, "MAX_LINE_BYTES", 64)
    folder = tmp_path / "rollout"
    folder.mkdir()
    (folder / "1.jsonl").write_text(json.dumps({"input": "q" * 100, "output": "a", "score": 1}) + "\n")
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out")
    assert rc == 2 and "1.jsonl line 1: longer than" in one_error_line(err)


def test_an_unreadable_step_file_is_named(tmp_path, capsys, monkeypatch):
    folder = _good_folder(tmp_path)
    real_open = Path.open

    def denied(self, *args, **kwargs):  # chmod 000 does not stop root, so refuse the open itself
        if self.name == "1.jsonl":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out")
    assert rc == 2 and "1.jsonl: cannot be read (Permission denied)" in one_error_line(err)


# ------------------------------------------------------------------------------------------------------- plots

ODD_NAMES = ["$$", "$\\frac{$", "price $5 and $6", "two\nlines\x00\x1b[31m", "^_{}\\", "x" * 5000]


def test_every_name_reaches_the_plots_literally(tmp_path, capsys):
    names = ODD_NAMES + [f"source {i}" for i in range(60)]  # more than a figure can list
    rows, prompts = [], []
    for number, name in enumerate(names):
        question = f"What is {number} + 7?"
        rows.append((name, "math", question, str(number + 7)))
        prompts.append((question, str(number + 7), [f"\\boxed{{{number + 7}}}", "\\boxed{0}"], [1.0, 0.0]))
    data = write_verl_parquet(tmp_path / "train.parquet", rows, split="train")
    write_v1_lines(tmp_path / "rollout", 1, prompts)
    rc, err = analyze(capsys, tmp_path / "rollout", "--out", tmp_path / "out", "--data", data)
    assert rc == 0, err
    assert (tmp_path / "out" / "data_sources.png").read_bytes()[:4] == b"\x89PNG"
    assert set(summary_of(tmp_path / "out")["totals"]["data_sources"]) == set(names)


def test_labels_show_dollars_and_control_characters_literally():
    from arena_verl.tools.analyze.report import literal

    assert literal("$x$") == "$x$"
    assert literal("a\nb\x00") == "a\\nb\\x00"
    assert len(literal("y" * 500)) == 48


def test_extreme_rewards_do_not_break_the_histograms(tmp_path, capsys):
    write_v1_lines(tmp_path / "rollout", 1, [("What is 3 + 4?", "7", [RIGHT, WRONG], [1e308, -1e308])])
    rc, err = analyze(capsys, tmp_path / "rollout", "--out", tmp_path / "out")
    assert rc == 0, err
    reward = summary_of(tmp_path / "out")["totals"]["reward"]
    assert reward["mean"] == 0.0 and sum(reward["histogram"]["counts"]) == 2
    assert not (tmp_path / "out" / "rewards.png").exists()  # no axis spans ±1e308: the plot is left out


# ------------------------------------------------------------------------------------------------------ metrics


def _metrics_run(tmp_path: Path, monkeypatch) -> Path:
    from verl.utils.tracking import FileLogger

    run = tmp_path / "run"
    (run / "metrics").mkdir(parents=True)
    for attempt, calls in (("20260101-000000", {1: 5, 2: 6}), ("20260102-000000", {2: 9})):  # a resume redid 2
        monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(run / "metrics" / f"{attempt}.jsonl"))
        logger = FileLogger("project", "experiment")
        for step, n in calls.items():
            logger.log({"training/global_step": step, "arena/judge_calls": n}, step=step)
        logger.finish()
    return run


@pytest.mark.parametrize("given", ["run", "run/metrics", "run/metrics/20260102-000000.jsonl"])
def test_metrics_may_be_the_run_the_metrics_folder_or_one_file(tmp_path, capsys, monkeypatch, given):
    _metrics_run(tmp_path, monkeypatch)
    folder = _good_folder(tmp_path)
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out", "--metrics", tmp_path / given)
    assert rc == 0, err
    assert summary_of(tmp_path / "out")["steps"][0]["judge_calls"] == (None if given.endswith(".jsonl") else 5)
    from arena_verl.tools.analyze.summary import judge_calls_per_step

    assert judge_calls_per_step(tmp_path / given) == ({2: 9} if given.endswith(".jsonl") else {1: 5, 2: 9})


def test_a_metrics_folder_without_metrics_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc, err = analyze(capsys, _good_folder(tmp_path), "--out", tmp_path / "out", "--metrics", tmp_path / "empty")
    assert rc == 2 and "--metrics" in one_error_line(err) and "no metrics" in err


# -------------------------------------------------------------------------------------------------- error path


def test_main_goes_through_the_one_error_path(monkeypatch, capsys):
    def bad(args):
        raise InputError("bad\ninput")

    monkeypatch.setattr(command, "run", bad)
    assert command.main(["dump"]) == 2
    assert capsys.readouterr().err == "error: bad input\n"


def test_an_unwritable_out_is_one_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    rc, err = analyze(capsys, _good_folder(tmp_path), "--out", tmp_path / "file" / "out")
    assert rc == 2 and "cannot be written" in one_error_line(err)


@pytest.mark.parametrize("score", ["true", "false", '"0.5"', "null"])
def test_a_score_that_is_no_number_is_refused_a_boolean_included(tmp_path, capsys, score):
    folder = tmp_path / "rollout"
    folder.mkdir()
    line = '{"input": "What is 1 + 1?", "output": "\\\\boxed{2}", "gts": "2", "score": %s}\n'
    (folder / "1.jsonl").write_text(line % "1" + line % score)
    rc, err = analyze(capsys, folder, "--out", tmp_path / "out")
    assert rc == 2 and "1.jsonl line 2: score is missing or not a finite number" in one_error_line(err)
    assert not (tmp_path / "out").exists()
