"""Data helpers for verl parquet files.

verl 0.9.1 does not tell a reward manager which samples are validation samples, so arena-verl reads
``extra_info["split"]`` (see the README). ``mark-split`` writes it into an existing verl dataset:

    python -m arena_verl.data mark-split ~/data/math/test.parquet --split test
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["mark_split"]


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    mark = commands.add_parser("mark-split", help="write extra_info.split into a verl parquet file")
    mark.add_argument("path")
    mark.add_argument(
        "--split", required=True, help="e.g. train or test (validation: one of reward.arena.validation_splits)"
    )
    mark.add_argument("--output", default=None, help="default: rewrite PATH")
    args = parser.parse_args(argv)
    rows = mark_split(args.path, args.split, args.output)
    print(f"{rows} rows marked split={args.split!r} -> {args.output or args.path}")


if __name__ == "__main__":
    main()
