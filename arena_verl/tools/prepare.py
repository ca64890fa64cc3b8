"""Convert a local copy of a paper benchmark (or a training file) to verl's parquet layout.

    python scripts/data/prepare.py list
    python scripts/data/prepare.py aime2025 aime_2025/train.parquet --output data/aime2025.parquet
    python scripts/data/prepare.py gpqa_diamond gpqa_diamond.csv --output data/gpqa_diamond.parquet --seed 0
    python scripts/data/prepare.py livecodebench_v6 lcb/test*.jsonl --output data/lcb_v6.parquet --since 2025-02-01
    python scripts/data/prepare.py train_mix dapo-math-17k.parquet --output data/train.parquet

Nothing is downloaded. Bad input ends with one line naming the file, row and column, and exit code 2; so does a
question (a prompt) given twice with different answers, naming both rows (refused, not dropped: which answer is right
is for you to decide), and an option of another preset (--since or --public-tests-only for any preset but
livecodebench_v6, --reprompt for any but train_mix), naming the preset.
See scripts/data/README.md and arena_verl/data/benchmarks/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.core.errors import EXIT_OK, guarded
from arena_verl.data.benchmarks import PRESETS, Options, prepare

__all__ = ["configure_parser", "main", "run"]

LIST = "list"  # the pseudo-preset that prints the presets


class _PresetOrList(argparse.Action):
    """``list`` prints the presets and exits 0 as soon as argparse reads it, before it asks for the inputs and
    ``--output`` a conversion needs (as ``--help`` does)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values == LIST:
            list_presets()
            parser.exit(EXIT_OK)
        setattr(namespace, self.dest, values)


class _PresetNames:
    """The preset names, as argparse shows them in the usage and errors; ``list`` is accepted as well."""

    def __contains__(self, name: object) -> bool:
        return name in PRESETS or name == LIST

    def __iter__(self):
        return iter(PRESETS)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("preset", choices=_PresetNames(), action=_PresetOrList, help="or 'list' to print the presets")
    parser.add_argument("inputs", nargs="+", type=Path, help="local .parquet/.jsonl/.json/.csv file(s), in order")
    parser.add_argument("--output", required=True, type=Path, help="the verl .parquet file to write")
    parser.add_argument("--split", default=None, help="extra_info.split (default: test, or train for train_mix)")
    parser.add_argument("--limit", type=int, default=None, help="keep the first N problems")
    parser.add_argument("--seed", type=int, default=0, help="gpqa_diamond: seeds the order of the options")
    parser.add_argument("--question-key", default=None, help="the question column (default: a common name)")
    parser.add_argument("--answer-key", default=None, help="the answer column (default: a common name)")
    parser.add_argument("--data-source", default=None, help="override the preset's data_source")
    parser.add_argument(
        "--since", default=None, help="livecodebench_v6: keep contest_date >= this (a date or ISO timestamp, in UTC)"
    )
    parser.add_argument("--public-tests-only", action="store_true", help="livecodebench_v6: skip private tests")
    parser.add_argument("--reprompt", action="store_true", help="train_mix: rebuild verl-layout prompts (boxed)")
    parser.add_argument("--keep-duplicates", action="store_true", help="keep rows repeating a prompt and answer")


def list_presets() -> None:
    for preset in PRESETS.values():
        print(f"{preset.name:18} {preset.source}  (data_source {preset.data_source}, split {preset.split})")


def run(args: argparse.Namespace) -> int:
    """0: the file was written (or the presets listed); bad input raises InputError (``guarded`` prints it as one
    line on stderr, exit 2: ``main`` here, the ``arena-verl`` command for ``arena-verl prepare``)."""
    if args.preset == LIST:
        list_presets()
        return EXIT_OK
    options = Options(
        split=args.split, seed=args.seed, question_key=args.question_key, answer_key=args.answer_key,
        data_source=args.data_source, since=args.since, public_tests_only=args.public_tests_only,
        reprompt=args.reprompt,
    )  # fmt: skip
    report = prepare(args.preset, args.inputs, args.output, options, args.limit, args.keep_duplicates)
    notes = list(report.notes)
    if report.dropped_duplicates:
        notes.append(f"{report.dropped_duplicates} repeated rows dropped")
    tail = f" ({'; '.join(notes)})" if notes else ""
    print(f"{report.rows} rows ({report.data_source}, split={report.split!r}) -> {args.output}{tail}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [LIST]:  # returns rather than exits, for callers in the same process
        list_presets()
        return EXIT_OK
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
