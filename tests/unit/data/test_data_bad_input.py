"""Issue 18: ``python -m arena_verl.data`` (convert, make-arithmetic, has-split, mark-split) and ``prepare`` refuse
bad input with one ``error:`` line and exit 2 (the tools' one error path), never a traceback, and write their parquet
files atomically (nothing half-written, no temporary left behind)."""

import argparse
import errno
import os

import pandas as pd
import pytest

from arena_verl.core.errors import InputError, guarded
from arena_verl.data import convert as data_cli
from arena_verl.data.benchmarks import Options, prepare
from arena_verl.data.convert import MAX_ROWS, main
from arena_verl.data.verl_layout import write_parquet
from arena_verl.tools import prepare as prepare_command


def refused(capsys, argv, *expected):
    """main(argv) exits 2 with one error line containing each of ``expected``, and prints nothing on stdout."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for fragment in expected:
        assert fragment in lines[0], lines[0]
    return lines[0]


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def files(tmp_path):
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"problem": "Q?", "answer": "1"}\n')
    verl = tmp_path / "val.parquet"
    pd.DataFrame({"data_source": ["x"], "extra_info": [{"split": "test"}]}).to_parquet(verl)
    fake = tmp_path / "fake.parquet"
    fake.write_text("this is not parquet")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    folder = tmp_path / "folder.parquet"
    folder.mkdir()
    bad_extra = tmp_path / "bad_extra.parquet"
    pd.DataFrame({"extra_info": ['{"split": "test"}']}).to_parquet(bad_extra)
    return argparse.Namespace(
        qa=qa, verl=verl, fake=fake, folder=folder, bad_extra=bad_extra, unwritable=blocker / "o.parquet", tmp=tmp_path
    )


def test_convert_refuses_bad_input_with_one_line(files, capsys):
    out = files.tmp / "out.parquet"
    base = ["--output", out, "--data-source", "aime2024", "--split", "test"]
    refused(capsys, ["convert", files.tmp / "nope.jsonl", *base], "nope.jsonl: no such file")
    refused(capsys, ["convert", files.folder, *base], "folder.parquet: is a directory, expected a file")
    refused(capsys, ["convert", files.fake, *base], "fake.parquet: unreadable parquet file")
    refused(capsys, ["convert", files.qa, *base, "--answer-key", "final"], "no column 'final'")
    (files.tmp / "empty_q.jsonl").write_text('{"problem": "  ", "answer": "1"}\n')
    refused(capsys, ["convert", files.tmp / "empty_q.jsonl", *base], "row 0: 'problem' is empty")
    refused(capsys, ["convert", files.qa, "--output", files.unwritable, "--data-source", "x", "--split", "test"],
            "--output", "cannot be written")  # fmt: skip
    refused(capsys, ["convert", files.qa, "--output", files.folder, "--data-source", "x", "--split", "test"],
            "is a directory")  # fmt: skip
    refused(capsys, ["convert", files.qa, "--output", out, "--data-source", "", "--split", "test"], "--data-source")
    refused(capsys, ["convert", files.qa, "--output", out, "--data-source", "x", "--split", " test"], "--split")
    assert not out.exists() and leftovers(files.tmp) == []


@pytest.mark.parametrize("rows", [0, -1, MAX_ROWS + 1, 10**12])
def test_make_arithmetic_refuses_rows_outside_the_documented_range(tmp_path, capsys, rows):
    out = tmp_path / "a.parquet"
    refused(capsys, ["make-arithmetic", out, "--rows", rows], f"--rows must be between 1 and {MAX_ROWS}, got {rows}")
    assert not out.exists()


def test_make_arithmetic_refuses_a_bad_seed_split_or_output(files, capsys):
    out = files.tmp / "a.parquet"
    refused(capsys, ["make-arithmetic", out, "--seed", "-1"], "--seed must be a whole number >= 0")
    refused(capsys, ["make-arithmetic", out, "--split", ""], "--split must not be empty")
    refused(capsys, ["make-arithmetic", files.unwritable, "--rows", "2"], "cannot be written")
    refused(capsys, ["make-arithmetic", files.folder, "--rows", "2"], "is a directory")
    assert not out.exists() and leftovers(files.tmp) == []
    assert main(["make-arithmetic", str(out), "--rows", "3"]) == 0
    assert capsys.readouterr().out == f"3 arithmetic problems (split='train') -> {out}\n"


def test_mark_split_refuses_bad_input_and_leaves_the_file_as_it_was(files, capsys):
    refused(capsys, ["mark-split", files.tmp / "nope.parquet", "--split", "test"], "no such file")
    refused(capsys, ["mark-split", files.folder, "--split", "test"], "is a directory")
    refused(capsys, ["mark-split", files.fake, "--split", "test"], "unreadable parquet file")
    before = files.bad_extra.read_bytes()
    refused(capsys, ["mark-split", files.bad_extra, "--split", "test"],
            "bad_extra.parquet: row 0: extra_info must be a mapping (or nothing), got str")  # fmt: skip
    assert files.bad_extra.read_bytes() == before
    refused(capsys, ["mark-split", files.verl, "--split", "test", "--output", files.unwritable], "cannot be written")
    refused(capsys, ["mark-split", files.verl, "--split", "  "], "--split must not be empty")
    assert leftovers(files.tmp) == []


def test_has_split_is_2_for_anything_it_cannot_read(files, capsys):
    refused(capsys, ["has-split", files.folder, "test"], "cannot read the splits of", "is a directory")
    refused(capsys, ["has-split", files.fake, "test"], "cannot read the splits of", "unreadable parquet file")
    # mark-split could not mark it either: 2, not 1 ("mark a copy")
    refused(capsys, ["has-split", files.bad_extra, "test"], "extra_info must be a mapping")
    assert main(["has-split", str(files.verl), "test"]) == 0


def test_the_data_cli_prints_what_guarded_prints(files, capsys):
    """python -m arena_verl.data cannot import tools.errors (layer 2); its main() must behave as guarded does."""
    argv = ["convert", str(files.qa), "--output", str(files.unwritable), "--data-source", "x", "--split", "test"]
    assert main(argv) == 2
    ours = capsys.readouterr()
    assert guarded(data_cli.run, data_cli.build_parser().parse_args(argv)) == 2
    assert capsys.readouterr() == ours


def test_a_failed_parquet_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "data.parquet"
    write_parquet([{"a": 1}], path)
    before = path.read_bytes()

    def disk_full(self, handle, *args, **kwargs):
        handle.write(b"PAR1 half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", disk_full)
    with pytest.raises(InputError, match=r"--output .*data.parquet: cannot be written \(No space left on device\)"):
        write_parquet([{"a": 2}], path)
    assert path.read_bytes() == before and leftovers(tmp_path) == []

    def bug(self, handle, *args, **kwargs):
        raise KeyError("a bug is not bad input")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", bug)
    with pytest.raises(KeyError):
        write_parquet([{"a": 2}], path)
    assert path.read_bytes() == before and leftovers(tmp_path) == []


def test_a_new_parquet_file_gets_the_umasks_permissions_and_a_rewritten_one_keeps_its_own(tmp_path):
    path = tmp_path / "new.parquet"
    umask = os.umask(0o022)
    try:
        write_parquet([{"a": 1}], path)
    finally:
        os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    path.chmod(0o640)
    write_parquet([{"a": 2}], path)
    assert path.stat().st_mode & 0o777 == 0o640


# --- prepare (every preset) --------------------------------------------------------------------------------------


def test_prepare_refuses_bad_options(files):
    out = files.tmp / "o.parquet"
    for limit in (0, -3, True):
        with pytest.raises(InputError, match="--limit must be a whole number >= 1"):
            prepare("aime2025", [files.qa], out, limit=limit)
    for split in ("", "   ", " test", "te\nst"):
        with pytest.raises(InputError, match="--split"):
            prepare("aime2025", [files.qa], out, Options(split=split))
    with pytest.raises(InputError, match="--data-source"):
        prepare("aime2025", [files.qa], out, Options(data_source=" "))
    with pytest.raises(InputError, match="no input files"):
        prepare("aime2025", [], out)
    with pytest.raises(InputError, match="is a directory, expected a file"):
        prepare("aime2025", [files.folder], out)
    with pytest.raises(InputError, match="--output .*cannot be written"):
        prepare("aime2025", [files.qa], files.unwritable)
    with pytest.raises(InputError, match="--output .*is a directory"):
        prepare("aime2025", [files.qa], files.folder)
    assert not out.exists() and leftovers(files.tmp) == []


def test_prepare_main_goes_through_guarded(files, capsys):
    code = prepare_command.main(["aime2025", str(files.qa), "--output", str(files.unwritable)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    target = files.unwritable
    assert captured.err == f"error: --output {target}: cannot be written (a part of {target.parent} is not a folder)\n"
    args = argparse.Namespace(
        preset="aime2025", inputs=[files.qa], output=files.unwritable, split=None, seed=0, question_key=None,
        answer_key=None, data_source=None, since=None, public_tests_only=False, reprompt=False, limit=0,
        keep_duplicates=False,
    )  # fmt: skip
    with pytest.raises(InputError):  # run() raises; guarded (main, or the arena-verl command) prints it
        prepare_command.run(args)


def dapo_like(tmp_path, **changes):
    row = {
        "data_source": "math_dapo",
        "prompt": [{"role": "user", "content": "Train problem."}],
        "ability": "MATH",
        "reward_model": {"style": "rule", "ground_truth": "1"},
        "extra_info": {"index": "u0"},
    }
    row.update(changes)
    path = tmp_path / "train.parquet"
    pd.DataFrame([row]).to_parquet(path)
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"data_source": ["a", "b"]}, r"row 0: 'data_source' is a ndarray, expected text"),
        ({"ability": ["math"]}, r"row 0: 'ability' is a ndarray, expected text"),  # `ability or ...` raised
        ({"prompt": [{"role": "user", "content": 5}]}, r"row 0: 'prompt' must be a non-empty list"),
        ({"reward_model": {"style": "rule", "ground_truth": None}}, r"row 0: 'reward_model' has no ground_truth"),
    ],
)
def test_train_mix_rows_of_the_wrong_type_are_refused_naming_the_row(tmp_path, changes, message):
    with pytest.raises(InputError, match=message):
        prepare("train_mix", [dapo_like(tmp_path, **changes)], tmp_path / "o.parquet")


@pytest.mark.parametrize("value", [5, ["a"], None, "  "])
def test_gpqa_fields_of_the_wrong_type_or_missing_are_refused(tmp_path, value):
    import json

    row = {"Question": "Q?", "Correct Answer": "r", "Incorrect Answer 1": "a", "Incorrect Answer 2": "b",
           "Incorrect Answer 3": "c"}  # fmt: skip
    row["Incorrect Answer 2"] = value
    source = tmp_path / "g.jsonl"
    source.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match=r"row 0: 'Incorrect Answer 2' is"):
        prepare("gpqa_diamond", [source], tmp_path / "o.parquet")
    del row["Incorrect Answer 2"]
    source.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError, match=r"missing column\(s\) 'Incorrect Answer 2'"):
        prepare("gpqa_diamond", [source], tmp_path / "o.parquet")


def test_deeply_nested_json_rows_are_refused(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    source = tmp_path / "deep.jsonl"
    source.write_text(f'{{"problem": "Q", "answer": {deep}}}\n')
    with pytest.raises(InputError, match=r"deep.jsonl: line 1 is JSON nested too deeply to read"):
        prepare("aime2025", [source], tmp_path / "o.parquet")
    listing = tmp_path / "deep.json"
    listing.write_text(f'[{{"problem": "Q", "answer": {deep}}}]')
    with pytest.raises(InputError, match=r"deep.json: JSON nested too deeply to read"):
        prepare("aime2025", [listing], tmp_path / "o.parquet")
