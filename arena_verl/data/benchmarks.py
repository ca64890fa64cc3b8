"""The paper's benchmarks and training mix as verl parquet files, converted from local copies of the public sets.

Nothing is downloaded: each preset reads a file (parquet, jsonl, json or csv, as the public set ships it) and writes
verl's layout, one row per problem (as ``arena_verl.data`` does for a plain question/answer file):

- ``prompt``: one user message; ``data_source``: picks the scorer; ``ability``;
- ``reward_model = {"style": "rule", "ground_truth": <text>}``;
- ``extra_info``: ``split`` (``test`` for the evaluation sets, ``train`` for the mix), ``index`` (0..n-1 in the
  output), ``benchmark``, ``source`` (the hub id), ``source_row`` and, where the set has one, ``source_id``; GPQA adds
  the shown ``choices`` and ``correct_choice``, LiveCodeBench the problem's metadata. Ids are text in every preset so
  that verl can load several of these files as one data set (their ``extra_info`` structs are merged).

=================  =======================================  ==========================  ===================  =======
preset             source                                   data_source                 ground truth         scorer
=================  =======================================  ==========================  ===================  =======
aime2024           BytedTsinghua-SIA/AIME-2024              aime2024                    the answer           math
aime2025           MathArena/aime_2025                      aime2025                    the answer           math
aime2026           MathArena/aime_2026                      aime2026                    the answer           math
beyondaime         ByteDance-Seed/BeyondAIME                beyondaime                  the answer           math
gpqa_diamond       Idavidrein/gpqa (gpqa_diamond)           gpqa_diamond                a letter A-D         choice
livecodebench_v6   livecodebench/code_generation_lite (v6)  codecontests                JSON test cases      sandbox
train_mix          a local math question/answer file        the file's own, or math     the answer           math
=================  =======================================  ==========================  ===================  =======

Rows whose prompt and ground truth repeat an earlier row are dropped (the DAPO copies of AIME-2024 and
DAPO-Math-17k repeat every problem many times); ``keep_duplicates=True`` keeps them.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import io
import json
import math
import pickle
import random
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena_verl.data.convert import MATH_SUFFIX, _verl_row, _write

__all__ = [
    "PRESETS",
    "DataError",
    "Options",
    "Preset",
    "Report",
    "decode_test_cases",
    "gpqa_choices",
    "prepare",
    "read_rows",
]

GPQA_SUFFIX = "Please reason step by step, and put the letter of the correct choice (A, B, C or D) within \\boxed{}."
LETTERS = "ABCD"
QUESTION_ALIASES = ("problem", "question", "Problem", "Question", "prompt")
ANSWER_ALIASES = ("answer", "Answer", "ground_truth", "solution")
ID_ALIASES = ("id", "problem_idx", "ID", "Record ID", "question_id", "unique_id")
# A compressed LiveCodeBench test blob is a few MB; this bounds what a hostile file could make us allocate.
MAX_DECOMPRESSED_BYTES = 512 * 2**20


class DataError(ValueError):
    """An input file this converter cannot use; the message names the file, row and column."""


@dataclass(frozen=True)
class Options:
    """What the command line can change; every preset reads the fields that concern it."""

    split: str | None = None  # default: the preset's (test for evaluation sets, train for the mix)
    seed: int = 0  # GPQA: seeds the shuffle of the four options
    question_key: str | None = None  # default: the first of QUESTION_ALIASES found
    answer_key: str | None = None  # default: the first of ANSWER_ALIASES found
    data_source: str | None = None  # default: the preset's
    since: str | None = None  # LiveCodeBench: keep problems with contest_date >= since (ISO date)
    public_tests_only: bool = False  # LiveCodeBench: ignore private_test_cases
    reprompt: bool = False  # train_mix in verl's layout: rebuild the prompt as problem + MATH_SUFFIX


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
class Preset:
    """A benchmark: where its file comes from, which columns it needs, and how a row becomes verl records."""

    name: str
    source: str  # the hub id of the public set (provenance only: nothing is downloaded)
    columns: str  # the expected columns, for ``prepare.py list`` and error messages
    data_source: str
    ability: str
    split: str
    build: Callable[[Preset, list[Row], Options], list[dict]] = field(repr=False)


@dataclass
class Report:
    """What ``prepare`` wrote and what it left out."""

    rows: int
    data_source: str
    split: str
    dropped_duplicates: int = 0
    notes: list[str] = field(default_factory=list)


# --- reading ---------------------------------------------------------------------------------------------------


def read_rows(path: str | Path) -> list[Row]:
    """The rows of a local parquet, jsonl, json (a list of objects) or csv file.

    json and jsonl are read with the json module, not pandas, so that answers such as ``"033"`` stay text."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".csv"):
        import pandas as pd

        try:
            if suffix == ".parquet":
                frame = pd.read_parquet(path)
            else:  # every cell as text, empty cells as "": answers such as "033" stay as written
                frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except Exception as exc:  # noqa: BLE001  (pyarrow and pandas raise many kinds for a broken file)
            raise DataError(f"{path}: unreadable {suffix[1:]} file ({type(exc).__name__}: {exc})") from None
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


