"""The one reader of local question/answer files: ``python -m arena_verl.data convert`` and every benchmark preset
(:mod:`arena_verl.data.benchmarks`) read their input through it, so a ground truth means the same thing everywhere.

The rules:

- files: parquet, csv (every cell as text), jsonl (one object per line) or json (a list of objects). JSON is read
  with the stdlib ``json`` module and every number is kept as its source text (:class:`JsonNumber`): ``0.50`` stays
  ``"0.50"`` and a 30-digit answer stays exact, where pandas' type guessing would turn ``"033"`` into ``33.0``;
- an answer is text or a number, kept as written (strings are only stripped of surrounding white space); a missing,
  null, NaN or empty answer is refused, and so are booleans, lists and objects;
- a question is text (a bare number is refused); missing or empty is refused;
- an input that is not a regular file (missing, a directory, a dangling link), cannot be read, is not the format
  its extension says, or is JSON nested more deeply than Python's parser can follow is refused as a whole.

Every refusal is a :class:`DataError` (an :class:`arena_verl.core.errors.InputError`) naming the file, the row and
the column, which the commands print as one line and exit 2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena_verl.core.errors import InputError

__all__ = [
    "ANSWER_ALIASES",
    "QUESTION_ALIASES",
    "DataError",
    "JsonNumber",
    "QuestionAnswer",
    "Row",
    "answer_value",
    "as_list",
    "columns_of",
    "contradiction_error",
    "is_missing",
    "load_json",
    "names",
    "pick_column",
    "question_answers",
    "read_parquet",
    "read_rows",
    "refuse_contradictions",
    "regular_file",
    "require_columns",
    "row_answer",
    "row_text",
    "text_value",
]

QUESTION_ALIASES = ("problem", "question", "Problem", "Question", "prompt")
ANSWER_ALIASES = ("answer", "Answer", "ground_truth", "solution")


class DataError(InputError):
    """An input file that cannot be used; the message names the file, row and column."""


class JsonNumber(str):
    """A JSON number as it was written in the file (``0.50``, ``033`` is not JSON, a 30-digit integer): text, so that
    it is never rounded, but marked so that a question or an option that is a bare number can still be refused."""

    __slots__ = ()


def _non_finite(name: str) -> float:
    """NaN and Infinity are not JSON, but Python's json.dumps writes them: read as floats, so that a NaN answer is
    missing and an infinite one is refused, as from parquet."""
    return float(name)


def _json_float(text: str) -> JsonNumber | float:
    """A float literal as its text, unless it overflows (``1e999``): then the infinity it means, refused like one."""
    return JsonNumber(text) if math.isfinite(float(text)) else float(text)


def load_json(text: str | bytes) -> Any:
    """``json.loads`` with every number kept as its source text (a :class:`JsonNumber`)."""
    return json.loads(text, parse_int=JsonNumber, parse_float=_json_float, parse_constant=_non_finite)


@dataclass(frozen=True)
class Row:
    """One input row and where it came from (for error messages and provenance)."""

    values: dict
    path: Path
    number: int  # 0-based row number in its file

    @property
    def where(self) -> str:
        return f"{self.path}: row {self.number}"


@dataclass(frozen=True)
class QuestionAnswer:
    """A question and its answer, both as text, and the row they came from."""

    row: Row
    question: str
    answer: str


# --- files -> rows ---------------------------------------------------------------------------------------------------


def regular_file(path: str | Path, what: str = "") -> Path:
    """``path`` if it is a regular file (a link to one is fine), else a DataError saying what it is instead."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    try:
        if path.is_file():
            return path
        is_dir, is_link = path.is_dir(), path.is_symlink()
    except OSError as exc:  # a name too long, a link loop on some systems
        raise DataError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    if is_dir:
        raise DataError(f"{label}: is a directory, expected a file")
    if is_link:
        raise DataError(f"{label}: a broken or looping symbolic link")
    if path.exists():
        raise DataError(f"{label}: not a regular file")
    raise DataError(f"{label}: no such file")


def read_parquet(path: str | Path, what: str = ""):
    """A parquet file as a pandas DataFrame; a missing, unreadable or non-parquet file is a DataError naming it."""
    import pandas as pd

    path = regular_file(path, what)
    label = f"{what} {path}" if what else str(path)
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001  (pyarrow and pandas raise many kinds for a broken file)
        raise DataError(f"{label}: unreadable parquet file ({type(exc).__name__}: {exc})") from None


