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

from arena_verl.data.dumps import EvaluationInputError
from arena_verl.evaluation.groups import count_dump_lines, read_groups
from arena_verl.evaluation.report import Scorer, ScoringOptions
from arena_verl.tools.analyze.report import write_report
from arena_verl.tools.analyze.summary import judge_calls_per_step, summarise
from arena_verl.verify.math_verifier import EXTRACTION_MODES

__all__ = ["configure_parser", "run", "main"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dump", metavar="DUMP_DIR", help="trainer.rollout_data_dir (or a validation dump folder, or one <step>.jsonl)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("arena_report"), metavar="DIR", help="report folder (default ./arena_report)"
    )
    parser.add_argument(
        "--data",
        nargs="+",
        default=[],
        metavar="PARQUET",
        help="the training parquet file(s): data sources, and the scorer per source",
    )
    parser.add_argument(
        "--metrics", metavar="FILE", help="verl's file-logger output (RUN_DIR/metrics or a .jsonl): judge calls"
    )
    parser.add_argument(
        "--sandbox-url", metavar="URL", help="sandbox_fusion run_code URL; without it code groups stay unverified"
    )
    parser.add_argument(
        "--answer-extraction",
        choices=EXTRACTION_MODES,
        default="boxed",
        help="the math verifier's answer extraction (reward.arena.answer_extraction)",
    )
    parser.add_argument("--workers", type=int, default=ScoringOptions().workers, help="verifier processes/threads")


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    from tqdm import tqdm

    options = ScoringOptions(
        sandbox_url=args.sandbox_url, answer_extraction=args.answer_extraction, workers=args.workers
    )
    try:
        judge_calls = judge_calls_per_step(args.metrics) if args.metrics else None
        total = count_dump_lines(args.dump)
        with Scorer(options) as scorer, tqdm(total=total, unit="sample", desc="verifying", file=sys.stderr) as bar:
            dump = read_groups(args.dump, scorer, data=args.data, progress=bar.update)
    except EvaluationInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = summarise(dump.groups, dump.grouped_by, judge_calls, dump.notes)
    inputs = {"dump": args.dump, "data": args.data, "metrics": args.metrics}
    try:
        page = write_report(summary, dump.groups, args.out, inputs)
    except OSError as exc:
        print(f"error: cannot write the report into {args.out}: {exc}", file=sys.stderr)
        return 2
    totals = summary["totals"]
    for note in totals["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"{totals['groups']} groups over {totals['steps']} steps, alpha {_percent(totals['alpha'])}; "
        f"zero-advantage samples: {_percent(totals['zero_advantage_share_rlvr'])} under RLVR, "
        f"{_percent(totals['zero_advantage_share_dumped'])} under the dumped rewards. Report: {page}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arena-verl analyze", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return run(parser.parse_args(argv))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    raise SystemExit(main())
