"""``arena-verl score``'s score file belongs to one dump and survives any interruption: a torn last line of any
length is dropped (a corrupt line before it is refused, naming it), a file resumed on another run's dump is
refused, a full disk ends in one line and the rerun continues, an unwritable --out is one error line."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

import arena_verl.tools.common.resumable_file as resumable_file
from arena_verl.tools.score import read_score_file
from helpers.score_dumps import PATTERNS, keys_of, non_diverse_keys, score, write_dump


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("rollouts") / "rollout_data", PATTERNS)


@pytest.fixture(scope="module")
def other_run(tmp_path_factory) -> Path:
    """Another run's dump: the same layout and responses, other prompt uuids (so no group key collides)."""
    folder = write_dump(tmp_path_factory.mktemp("other") / "rollout_data", PATTERNS)
    for path in folder.glob("*.jsonl"):
        path.write_text(path.read_text().replace("5f0a7c3b-", "9e1d4a22-"))
    return folder


def errors(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("tail", [b'{"st', b"{", b'{"step":3,"gro', b"\x00\x00garbage \xff"])
def test_a_torn_last_line_of_any_length_is_dropped(dump, tmp_path, capsys, tail):
    out = tmp_path / "scores.jsonl"
    assert score(dump, out) == 0
    kept = b"".join(out.read_bytes().splitlines(keepends=True)[:2])
    out.write_bytes(kept + tail)
    capsys.readouterr()
    assert score(dump, out) == 0
    assert f"dropped a torn last line ({len(tail)} bytes)" in capsys.readouterr().out
    assert out.read_bytes().startswith(kept)
    assert sorted(keys_of(read_score_file(out))) == sorted(non_diverse_keys(PATTERNS))


def test_a_torn_first_line_shorter_than_the_key_prefix_is_dropped(dump, tmp_path, capsys):
    out = tmp_path / "scores.jsonl"
    out.write_bytes(b'{"st')  # killed after 4 bytes of the first line
    assert score(dump, out) == 0
    assert "dropped a torn last line (4 bytes)" in capsys.readouterr().out
    assert sorted(keys_of(read_score_file(out))) == sorted(non_diverse_keys(PATTERNS))


def test_a_one_line_file_that_is_no_score_file_is_refused_untouched(dump, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"my notes, no newline")
    assert score(dump, notes) == 2
    assert notes.read_bytes() == b"my notes, no newline"
    (line,) = errors(capsys)
    assert "line 1: not a score line" in line


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (b"garbage\n", "line 2: not JSON"),
        (b"\n", "line 2: not JSON"),
        (b'{"step": "x"}\n', "line 2: not a score line (no group"),
    ],
)
def test_a_corrupt_line_in_the_middle_is_refused_with_its_number(dump, tmp_path, capsys, corrupt, message):
    out = tmp_path / "scores.jsonl"
    assert score(dump, out) == 0
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(lines[0] + corrupt + b"".join(lines[1:]))
    before = out.read_bytes()
    capsys.readouterr()
    assert score(dump, out) == 2
    (line,) = errors(capsys)
    assert message in line
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    "change, message",
    [
        ({"step": "3"}, "step '3' is not a step number"),
        ({"group": ["a"]}, "group is not a string"),
        ({"rewards": ["a"]}, "rewards is not a list of numbers"),
        ({"judge_calls": -1}, "judge_calls is not a count"),
        ({"sample_digests": "abc"}, "sample_digests is not a list of strings"),
    ],
)
def test_a_line_of_the_wrong_types_is_refused_with_its_number(dump, tmp_path, capsys, change, message):
    out = tmp_path / "scores.jsonl"
    assert score(dump, out) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    lines[1].update(change)
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    capsys.readouterr()
    assert score(dump, out) == 2
    (line,) = errors(capsys)
    assert f"line 2: not a score line ({message})" in line


def test_a_score_file_resumed_on_another_runs_dump_is_refused(dump, other_run, tmp_path, capsys):
    out = tmp_path / "scores.jsonl"
    assert score(dump, out, "--step", "3") == 0
    before = out.read_bytes()
    capsys.readouterr()
    assert score(other_run, out, "--step", "3") == 2  # before: both runs' groups merged without a word
    (line,) = errors(capsys)
    assert "was scored on another dump's step file" in line and "write to another --out" in line
    assert score(other_run, out, "--step", "4") == 2  # a step not read this time: still its file's identity
    assert "another dump's step file" in errors(capsys)[0]
    only_four = write_dump(tmp_path / "only_four", {4: PATTERNS[4]})
    assert score(only_four, out) == 2
    assert "this dump has no step 3 file" in errors(capsys)[0]
    assert out.read_bytes() == before


def test_an_old_score_file_without_dump_identity_is_checked_by_group_keys(dump, other_run, tmp_path, capsys):
    out = tmp_path / "old.jsonl"
    assert score(dump, out, "--step", "3") == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    for line in lines:
        del line["dump_file"]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    capsys.readouterr()
    assert score(other_run, out, "--step", "3") == 2
    assert "this dump's step 3 has no such group" in errors(capsys)[0]
    assert score(dump, out) == 0
    printed = capsys.readouterr().out
    assert f"{len(lines)} line(s) from before score files recorded their dump" in printed
    assert sorted(keys_of(read_score_file(out))) == sorted(non_diverse_keys(PATTERNS))


def test_a_full_disk_ends_in_one_line_and_the_rerun_continues(dump, tmp_path, capsys, monkeypatch):
    out = tmp_path / "scores.jsonl"
    real_write, writes = resumable_file.os.write, []

    def write(fd, data):
        writes.append(len(data))
        if len(writes) == 3:  # the third line: half written, then the disk is full
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(resumable_file.os, "write", write)
    assert score(dump, out, "--concurrency", "1") == 1
    (line,) = errors(capsys)
    assert line.startswith(f"error: {out}: cannot append (No space left on device)")
    assert "2 groups are in the file" in line and "rerun the same command to continue" in line
    monkeypatch.setattr(resumable_file.os, "write", real_write)
    assert score(dump, out) == 0
    printed = capsys.readouterr().out
    assert "dropped a torn last line" in printed and "2 groups already scored" in printed
    keys = keys_of(read_score_file(out))
    assert sorted(keys) == sorted(non_diverse_keys(PATTERNS)) and len(keys) == len(set(keys))


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_an_unwritable_out_is_one_error_line(dump, tmp_path, capsys, where):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    target = blocker / "scores.jsonl" if where == "under a file" else tmp_path
    assert score(dump, target) == 2
    (line,) = errors(capsys)
    assert line.startswith(f"error: --out {target}: cannot be written")
