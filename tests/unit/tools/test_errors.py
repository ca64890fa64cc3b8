"""The commands' one error path (arena_verl.core.errors)."""

import os

import pytest

from arena_verl.core.errors import InputError, guarded, write_output


def test_bad_input_is_one_line_and_exit_2(capsys):
    def refuse(_):
        raise InputError("data.jsonl: row 3:\n  no 'answer'")

    assert guarded(refuse, None) == 2
    assert capsys.readouterr().err == "error: data.jsonl: row 3: no 'answer'\n"
    assert guarded(lambda _: 1, None) == 1 and guarded(lambda _: None, None) == 0


def test_anything_else_is_a_bug_and_keeps_its_traceback():
    with pytest.raises(ZeroDivisionError):
        guarded(lambda _: 1 / 0, None)


def test_an_output_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "report.json"
    write_output(target, "{}")
    assert target.read_text() == "{}"

    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(InputError, match=r"--json .*report.json: cannot be written \(No space left on device\)"):
        write_output(target, '{"new": 1}', what="--json")
    assert target.read_text() == "{}"  # the old file, untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.json"]  # no temporary left


def test_an_unwritable_place_is_bad_input(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="cannot be written"):
        write_output(blocker / "out.json", "{}")
