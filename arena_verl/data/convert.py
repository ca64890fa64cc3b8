"""Data helpers for verl parquet files.

verl 0.9.1 does not tell a reward manager which samples are validation samples, so arena-verl reads
``extra_info["split"]`` as a second signal (see the README). ``mark-split`` writes it into an existing verl dataset;
``make-arithmetic`` writes a small arithmetic data set with ground truths (the CPU recipe's default data):

    python -m arena_verl.data mark-split ~/data/math/test.parquet --split test
    python -m arena_verl.data make-arithmetic train.parquet --rows 64 --split train --seed 0
    python -m arena_verl.data convert aime_2024.jsonl --output aime2024.parquet --data-source aime2024 --split test

``convert`` reads the file with the question/answer reader the benchmark presets use (:mod:`arena_verl.data.qa`):
answers are kept exactly as written (``"033"``, ``0.50``, a 30-digit integer) and a row without a question or an
answer is refused. Bad input to ``convert`` ends with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.core.errors import EXIT_BAD_INPUT, InputError
from arena_verl.data.qa import DataError, question_answers, read_rows
from arena_verl.data.verl_layout import MATH_SUFFIX, verl_row, write_parquet

__all__ = ["MATH_SUFFIX", "mark_split", "make_arithmetic", "splits_of", "convert_qa", "main"]


def mark_split(path: str | Path, split: str, output: str | Path | None = None) -> int:
    """Set ``extra_info["split"] = split`` on every row (other extra_info keys are kept); returns the row count.
    Writes ``output`` (default: in place)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    if "extra_info" not in frame.columns:
        frame["extra_info"] = [{} for _ in range(len(frame))]

    def marked(info):
        if info is None or (isinstance(info, float) and info != info):  # missing or NaN
            info = {}
        if not isinstance(info, dict):
            raise ValueError(f"extra_info must be a mapping, got {type(info).__name__}")
        return {**info, "split": split}

    frame["extra_info"] = [marked(info) for info in frame["extra_info"]]
    frame.to_parquet(output or path)
    return len(frame)


def make_arithmetic(
    path: str | Path, rows: int, split: str, seed: int = 0, data_source: str = "arithmetic_math"
) -> int:
    """``rows`` problems "What is a + b?" (or a - b, a * b) in verl's parquet layout: ``prompt`` (chat messages),
    ``data_source`` (matched by the arena's math verifier), ``ability``, ``reward_model.ground_truth`` and
    ``extra_info.split/index``. Returns the row count."""
    import numpy as np

    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    rng = np.random.default_rng(seed)
    records = []
    for index in range(rows):
        a, b = (int(x) for x in rng.integers(1, 20, size=2))
        op = ("+", "-", "*")[index % 3]
        answer = {"+": a + b, "-": a - b, "*": a * b}[op]
        question = f"What is {a} {op} {b}? Put the final answer in \\boxed{{}}."
        records.append(verl_row(data_source, question, str(answer), split, index))
    write_parquet(records, path)
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
    is a :class:`~arena_verl.data.qa.DataError` naming the file and row. Returns the row count."""
    rows = read_rows(source)
    if not rows:
        raise DataError(f"{source}: no rows")
    records = []
    for index, pair in enumerate(question_answers(rows, question_key, answer_key)):
        content = f"{pair.question}\n\n{suffix}" if suffix else pair.question
        records.append(verl_row(data_source, content, pair.answer, split, index, ability))
    write_parquet(records, output)
    return len(records)


# The names earlier releases exported (arena_verl.testing.toy imports them).
_verl_row, _write = verl_row, write_parquet


def splits_of(path: str | Path) -> set:
    """The set of ``extra_info.split`` values in a verl parquet file (None for rows without one)."""
    import pandas as pd

    frame = pd.read_parquet(path, columns=None)
    if "extra_info" not in frame.columns:
        return {None}
    return {info.get("split") if isinstance(info, dict) else None for info in frame["extra_info"]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m arena_verl.data", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    mark = commands.add_parser("mark-split", help="write extra_info.split into a verl parquet file")
    mark.add_argument("path")
    mark.add_argument(
        "--split", required=True, help="e.g. train or test (validation: one of reward.arena.validation_splits)"
    )
    mark.add_argument("--output", default=None, help="default: rewrite PATH")
    make = commands.add_parser("make-arithmetic", help="write a small arithmetic data set with ground truths")
    make.add_argument("path")
    make.add_argument("--rows", type=int, default=64)
    make.add_argument("--split", default="train")
    make.add_argument("--seed", type=int, default=0)
    conv = commands.add_parser(
        "convert", help="a local question/answer file (parquet/jsonl/json/csv) as verl parquet, answers as written"
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
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.command == "mark-split":
        rows = mark_split(args.path, args.split, args.output)
        print(f"{rows} rows marked split={args.split!r} -> {args.output or args.path}")
    elif args.command == "make-arithmetic":
        rows = make_arithmetic(args.path, args.rows, args.split, args.seed)
        print(f"{rows} arithmetic problems (split={args.split!r}) -> {args.path}")
    elif args.command == "convert":
        try:
            rows = convert_qa(
                args.path,
                args.output,
                data_source=args.data_source,
                split=args.split,
                question_key=args.question_key,
                answer_key=args.answer_key,
                suffix=args.suffix,
            )
        except OSError as exc:  # the input cannot be read or the output cannot be written
            raise InputError(str(exc)) from None
        print(f"{rows} rows ({args.data_source}, split={args.split!r}) -> {args.output}")
    else:
        # 1 means "a split outside SPLITS" only: a file that cannot be read is 2, never taken for "mark a copy".
        try:
            found = splits_of(args.path)
        except Exception as exc:  # noqa: BLE001  (one readable line for any unreadable input)
            print(f"error: cannot read the splits of {args.path}: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return 0 if found <= set(args.splits) else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """The exit status: 0 done, 2 bad input (one line on stderr, no traceback); has-split also 1."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