def _json_object(line: str, path: Path, number: int) -> dict:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {number + 1} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise DataError(f"{path}: line {number + 1} is not a JSON object")
    return value


def _json_list(path: Path) -> list[dict]:
    try:
        value = json.loads("\n".join(_lines(path)))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise DataError(f"{path}: expected a JSON list of objects (use .jsonl for one object per line)")
    return value


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _as_list(value: Any) -> list | None:
    """Lists come back from parquet as numpy arrays."""
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        listed = value.tolist()
        return listed if isinstance(listed, list) else None
    return None


def _pick_column(columns: list[str], explicit: str | None, aliases: Sequence[str], what: str, flag: str, paths) -> str:
    if explicit is not None:
        if explicit not in columns:
            raise DataError(f"{_names(paths)}: no column {explicit!r} (columns: {', '.join(columns) or 'none'})")
        return explicit
    for alias in aliases:
        if alias in columns:
            return alias
    raise DataError(
        f"{_names(paths)}: no {what} column (tried {', '.join(aliases)}; columns: {', '.join(columns) or 'none'}); "
        f"name it with {flag}"
    )


def _require_columns(columns: list[str], required: Sequence[str], paths) -> None:
    missing = [name for name in required if name not in columns]
    if missing:
        raise DataError(
            f"{_names(paths)}: missing column(s) {', '.join(map(repr, missing))} "
            f"(columns: {', '.join(columns) or 'none'})"
        )


def _names(paths) -> str:
    return ", ".join(str(p) for p in paths)


def _text(row: Row, column: str) -> str:
    value = row.values.get(column)
    if _missing(value):
        raise DataError(f"{row.where}: {column!r} is empty")
    if not isinstance(value, str):
        raise DataError(f"{row.where}: {column!r} is a {type(value).__name__}, expected text")
    return value.strip()


def _answer_text(row: Row, column: str) -> str:
    """An answer as text: ``204.0`` (an int column with gaps, read by pandas) becomes ``"204"``."""
    value = row.values.get(column)
    if _missing(value):
        raise DataError(f"{row.where}: {column!r} is empty")
    if isinstance(value, bool) or _as_list(value) is not None or isinstance(value, dict):
        raise DataError(f"{row.where}: {column!r} is a {type(value).__name__}, expected a number or text")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _source_id(row: Row) -> dict:
    for alias in ID_ALIASES:
        if not _missing(row.values.get(alias)):
            return {"source_id": str(row.values[alias])}
    return {}


# --- math: the AIME sets, BeyondAIME, the training mix ----------------------------------------------------------

# The instruction DAPO's files wrap every problem in ("... of the form Answer: $Answer ...", "Remember to put your
# answer on its own line after ..."); removed so that every AIME year is asked the same way (MATH_SUFFIX).
_DAPO_PREFIX = re.compile(r"\ASolve the following math problem step by step\..*?\n\n", re.DOTALL)
_DAPO_SUFFIX = re.compile(r"\n\nRemember to put your answer on its own line after .*\Z", re.DOTALL)


def _in_verl_layout(columns: list[str]) -> bool:
    return "prompt" in columns and "reward_model" in columns


def _verl_messages(row: Row) -> list[dict]:
    messages = _as_list(row.values.get("prompt"))
    if not messages or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        raise DataError(f"{row.where}: 'prompt' must be a non-empty list of chat messages with text content")
    if not any(m.get("role") == "user" and m["content"].strip() for m in messages):
        raise DataError(f"{row.where}: 'prompt' has no user message")
    return [{"role": str(m.get("role")), "content": m["content"]} for m in messages]


