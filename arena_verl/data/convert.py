"""Data helpers for verl parquet files.

verl 0.9.1 does not tell a reward manager which samples are validation samples, so arena-verl reads
``extra_info["split"]`` as a second signal (see the README). ``mark-split`` writes it into an existing verl dataset;
``make-arithmetic`` writes a small arithmetic data set with ground truths (the CPU recipe's default data):

    python -m arena_verl.data mark-split ~/data/math/test.parquet --split test
    python -m arena_verl.data make-arithmetic train.parquet --rows 64 --split train --seed 0
    python -m arena_verl.data convert aime_2024.jsonl --output aime2024.parquet --data-source aime2024 --split test

``convert`` reads the file with the question/answer reader the benchmark presets use (:mod:`arena_verl.data.qa`):
answers are kept exactly as written (``"033"``, ``0.50``, a 30-digit integer); a row without a question or an
answer is refused, and so is a question asked twice with different answers (naming both rows: keep one answer per
question; the same question with the same answer is kept twice).

Bad input to any of them (a missing, unreadable or non-parquet file, a directory given as a file, a missing column, an
empty question, an ``extra_info`` that is not a mapping, ``--rows`` outside 1..MAX_ROWS, an empty ``--split``, an
unwritable output) ends with one ``error:`` line on stderr and exit status 2, never a traceback; has-split also
exits 1 (a split outside SPLITS). Every parquet file is written atomically: a failed write leaves the old file or
none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.core.errors import InputError, guarded
from arena_verl.data.qa import DataError, is_missing, question_answers, read_parquet, read_rows, refuse_contradictions
from arena_verl.data.verl_layout import MATH_SUFFIX, label, verl_row, write_frame, write_parquet

__all__ = [
    "MATH_SUFFIX",
    "MAX_ROWS",
    "build_parser",
    "configure_parser",
    "convert_qa",
    "main",
    "make_arithmetic",
    "mark_split",
    "run",
    "splits_of",
]

MAX_ROWS = 1_000_000  # make-arithmetic: a toy data set; more is a typo (or an attack on the disk), refused


def _extra_infos(frame, path) -> list[dict | None]:
    """Each row's extra_info as a dict, or None where the row has none (null, NaN); anything else is a DataError
    naming the file and row."""
    if "extra_info" not in frame.columns:
        return [None] * len(frame)
    infos = []
    for number, info in enumerate(frame["extra_info"]):
        if is_missing(info):
            info = None
        elif not isinstance(info, dict):
            kind = type(info).__name__
            raise DataError(f"{path}: row {number}: extra_info must be a mapping (or nothing), got {kind}")
        infos.append(info)
    return infos


def mark_split(path: str | Path, split: str, output: str | Path | None = None) -> int:
    """Set ``extra_info["split"] = split`` on every row (other extra_info keys are kept); returns the row count.
    Writes ``output`` (default: in place), atomically. A row whose extra_info is not a mapping is a DataError."""
    split = label(split, "--split")
    frame = read_parquet(path)
    frame["extra_info"] = [{**(info or {}), "split": split} for info in _extra_infos(frame, path)]
    write_frame(frame, output or path, what="--output" if output else "mark-split")
    return len(frame)


def make_arithmetic(
    path: str | Path, rows: int, split: str, seed: int = 0, data_source: str = "arithmetic_math"
) -> int:
    """``rows`` problems "What is a + b?" (or a - b, a * b) in verl's parquet layout: ``prompt`` (chat messages),
    ``data_source`` (matched by the arena's math verifier), ``ability``, ``reward_model.ground_truth`` and
    ``extra_info.split/index``. ``rows`` is 1..MAX_ROWS and ``seed`` >= 0 (else an InputError). Returns the row
    count."""
    import numpy as np

    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= MAX_ROWS:
        raise InputError(f"--rows must be between 1 and {MAX_ROWS}, got {rows}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"--seed must be a whole number >= 0, got {seed}")
    split, data_source = label(split, "--split"), label(data_source, "data_source")
    rng = np.random.default_rng(seed)
    records = []
    for index in range(rows):
        a, b = (int(x) for x in rng.integers(1, 20, size=2))
        op = ("+", "-", "*")[index % 3]
        answer = {"+": a + b, "-": a - b, "*": a * b}[op]
        question = f"What is {a} {op} {b}? Put the final answer in \\boxed{{}}."
        records.append(verl_row(data_source, question, str(answer), split, index))
    write_parquet(records, path, what="make-arithmetic")
    return rows


def convert_qa(
    source: str | Path,
    output: str | Path,
    *,
    data_source: str,
    split: str,
    question_key: str = "problem",
    answer_key: str = "answer",
    suffix: str = MATH_SUFFIX,
    ability: str = "math",
) -> int:
    """A local question/answer file (parquet, jsonl, json or csv, as public math sets ship them) as a verl parquet
    file: ``prompt`` (one user message: the question and ``suffix``), ``data_source``, ``ability``,
    ``reward_model.ground_truth`` (the answer exactly as written: ``"033"`` and ``0.50`` stay as they are) and
    ``extra_info.split/index``. The file is read by :mod:`arena_verl.data.qa`, as the benchmark presets read theirs:
    a row without a question or an answer (missing, null, empty), or whose answer is a boolean, a list or an object,
    and a question asked twice with different answers (a verifier could not know which is right) are a
    :class:`~arena_verl.data.qa.DataError` naming the file and rows. Returns the row count."""
    data_source, split = label(data_source, "--data-source"), label(split, "--split")
    rows = read_rows(source)
    if not rows:
        raise DataError(f"{source}: no rows")
    pairs = question_answers(rows, question_key, answer_key)
    refuse_contradictions(pairs)
    records = []
    for index, pair in enumerate(pairs):
        content = f"{pair.question}\n\n{suffix}" if suffix else pair.question
        records.append(verl_row(data_source, content, pair.answer, split, index, ability))
    write_parquet(records, output, what="--output")
    return len(records)


# The names earlier releases exported (arena_verl.testing.toy imports them).
_verl_row, _write = verl_row, write_parquet


def splits_of(path: str | Path) -> set:
    """The set of ``extra_info.split`` values in a verl parquet file (None for rows without one). A file that
    cannot be read, or a row whose extra_info is not a mapping, is a DataError."""
    frame = read_parquet(path)
    return {info.get("split") if info else None for info in _extra_infos(frame, path)}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m arena_verl.data", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return parser


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The four subcommands on ``parser`` (``run`` executes them)."""
    commands = parser.add_subparsers(dest="command", required=True)
    mark = commands.add_parser("mark-split", help="write extra_info.split into a verl parquet file")
    mark.add_argument("path")
    mark.add_argument(
        "--split", required=True, help="e.g. train or test (validation: one of reward.arena.validation_splits)"
    )
    mark.add_argument("--output", default=None, help="default: rewrite PATH")
    make = commands.add_parser("make-arithmetic", help="write a small arithmetic data set with ground truths")
    make.add_argument("path")
    make.add_argument("--rows", type=int, default=64, help=f"1..{MAX_ROWS}")
    make.add_argument("--split", default="train")
    make.add_argument("--seed", type=int, default=0, help=">= 0")
    conv = commands.add_parser(
        "convert",
        help="a local question/answer file (parquet/jsonl/json/csv) as verl parquet, answers as written; a question "
        "asked twice with different answers is refused, naming the rows",
    )
    conv.add_argument("path")
    conv.add_argument("--output", required=True)
    conv.add_argument("--data-source", required=True, help="e.g. aime2024 (matched by reward.arena.math_data_sources)")
    conv.add_argument("--split", required=True, help="train, or test/val for validation files")
    conv.add_argument("--question-key", default="problem")
    conv.add_argument("--answer-key", default="answer")
    conv.add_argument("--suffix", default=MATH_SUFFIX, help="appended to each question ('' for none)")
    check = commands.add_parser(
        "has-split", help="exit 0 if every row's extra_info.split is one of SPLITS, 1 if not, 2 if unreadable"
    )
    check.add_argument("path")
    check.add_argument("splits", nargs="+")


def run(args: argparse.Namespace) -> int:
    """One subcommand; bad input raises InputError (``main`` turns it into one line and exit 2)."""
    if args.command == "mark-split":
        rows = mark_split(args.path, args.split, args.output)
        print(f"{rows} rows marked split={args.split!r} -> {args.output or args.path}")
    elif args.command == "make-arithmetic":
        rows = make_arithmetic(args.path, args.rows, args.split, args.seed)
        print(f"{rows} arithmetic problems (split={args.split!r}) -> {args.path}")
    elif args.command == "convert":
        rows = convert_qa(
            args.path,
            args.output,
            data_source=args.data_source,
            split=args.split,
            question_key=args.question_key,
            answer_key=args.answer_key,
            suffix=args.suffix,
        )
        print(f"{rows} rows ({args.data_source}, split={args.split!r}) -> {args.output}")
    else:
        # 1 means "a split outside SPLITS" only: a file that cannot be read is 2, never taken for "mark a copy".
        try:
            found = splits_of(args.path)
        except DataError as exc:
            raise DataError(f"cannot read the splits of {exc}") from None
        return 0 if found <= set(args.splits) else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """The exit status: 0 done, 2 bad input (one line on stderr, no traceback); has-split also 1."""
    return guarded(run, build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
