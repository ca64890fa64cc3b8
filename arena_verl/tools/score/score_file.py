"""The score file (``--out``): one JSON line per judged group, with the guarantees of every resumable file
(:mod:`arena_verl.tools.common.resumable_file`: locked for one run, repaired after a kill, appended whole, one
experiment's settings on every line), of one dump (each line's ``dump_file``: the identity of the step file its group
came from, checked by the command)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from arena_verl.core.counts import is_count
from arena_verl.data.dump_files import EvaluationInputError
from arena_verl.tools.common.resumable_file import LineFormat, ResumableFile, read_lines

__all__ = [
    "LINE_KEYS",
    "RUN_KEYS",
    "ScoreFile",
    "ScoreInputError",
    "ScoreWriteError",
    "read_score_file",
    "settings_text",
]

# What every line of one score file shares: the judge (its spec and verdict mode) and schedule, and how the groups
# were verified (which groups count as non-diverse depends on it).
RUN_KEYS = ("judge", "strategy", "budget", "seed", "verification", "wait_for_verdicts", "verdict")
# A line written before a key existed was scored with this value of it: the schedule was run_tournament's, the
# verdicts were generated.
LEGACY_RUN_VALUES = {"wait_for_verdicts": True, "verdict": "generate"}
# What the report and the comparison read from every line.
LINE_KEYS = ("step", "group", "rewards", "sample_digests", "judge_calls", "failures", "first_wins", "decided")


class ScoreInputError(EvaluationInputError):
    """Input the command cannot use as given (the message names the file, line or option)."""


class ScoreWriteError(OSError):
    """A line could not be appended (a full disk, an I/O error): the file holds whole lines and at most a torn
    last one, which the next run drops; rerunning continues."""


class ScoreFile(ResumableFile):
    """The ``--out`` file. ``done`` holds the (step, group) keys already in it; ``lines`` every record, appended ones
    included; ``by_key`` the records by (step, group)."""

    def __init__(self, path: Path):
        super().__init__(path, SCORE_LINES)

    @property
    def done(self) -> set[tuple[int | None, str]]:
        return set(self.by_key)


def read_score_file(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a score file (a torn last line, from a run still going or killed, is left out)."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise ScoreInputError(f"{path}: cannot read ({exc.strerror})") from None
    return read_lines(Path(path), content[: content.rfind(b"\n") + 1], SCORE_LINES)


def settings_text(settings: dict[str, Any]) -> str:
    return SCORE_LINES.settings_text(settings)


def _wrong_type(record: dict[str, Any]) -> str | None:
    """What in a line the report cannot read (None: nothing)."""

    def finite(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    if record["step"] is not None and not is_count(record["step"]):
        return f"step {record['step']!r} is not a step number"
    if not isinstance(record["group"], str):
        return "group is not a string"
    if not isinstance(record["rewards"], list) or not all(finite(r) for r in record["rewards"]):
        return "rewards is not a list of numbers"
    digests = record["sample_digests"]
    if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
        return "sample_digests is not a list of strings"
    bad = [key for key in ("judge_calls", "failures", "decided") if not is_count(record[key])]
    if bad:
        return f"{bad[0]} is not a count"
    # a sum of soft outcomes (a count for hard verdicts), at most one per decided verdict
    if not (finite(record["first_wins"]) and 0 <= record["first_wins"] <= record["decided"]):
        return "first_wins is not a number between 0 and decided"
    if "dump_file" in record and not isinstance(record["dump_file"], (str, type(None))):
        return "dump_file is not a string"
    return None


SCORE_LINES = LineFormat(
    noun="score",
    command="score",
    line_start=b'{"step":',  # every line this command writes starts so: a torn last line does too
    run_keys=RUN_KEYS,
    required=LINE_KEYS,
    check=_wrong_type,
    key=lambda line: (line["step"], line["group"]),
    input_error=ScoreInputError,
    write_error=ScoreWriteError,
    legacy_values=LEGACY_RUN_VALUES,
    written_with="scored",
)