def _verl_problem(row: Row) -> str:
    """The problem inside a verl-layout row: its last user message, without DAPO's answer-format instruction."""
    user = [m["content"] for m in _verl_messages(row) if m["role"] == "user"][-1]
    problem = _DAPO_SUFFIX.sub("", _DAPO_PREFIX.sub("", user.strip())).strip()
    if not problem:
        raise DataError(f"{row.where}: the user message holds no problem")
    return problem


def _verl_ground_truth(row: Row) -> str:
    reward_model = row.values.get("reward_model")
    if not isinstance(reward_model, dict) or _missing(reward_model.get("ground_truth")):
        raise DataError(f"{row.where}: 'reward_model' has no ground_truth")
    truth = reward_model["ground_truth"]
    return str(int(truth)) if isinstance(truth, float) and truth.is_integer() else str(truth).strip()


def _math_questions(rows: list[Row], columns: list[str], options: Options) -> list[tuple[Row, str, str]]:
    """(row, problem, answer) from verl-layout rows or from question/answer columns."""
    paths = sorted({row.path for row in rows})
    if _in_verl_layout(columns) and options.question_key is None and options.answer_key is None:
        return [(row, _verl_problem(row), _verl_ground_truth(row)) for row in rows]
    question = _pick_column(columns, options.question_key, QUESTION_ALIASES, "question", "--question-key", paths)
    answer = _pick_column(columns, options.answer_key, ANSWER_ALIASES, "answer", "--answer-key", paths)
    return [(row, _text(row, question), _answer_text(row, answer)) for row in rows]