def read_rows(path: str | Path) -> list[Row]:
    """The rows of a local parquet, jsonl, json (a list of objects) or csv file."""
    path = regular_file(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        records = read_parquet(path).to_dict("records")
    elif suffix == ".csv":
        import pandas as pd

        try:  # every cell as text, empty cells as "": answers such as "033" stay as written
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except Exception as exc:  # noqa: BLE001  (pandas raises many kinds for a broken file)
            raise DataError(f"{path}: unreadable csv file ({type(exc).__name__}: {exc})") from None
        records = frame.to_dict("records")
    elif suffix == ".jsonl":
        records = [_json_object(line, path, number) for number, line in enumerate(_lines(path)) if line.strip()]
    elif suffix == ".json":
        records = _json_list(path)
    else:
        raise DataError(f"{path}: unknown extension {suffix or '(none)'!r}; expected .parquet, .jsonl, .json or .csv")
    return [Row(record, path, number) for number, record in enumerate(records)]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _json_object(line: str, path: Path, number: int) -> dict:
    try:
        value = load_json(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {number + 1} is not JSON ({exc.msg})") from None
    except RecursionError:
        raise DataError(f"{path}: line {number + 1} is JSON nested too deeply to read") from None
    if not isinstance(value, dict):
        raise DataError(f"{path}: line {number + 1} is not a JSON object")
    return value


def _json_list(path: Path) -> list[dict]:
    try:
        value = load_json("\n".join(_lines(path)))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise DataError(f"{path}: JSON nested too deeply to read") from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise DataError(f"{path}: expected a JSON list of objects (use .jsonl for one object per line)")
    return value


# --- columns ---------------------------------------------------------------------------------------------------------


def columns_of(rows: list[Row]) -> list[str]:
    """Every column name that some row has (jsonl rows need not share their keys), in first-seen order."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(map(str, row.values)))
    return list(columns)


def names(paths: Sequence[str | Path]) -> str:
    return ", ".join(str(p) for p in paths)


def pick_column(
    columns: list[str], explicit: str | None, aliases: Sequence[str], what: str, flag: str, paths: Sequence
) -> str:
    """``explicit`` if given (it must exist), else the first of ``aliases`` present."""
    if explicit is not None:
        if explicit not in columns:
            raise DataError(f"{names(paths)}: no column {explicit!r} (columns: {', '.join(columns) or 'none'})")
        return explicit
    for alias in aliases:
        if alias in columns:
            return alias
    raise DataError(
        f"{names(paths)}: no {what} column (tried {', '.join(aliases)}; columns: {', '.join(columns) or 'none'}); "
        f"name it with {flag}"
    )


def require_columns(columns: list[str], required: Sequence[str], paths: Sequence) -> None:
    missing = [name for name in required if name not in columns]
    if missing:
        raise DataError(
            f"{names(paths)}: missing column(s) {', '.join(map(repr, missing))} "
            f"(columns: {', '.join(columns) or 'none'})"
        )


# --- values ----------------------------------------------------------------------------------------------------------


def is_missing(value: Any) -> bool:
    """None, NaN (pandas' missing cell) or blank text."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def as_list(value: Any) -> list | None:
    """A list, tuple or array as a list (lists come back from parquet as numpy arrays); None for anything else."""
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        listed = value.tolist()
        return listed if isinstance(listed, list) else None
    return None


def _kind(value: Any) -> str:
    return "number" if isinstance(value, JsonNumber) else type(value).__name__


def text_value(value: Any, where: str) -> str:
    """A question (or another text cell), stripped; ``where`` names the file, row and column."""
    if is_missing(value):
        raise DataError(f"{where} is empty")
    if not isinstance(value, str) or isinstance(value, JsonNumber):
        raise DataError(f"{where} is a {_kind(value)}, expected text")
    return value.strip()


def answer_value(value: Any, where: str) -> str:
    """An answer as text, as written: a JSON number keeps its source text (``0.50``), a string is only stripped.
    From parquet, an integral float (an int column with gaps, ``204.0``) becomes ``"204"``."""
    if is_missing(value):
        raise DataError(f"{where} is empty")
    is_bool = isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b"
    if is_bool or as_list(value) is not None or isinstance(value, dict):
        raise DataError(f"{where} is a {type(value).__name__}, expected a number or text")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(f"{where} is {value}, expected a number or text")
        if value.is_integer():
            return str(int(value))
    return str(value).strip()


def row_text(row: Row, column: str) -> str:
    return text_value(row.values.get(column), f"{row.where}: {column!r}")


def row_answer(row: Row, column: str) -> str:
    return answer_value(row.values.get(column), f"{row.where}: {column!r}")


def contradiction_error(clashes: list[tuple[str, str, str, str]]) -> DataError:
    """The error for questions asked twice with different answers: ``(first row, its answer, second row, its
    answer)`` per clash, the first few named (a verifier could not know which answer is the question's)."""
    shown = "; ".join(f"{a} ({_short_answer(x)}) and {b} ({_short_answer(y)})" for a, x, b, y in clashes[:3])
    more = f"; ... ({len(clashes)} in all)" if len(clashes) > 3 else ""
    return DataError(
        f"{len(clashes)} question(s) asked twice with different answers: {shown}{more}; keep one answer per question"
    )


def refuse_contradictions(pairs: list[QuestionAnswer]) -> None:
    """A :class:`DataError` naming the rows when one question text has two different answers."""
    first: dict[str, QuestionAnswer] = {}
    clashes = []
    for pair in pairs:
        earlier = first.setdefault(pair.question, pair)
        if earlier.answer != pair.answer:
            clashes.append((earlier.row.where, earlier.answer, pair.row.where, pair.answer))
    if clashes:
        raise contradiction_error(clashes)


def _short_answer(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[: limit - 3] + "...")


def question_answers(
    rows: list[Row],
    question_key: str | None = None,
    answer_key: str | None = None,
    *,
    question_aliases: Sequence[str] = QUESTION_ALIASES,
    answer_aliases: Sequence[str] = ANSWER_ALIASES,
) -> list[QuestionAnswer]:
    """Each row's question and answer as text. The columns are ``question_key``/``answer_key`` when given, else the
    first alias present; a row without a usable question or answer is a DataError naming it."""
    columns, paths = columns_of(rows), sorted({row.path for row in rows})
    question = pick_column(columns, question_key, question_aliases, "question", "--question-key", paths)
    answer = pick_column(columns, answer_key, answer_aliases, "answer", "--answer-key", paths)
    return [QuestionAnswer(row, row_text(row, question), row_answer(row, answer)) for row in rows]
