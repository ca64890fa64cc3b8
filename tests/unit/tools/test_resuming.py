"""The one run around a resumable file (``score``, ``audit-judge``): Ctrl-C ends it with 130 and a line of what is
kept, a line that cannot be appended with 1 and a line saying nothing done is lost, anything else goes through; the
file is closed (its lock released) however the run ends; a resumed file's notes go to the stream the command
chose."""

from __future__ import annotations

import io

import pytest

from arena_verl.core.errors import EXIT_FAILED
from arena_verl.tools.common.resumable_file import LineFormat, ResumableFile
from arena_verl.tools.common.resuming import EXIT_INTERRUPTED, ResumableRun


class Refused(ValueError):
    pass


class Unwritable(OSError):
    pass


FORMAT = LineFormat(
    noun="unit",
    command="unit",
    line_start=b'{"unit"',
    run_keys=("seed",),
    required=("unit",),
    check=lambda record: None,
    key=lambda record: record["unit"],
    input_error=Refused,
    write_error=Unwritable,
)
SETTINGS = {"seed": 0}


def units(path, *numbers: int) -> ResumableFile:
    """The file at ``path`` opened, with ``numbers`` appended."""
    out = ResumableFile(path, FORMAT)
    out.open(SETTINGS)
    for number in numbers:
        out.append({"unit": number, "seed": 0})
    return out


def test_ctrl_c_ends_the_run_with_130_saying_what_is_kept_and_releases_the_file(tmp_path, capsys):
    out = ResumableFile(tmp_path / "units.jsonl", FORMAT)
    with ResumableRun(out, units="pairs", done="judged") as run:
        out.open(SETTINGS)
        out.append({"unit": 1, "seed": 0})
        out.append({"unit": 2, "seed": 0})
        raise KeyboardInterrupt
    assert run.exit_code == EXIT_INTERRUPTED == 130 and out.fd is None
    captured = capsys.readouterr()
    assert captured.err == f"interrupted: 2 pairs in {out.path}; rerun the same command to resume\n"
    assert captured.out == ""
    again = units(out.path)  # the lock is free and the two lines are kept
    assert sorted(again.by_key) == [1, 2]
    again.close()


def test_a_line_that_cannot_be_appended_ends_the_run_with_1_and_nothing_done_is_lost(tmp_path, capsys):
    out = ResumableFile(tmp_path / "units.jsonl", FORMAT)
    with ResumableRun(out, units="groups", done="scored") as run:
        out.open(SETTINGS)
        out.append({"unit": 1, "seed": 0})
        raise Unwritable("units.jsonl: cannot append (No space left on device)")
    assert run.exit_code == EXIT_FAILED and out.fd is None
    assert capsys.readouterr().err == (
        "error: units.jsonl: cannot append (No space left on device); 1 groups are in the file and nothing scored "
        "is lost: free space and rerun the same command to continue\n"
    )


def test_any_other_error_goes_through_and_the_file_is_closed(tmp_path, capsys):
    out = ResumableFile(tmp_path / "units.jsonl", FORMAT)
    with pytest.raises(Refused, match="bad input"), ResumableRun(out, units="pairs", done="judged"):
        out.open(SETTINGS)
        raise Refused("bad input")
    assert out.fd is None and capsys.readouterr().err == ""
    with ResumableRun(out, units="pairs", done="judged") as run:  # a run to its end: no exit status of its own
        out.open(SETTINGS)
    assert run.exit_code is None and out.fd is None


def test_a_resumed_file_is_noted_on_the_commands_stream(tmp_path, capsys):
    path = tmp_path / "units.jsonl"
    units(path, 1, 2, 3).close()
    with path.open("ab") as handle:
        handle.write(b'{"unit": 4, "se')  # a kill in the middle of a line
    out = ResumableFile(path, FORMAT)
    notes = io.StringIO()
    with ResumableRun(out, units="groups", done="scored", notes=notes) as run:
        out.open(SETTINGS)
        run.note_resumed(already=3, todo=2)
    assert notes.getvalue() == (
        f"{path}: dropped a torn last line (15 bytes) left by an interrupted run\n"
        f"{path}: 3 groups already scored; 2 to go\n"
    )
    assert capsys.readouterr().err == ""
    out = ResumableFile(path, FORMAT)  # repaired now: nothing to drop
    with ResumableRun(out, units="pairs", done="judged") as run:  # the default stream: stderr
        out.open(SETTINGS)
        run.note_resumed(already=0, todo=5)  # nothing repaired, nothing done yet: nothing to say
        run.note_resumed(already=1, todo=4)
    assert capsys.readouterr().err == f"{path}: 1 pairs already judged; 4 to go\n"