def build_math_benchmark(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """Problem + MATH_SUFFIX; the ground truth is the answer as text."""
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    records = []
    for row, problem, answer in _math_questions(rows, _columns_of(rows), options):
        record = _verl_row(data_source, f"{problem}\n\n{MATH_SUFFIX}", answer, split, 0, preset.ability)
        records.append(_with_provenance(record, preset, row))
    return records


def build_train_mix(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """verl-layout rows (DAPO-Math-17k) pass through with split=train; plain question/answer rows are built as the
    benchmarks are. ``options.data_source`` overrides the file's own."""
    columns, split = _columns_of(rows), options.split or preset.split
    if not _in_verl_layout(columns) or options.reprompt or options.question_key or options.answer_key:
        plain = dataclasses.replace(options, data_source=options.data_source or preset.data_source)
        return build_math_benchmark(preset, rows, plain)
    records = []
    for row in rows:
        data_source = options.data_source or row.values.get("data_source")
        if _missing(data_source):
            raise DataError(f"{row.where}: no data_source (pass --data-source)")
        ability = row.values.get("ability")
        record = _verl_row(str(data_source), "", _verl_ground_truth(row), split, 0, str(ability or preset.ability))
        record["prompt"] = _verl_messages(row)
        extra = row.values.get("extra_info")
        if isinstance(extra, dict) and not _missing(extra.get("index")):
            record["extra_info"]["source_id"] = str(extra["index"])  # DAPO's uuid; ours is the output row number
        records.append(_with_provenance(record, preset, row))
    return records


def _columns_of(rows: list[Row]) -> list[str]:
    """Every column name that some row has (jsonl rows need not share their keys), in first-seen order."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(map(str, row.values)))
    return list(columns)


def _with_provenance(record: dict, preset: Preset, row: Row, **extra) -> dict:
    record["extra_info"].update(
        benchmark=preset.name, source=preset.source, source_row=row.number, **_source_id(row), **extra
    )
    return record


# --- GPQA-Diamond -----------------------------------------------------------------------------------------------

GPQA_COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def gpqa_choices(question: str, correct: str, incorrect: Sequence[str], seed: int) -> tuple[list[str], str]:
    """The four answers in the order shown (A-D) and the letter of the correct one.

    The order is a permutation drawn by ``random.Random`` seeded with SHA-256 of ``seed`` and the question text: the
    same question gets the same order on every machine and run, whatever its row number or the other rows."""
    digest = hashlib.sha256(f"{seed}\x00{question}".encode()).digest()
    order = random.Random(int.from_bytes(digest[:8], "big")).sample(range(4), 4)
    answers = [correct, *incorrect]
    choices = [answers[i] for i in order]
    return choices, LETTERS[order.index(0)]


def gpqa_prompt(question: str, choices: Sequence[str]) -> str:
    options = "\n".join(f"{letter}) {choice}" for letter, choice in zip(LETTERS, choices))
    return f"{question}\n\n{options}\n\n{GPQA_SUFFIX}"


def build_gpqa(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """A multiple-choice prompt with shuffled options; the ground truth is the correct letter."""
    _require_columns(_columns_of(rows), GPQA_COLUMNS, sorted({row.path for row in rows}))
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    records = []
    for row in rows:
        question, correct, *incorrect = (_text(row, column) for column in GPQA_COLUMNS)
        normalised = [" ".join(answer.split()).casefold() for answer in incorrect]
        if " ".join(correct.split()).casefold() in normalised:
            raise DataError(f"{row.where}: the correct answer {correct[:60]!r} is also a distractor")
        choices, letter = gpqa_choices(question, correct, incorrect, options.seed)
        record = _verl_row(data_source, gpqa_prompt(question, choices), letter, split, 0, preset.ability)
        records.append(_with_provenance(record, preset, row, choices=choices, correct_choice=letter))
    return records


# --- LiveCodeBench ----------------------------------------------------------------------------------------------

LCB_REQUIRED = ("question_content", "public_test_cases")
LCB_PREAMBLE = (
    "Solve the following programming problem in Python 3. Your program must be correct and efficient: it is run "
    "against hidden tests."
)
LCB_FUNCTIONAL = (
    "Complete the starter code below. End your answer with the whole solution in a single ```python code block."
)
LCB_STDIN = (
    "Your program reads the input from standard input and writes the answer to standard output. End your answer "
    "with the whole program in a single ```python code block."
)


# verl 0.9.1's sandbox wrapper star-imports these modules above the solution and looks the function up in globals()
# before trying Solution().<name>: a LeetCode method named like one of theirs (``add``, ``count``) is never called.
_SANDBOX_STAR_IMPORTS = (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
    "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing",
)  # fmt: skip


def sandbox_shadowed_names() -> frozenset[str]:
    """The names verl's sandbox wrapper defines before the solution (see _SANDBOX_STAR_IMPORTS)."""
    import importlib

    names = set(_SANDBOX_STAR_IMPORTS)
    for module_name in _SANDBOX_STAR_IMPORTS:
        module = importlib.import_module(module_name)
        names.update(getattr(module, "__all__", None) or (n for n in dir(module) if not n.startswith("_")))
    return frozenset(names)


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Builds only plain values (str, bytes, numbers, lists, dicts): every class, function or module lookup is
    refused, so a pickle cannot construct or call anything (the "restricting globals" recipe of the pickle docs)."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def decode_test_cases(text: Any, where: str) -> list[dict]:
    """Test cases from LiveCodeBench's JSON text, or from its compressed form: base64 of zlib of a pickled JSON
    string (the private tests). The pickle is read by an unpickler that refuses every global, and the
    decompression stops at MAX_DECOMPRESSED_BYTES."""
    if not isinstance(text, str | bytes) or not text.strip():
        raise DataError(f"{where}: empty")
    try:
        cases = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        cases = json.loads(_unpack(text, where))
    if not isinstance(cases, list) or not all(
        isinstance(case, dict) and isinstance(case.get("input"), str) and isinstance(case.get("output"), str)
        for case in cases
    ):
        raise DataError(f"{where}: expected a list of test cases with text 'input' and 'output'")
    return cases


def _unpack(text: str | bytes, where: str) -> str:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(base64.b64decode(text, validate=True), MAX_DECOMPRESSED_BYTES)
        too_large = bool(inflater.unconsumed_tail)
        value = None if too_large else _NoGlobalsUnpickler(io.BytesIO(raw)).load()
    # A corrupt pickle can raise almost anything from the unpickler's opcodes (KeyError on a bad memo, IndexError
    # on an empty stack, ...): all of it means "not test cases", never a traceback.
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError, KeyError, IndexError,
            TypeError, AttributeError, OverflowError, MemoryError, RecursionError) as exc:  # fmt: skip
        raise DataError(
            f"{where}: neither JSON nor base64+zlib+pickle test cases ({exc}); --public-tests-only keeps the "
            "public tests"
        ) from None
    if too_large:
        raise DataError(f"{where}: decompresses to more than {MAX_DECOMPRESSED_BYTES} bytes")
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise DataError(f"{where}: the unpickled test cases are not UTF-8 text ({exc})") from None
    if not isinstance(value, str):
        raise DataError(f"{where}: the unpickled test cases are a {type(value).__name__}, expected JSON text")
    return value


def _printed(expected: str) -> str:
    """A functional test's expected value as verl's sandbox wrapper prints the returned value: ``json.dumps`` for
    lists, dicts, booleans and None, ``str`` for numbers and strings (so ``"abc"`` becomes ``abc``); the sandbox
    compares that text with stdout."""
    try:
        value = json.loads(expected)
    except json.JSONDecodeError:
        return expected
    if isinstance(value, dict | list) or value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _metadata(row: Row) -> dict:
    value = row.values.get("metadata")
    if _missing(value):
        return {}
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except (TypeError, json.JSONDecodeError):
        raise DataError(f"{row.where}: 'metadata' is not a JSON object") from None
    if not isinstance(parsed, dict):
        raise DataError(f"{row.where}: 'metadata' is not a JSON object")
    return parsed


def lcb_ground_truth(row: Row, public_tests_only: bool) -> tuple[str, dict]:
    """The ground truth verl's sandbox scorer reads (``{"inputs", "outputs"[, "fn_name"]}`` as JSON text) and the
    facts kept in extra_info."""
    cases = decode_test_cases(row.values.get("public_test_cases"), f"{row.where}: 'public_test_cases'")
    private = row.values.get("private_test_cases")
    has_private = not public_tests_only and not _missing(private)
    if has_private:
        cases = cases + decode_test_cases(private, f"{row.where}: 'private_test_cases'")
    if not cases:
        raise DataError(f"{row.where}: no test cases")
    kinds = {case.get("testtype", "stdin") for case in cases}
    if len(kinds) != 1 or not kinds <= {"stdin", "functional"}:
        raise DataError(f"{row.where}: test types {sorted(kinds)}; expected all 'stdin' or all 'functional'")
    truth: dict[str, Any] = {"inputs": [case["input"] for case in cases]}
    if kinds == {"functional"}:
        fn_name = _metadata(row).get("func_name")
        if not isinstance(fn_name, str) or not fn_name.strip():
            raise DataError(f"{row.where}: functional tests but no 'func_name' in 'metadata'")
        truth["outputs"] = [_printed(case["output"]) for case in cases]
        truth["fn_name"] = fn_name.strip()
    else:
        truth["outputs"] = [case["output"] for case in cases]
    return json.dumps(truth), {"num_tests": len(cases), "private_tests": has_private, "test_type": kinds.pop()}


def lcb_prompt(question: str, starter_code: str) -> str:
    if starter_code.strip():
        return f"{LCB_PREAMBLE}\n\n{question}\n\n{LCB_FUNCTIONAL}\n\n```python\n{starter_code.rstrip()}\n```"
    return f"{LCB_PREAMBLE}\n\n{question}\n\n{LCB_STDIN}"


def _contest_date(row: Row):
    import pandas as pd

    value = row.values.get("contest_date")
    if _missing(value):
        raise DataError(f"{row.where}: no 'contest_date' (needed by --since)")
    try:
        date = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise DataError(f"{row.where}: 'contest_date' {value!r} is not a date") from None
    return date.tz_localize(None) if date.tzinfo else date


def build_livecodebench(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """A code prompt (starter code when the problem has one); the ground truth is the test cases as JSON."""
    import pandas as pd

    _require_columns(_columns_of(rows), LCB_REQUIRED, sorted({row.path for row in rows}))
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    since = None
    if options.since:
        try:
            since = pd.Timestamp(options.since)
        except ValueError:
            raise DataError(f"--since {options.since!r} is not a date (use YYYY-MM-DD)") from None
    records = []
    for row in rows:
        if since is not None and _contest_date(row) < since:
            continue
        starter = row.values.get("starter_code")
        starter = starter if isinstance(starter, str) else ""
        ground_truth, facts = lcb_ground_truth(row, options.public_tests_only)
        record = _verl_row(
            data_source, lcb_prompt(_text(row, "question_content"), starter), ground_truth, split, 0, preset.ability
        )
        for key in ("platform", "difficulty", "question_title", "contest_date"):
            if not _missing(row.values.get(key)):
                facts[key] = str(row.values[key])
        records.append(_with_provenance(record, preset, row, **facts))
    return records


def shadowed_functions(records: list[dict]) -> list[str]:
    """The fn_names among LiveCodeBench records that verl's sandbox wrapper shadows (scored against the wrong
    function)."""
    shadowed = sandbox_shadowed_names()
    names = (json.loads(r["reward_model"]["ground_truth"]).get("fn_name") for r in records if r["ability"] == "code")
    return sorted({name for name in names if name in shadowed})


# --- the registry and the driver --------------------------------------------------------------------------------

_MATH_COLUMNS = "problem/question/prompt and answer/solution/ground_truth, or verl's prompt + reward_model"


def _math_preset(name: str, source: str, data_source: str) -> Preset:
    return Preset(name, source, _MATH_COLUMNS, data_source, "math", "test", build_math_benchmark)


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        _math_preset("aime2024", "BytedTsinghua-SIA/AIME-2024", "aime2024"),
        _math_preset("aime2025", "MathArena/aime_2025", "aime2025"),
        _math_preset("aime2026", "MathArena/aime_2026", "aime2026"),
        _math_preset("beyondaime", "ByteDance-Seed/BeyondAIME", "beyondaime"),
        Preset(
            "gpqa_diamond",
            "Idavidrein/gpqa (config gpqa_diamond)",
            ", ".join(GPQA_COLUMNS),
            "gpqa_diamond",
            "multiple_choice",
            "test",
            build_gpqa,
        ),  # fmt: skip
        # verl 0.9.1's default_compute_score sends codecontests/apps/codeforces/taco to the sandbox scorer.
        Preset(
            "livecodebench_v6",
            "livecodebench/code_generation_lite (release_v6)",
            "question_content, public_test_cases, private_test_cases, starter_code, metadata, contest_date",
            "codecontests",
            "code",
            "test",
            build_livecodebench,
        ),  # fmt: skip
        Preset(
            "train_mix",
            "a local math file (e.g. BytedTsinghua-SIA/DAPO-Math-17k)",
            _MATH_COLUMNS,
            "math",
            "math",
            "train",
            build_train_mix,
        ),  # fmt: skip
    )
}


