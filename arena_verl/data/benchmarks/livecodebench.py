"""The LiveCodeBench (v6) preset: a code prompt (with the starter code when the problem has one); the ground truth is
the problem's test cases as the JSON verl's sandbox scorer reads (``{"inputs", "outputs"[, "fn_name"]}``).

The private tests ship as base64 + zlib + pickle. They are decoded by an unpickler that refuses every class and
function (only plain strings, numbers, lists and dicts can come out) and a decompression cap
(:data:`MAX_DECOMPRESSED_BYTES`); ``--public-tests-only`` skips them.

Every field of a row is checked before it is used, and a row of the wrong shape is a DataError naming the file,
row and field (nothing is skipped silently): ``question_content`` text; ``public_test_cases`` (and
``private_test_cases`` unless skipped) JSON text (or the compressed form) of a non-empty list of objects whose
``input`` and ``output`` are text and ``testtype``, when present, is ``stdin`` or ``functional`` (the same for all);
JSON nested too deeply to read is refused; ``starter_code`` text or nothing; ``metadata`` an object (or its JSON
text), with a text ``func_name`` for functional tests. ``--since`` takes a date (``2025-02-01``) or a timestamp,
naive or with a zone; every time is compared in UTC, a naive one (the ``contest_date`` LiveCodeBench ships) read as
UTC. Rows before ``--since`` are the only rows left out, and they are counted in the command's line.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from typing import Any

from arena_verl.data.benchmarks.preset import Options, Preset, with_provenance
from arena_verl.data.qa import DataError, JsonNumber, Row, columns_of, is_missing, load_json, require_columns, row_text
from arena_verl.data.verl_layout import verl_row

__all__ = [
    "LCB_COLUMNS",
    "LCB_FUNCTIONAL",
    "LCB_PREAMBLE",
    "LCB_REQUIRED",
    "LCB_STDIN",
    "MAX_DECOMPRESSED_BYTES",
    "build_livecodebench",
    "decode_test_cases",
    "lcb_ground_truth",
    "lcb_prompt",
    "sandbox_shadowed_names",
    "shadowed_functions",
    "utc_time",
]

# A compressed LiveCodeBench test blob is a few MB; this bounds what a hostile file could make us allocate.
MAX_DECOMPRESSED_BYTES = 512 * 2**20
LCB_COLUMNS = "question_content, public_test_cases, private_test_cases, starter_code, metadata, contest_date"
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


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, JsonNumber)


def _kind(value: Any) -> str:
    return "number" if isinstance(value, JsonNumber) else type(value).__name__


def _parsed(text: str | bytes, where: str) -> Any:
    """JSON text parsed with every number kept as text (no integer-digit limit); nesting too deep is a DataError.
    A text that is not JSON raises json.JSONDecodeError (or UnicodeDecodeError for bytes)."""
    try:
        return load_json(text)
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None


def decode_test_cases(text: Any, where: str) -> list[dict]:
    """Test cases from LiveCodeBench's JSON text, or from its compressed form: base64 of zlib of a pickled JSON
    string (the private tests). The pickle is read by an unpickler that refuses every global, and the
    decompression stops at MAX_DECOMPRESSED_BYTES. Anything but a list of objects with text ``input`` and
    ``output`` (and a text ``testtype``, if any) is a DataError naming ``where`` and the test case."""
    if is_missing(text) or (isinstance(text, bytes) and not text.strip()):
        raise DataError(f"{where}: empty")
    if not isinstance(text, str | bytes) or isinstance(text, JsonNumber):
        raise DataError(f"{where}: a {_kind(text)}, expected JSON text of a list of test cases")
    try:
        cases = _parsed(text, where)
    except (json.JSONDecodeError, UnicodeDecodeError):
        unpacked = _unpack(text, where)
        try:
            cases = _parsed(unpacked, where)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: the unpickled test cases are not JSON ({exc.msg})") from None
    if not isinstance(cases, list):
        raise DataError(f"{where}: a JSON {_kind(cases)}, expected a list of test cases")
    for number, case in enumerate(cases):
        if not isinstance(case, dict):
            raise DataError(f"{where}: test case {number} is a {_kind(case)}, expected an object")
        for key in ("input", "output"):
            if not _is_text(case.get(key)):
                found = "missing" if key not in case else f"a {_kind(case[key])}"
                raise DataError(f"{where}: test case {number}: {key!r} is {found}, expected text")
        if "testtype" in case and not _is_text(case["testtype"]):
            raise DataError(f"{where}: test case {number}: 'testtype' is a {_kind(case['testtype'])}, expected text")
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


def _printed(expected: str, where: str) -> str:
    """A functional test's expected value as verl's sandbox wrapper prints the returned value: ``json.dumps`` for
    lists, dicts, booleans and None, ``str`` for numbers and strings (so ``"abc"`` becomes ``abc``); the sandbox
    compares that text with stdout. A value nested too deeply, or with an integer too long for Python to print
    (``sys.get_int_max_str_digits``), is a DataError: the sandbox could not print it either."""
    try:
        value = json.loads(expected)
    except json.JSONDecodeError:
        return expected
    except RecursionError:
        raise DataError(f"{where}: the expected output is JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise DataError(f"{where}: the expected output cannot be printed by the sandbox ({exc})") from None
    try:
        if isinstance(value, dict | list) or value is None or isinstance(value, bool):
            return json.dumps(value)
        return str(value)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{where}: the expected output cannot be printed by the sandbox ({exc})") from None


def _metadata(row: Row) -> dict:
    value = row.values.get("metadata")
    if is_missing(value):
        return {}
    where = f"{row.where}: 'metadata'"
    if not isinstance(value, dict):
        if not _is_text(value):
            raise DataError(f"{where} is a {_kind(value)}, expected a JSON object")
        try:
            value = _parsed(value, where)
        except json.JSONDecodeError:
            raise DataError(f"{where} is not a JSON object") from None
    if not isinstance(value, dict):
        raise DataError(f"{where} is not a JSON object")
    return value


def lcb_ground_truth(row: Row, public_tests_only: bool) -> tuple[str, dict]:
    """The ground truth verl's sandbox scorer reads (``{"inputs", "outputs"[, "fn_name"]}`` as JSON text) and the
    facts kept in extra_info."""
    cases = decode_test_cases(row.values.get("public_test_cases"), f"{row.where}: 'public_test_cases'")
    private = row.values.get("private_test_cases")
    has_private = not public_tests_only and not is_missing(private)
    if has_private:
        cases = cases + decode_test_cases(private, f"{row.where}: 'private_test_cases'")
    if not cases:
        raise DataError(f"{row.where}: no test cases")
    kinds = {case.get("testtype", "stdin") for case in cases}  # text: decode_test_cases checked each
    if len(kinds) != 1 or not kinds <= {"stdin", "functional"}:
        raise DataError(f"{row.where}: test types {sorted(kinds)}; expected all 'stdin' or all 'functional'")
    truth: dict[str, Any] = {"inputs": [case["input"] for case in cases]}
    if kinds == {"functional"}:
        fn_name = _metadata(row).get("func_name")
        if not _is_text(fn_name) or not fn_name.strip():
            raise DataError(f"{row.where}: functional tests but no 'func_name' in 'metadata'")
        truth["outputs"] = [_printed(case["output"], f"{row.where}: test case {n}") for n, case in enumerate(cases)]
        truth["fn_name"] = fn_name.strip()
    else:
        truth["outputs"] = [case["output"] for case in cases]
    return json.dumps(truth), {"num_tests": len(cases), "private_tests": has_private, "test_type": kinds.pop()}


def lcb_prompt(question: str, starter_code: str) -> str:
    if starter_code.strip():
        return f"{LCB_PREAMBLE}\n\n{question}\n\n{LCB_FUNCTIONAL}\n\n```python\n{starter_code.rstrip()}\n```"
    return f"{LCB_PREAMBLE}\n\n{question}\n\n{LCB_STDIN}"


def utc_time(value: Any, what: str):
    """A date or timestamp as a UTC ``pandas.Timestamp``: text (``2025-02-01``, ``2025-02-01T09:00:00+09:00``), a
    datetime, date or numpy datetime64; a naive time is read as UTC, an aware one converted. Numbers (whose unit
    would be a guess), other types, NaT and dates out of range are a DataError naming ``what``."""
    import datetime

    import numpy as np
    import pandas as pd

    if not (_is_text(value) or isinstance(value, datetime.date | np.datetime64)):
        raise DataError(f"{what} is a {_kind(value)}, expected a date (YYYY-MM-DD) or an ISO timestamp")
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError, OverflowError):  # OutOfBoundsDatetime is a ValueError
        raise DataError(f"{what} {value!r} is not a date (use YYYY-MM-DD or an ISO timestamp)") from None
    if stamp is pd.NaT or pd.isna(stamp):
        raise DataError(f"{what} {value!r} is not a date (use YYYY-MM-DD or an ISO timestamp)")
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _contest_date(row: Row):
    value = row.values.get("contest_date")
    if is_missing(value):
        raise DataError(f"{row.where}: no 'contest_date' (needed by --since)")
    return utc_time(value, f"{row.where}: 'contest_date'")


def _starter_code(row: Row) -> str:
    value = row.values.get("starter_code")
    if is_missing(value):
        return ""
    if not _is_text(value):
        raise DataError(f"{row.where}: 'starter_code' is a {_kind(value)}, expected text")
    return value


def build_livecodebench(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """A code prompt (starter code when the problem has one); the ground truth is the test cases as JSON. With
    ``options.since``, rows whose contest_date is before it (compared in UTC) are left out."""
    require_columns(columns_of(rows), LCB_REQUIRED, sorted({row.path for row in rows}))
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    since = None if options.since is None else utc_time(options.since, "--since")
    records = []
    for row in rows:
        if since is not None and _contest_date(row) < since:
            continue
        ground_truth, facts = lcb_ground_truth(row, options.public_tests_only)
        prompt = lcb_prompt(row_text(row, "question_content"), _starter_code(row))
        record = verl_row(data_source, prompt, ground_truth, split, 0, preset.ability)
        for key in ("platform", "difficulty", "question_title", "contest_date"):
            if not is_missing(row.values.get(key)):
                facts[key] = str(row.values[key])
        records.append(with_provenance(record, preset, row, **facts))
    return records


def shadowed_functions(records: list[dict]) -> list[str]:
    """The fn_names among LiveCodeBench records that verl's sandbox wrapper shadows (scored against the wrong
    function)."""
    shadowed = sandbox_shadowed_names()
    names = (json.loads(r["reward_model"]["ground_truth"]).get("fn_name") for r in records if r["ability"] == "code")
    return sorted({name for name in names if name in shadowed})
