"""``arena-verl analyze``: how much of an RLVR run's compute produced zero advantage, before any judge runs.

    arena-verl analyze runs/rlvr/rollout --data ~/data/math/train.parquet --metrics runs/rlvr/metrics
    python -m arena_verl.tools.analyze.command runs/arena/rollout --out report/

Reads verl's rollout dumps (``trainer.rollout_data_dir``; a validation dump folder works too), re-verifies every
group's final outputs, and writes ``index.html`` (plots and tables), the plots as PNG and ``summary.json`` into
``--out``. Exit status: 0 report written, 2 the input cannot be analysed (the message names the file or row).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.core.errors import EXIT_OK, guarded
from arena_verl.data.dump_notes import blank_line_note, disagreement_note, duplicate_note
from arena_verl.evaluation.groups import count_dump_lines, read_groups
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.tables import percent
from arena_verl.tools.analyze.report import write_report
from arena_verl.tools.analyze.summary import judge_calls_per_step, summarise
from arena_verl.tools.common.options import add_data, add_verification, scoring_options

__all__ = ["configure_parser", "run", "main"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dump", metavar="DUMP_DIR", help="trainer.rollout_data_dir (or a validation dump folder, or one <step>.jsonl)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("arena_report"), metavar="DIR", help="report folder (default ./arena_report)"
    )
    add_data(parser)
    parser.add_argument(
        "--metrics",
        metavar="PATH",
        help="verl's file-logger output (RUN_DIR, RUN_DIR/metrics or one .jsonl): judge calls",
    )
    add_verification(parser)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    # Bad input raises InputError: one "error:" line and exit 2 (guarded, by main() and by the arena-verl command).
    options = scoring_options(args)
    judge_calls = judge_calls_per_step(args.metrics) if args.metrics else None
    total = count_dump_lines(args.dump)
    with Scorer(options) as scorer, tqdm(total=total, unit="sample", desc="verifying", file=sys.stderr) as bar:
        dump = read_groups(args.dump, scorer, data=args.data, progress=bar.update)
    duplicates = {step: len(lines) for step, lines in dump.duplicates.items()}
    summary = summarise(dump.groups, dump.grouped_by, judge_calls, dump.notes, len(dump.disagreements), duplicates)
    inputs = {"dump": args.dump, "data": args.data, "metrics": args.metrics}
    page = write_report(summary, dump.groups, args.out, inputs)  # before any console line: nothing half-done
    totals = summary["totals"]
    for note in totals["notes"]:
        print(f"note: {note}", file=sys.stderr)
    disagreements = disagreement_note(dump.disagreements)
    if disagreements:
        print(f"warning: {disagreements}", file=sys.stderr)
    repeated = duplicate_note(
        [line for lines in dump.duplicates.values() for line in lines], differing="their groups are left unverified"
    )
    if repeated:
        print(f"warning: {repeated} (summary.json: duplicate_uids per step and in totals)", file=sys.stderr)
    blank = blank_line_note(dump.blank_lines)
    if blank:
        print(f"warning: {blank}", file=sys.stderr)
    print(
        f"{totals['groups']} groups over {totals['steps']} steps, alpha {percent(totals['alpha'])}; "
        f"zero-advantage samples: {percent(totals['zero_advantage_share_rlvr'])} under RLVR, "
        f"{percent(totals['zero_advantage_share_dumped'])} under the dumped rewards. Report: {page}"
    )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arena-verl analyze", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))  # bad input: one "error:" line, exit 2


if __name__ == "__main__":
    raise SystemExit(main())