def prepare(
    preset_name: str,
    inputs: Sequence[str | Path],
    output: str | Path,
    options: Options = Options(),
    limit: int | None = None,
    keep_duplicates: bool = False,
) -> Report:
    """Convert local ``inputs`` (rows taken in order, file after file) with preset ``preset_name`` and write the
    verl parquet file ``output``. Raises DataError (naming the file, row and column) for unusable input."""
    if preset_name not in PRESETS:
        raise DataError(f"unknown preset {preset_name!r} (presets: {', '.join(PRESETS)})")
    preset = PRESETS[preset_name]
    if Path(output).suffix != ".parquet":
        raise DataError(f"{output}: the output must be a .parquet file")
    if limit is not None and limit < 1:
        raise DataError(f"--limit must be >= 1, got {limit}")
    if options.split is not None and not options.split.strip():
        raise DataError("--split must not be empty")
    rows = [row for path in inputs for row in read_rows(path)]
    if not rows:
        raise DataError(f"{_names(inputs)}: no rows")
    records = preset.build(preset, rows, options)
    report = Report(0, options.data_source or preset.data_source, options.split or preset.split)
    if len(records) < len(rows):
        report.notes.append(f"{len(rows) - len(records)} rows before --since {options.since}")
    if not keep_duplicates:
        unique = _drop_repeats(records)
        report.dropped_duplicates = len(records) - len(unique)
        records = unique
    records = records[:limit]
    if not records:
        raise DataError(f"{_names(inputs)}: no rows left to write")
    for index, record in enumerate(records):
        record["extra_info"]["index"] = index
    if clashes := shadowed_functions(records):
        report.notes.append(
            f"verl's sandbox wrapper calls its own {', '.join(clashes)} instead of the solution's method"
        )
    _write(records, output)
    report.rows = len(records)
    report.data_source = records[0]["data_source"]
    return report


def _drop_repeats(records: list[dict]) -> list[dict]:
    seen, unique = set(), []
    for record in records:
        key = (json.dumps(record["prompt"]), record["reward_model"]["ground_truth"])
        if key not in seen:
            seen.add(key)
            unique.append(record)
    return unique
