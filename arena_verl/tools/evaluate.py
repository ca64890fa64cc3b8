"""Evaluate validation generations per benchmark: avg@n and unbiased pass@k, as the paper's tables report them.

    arena-verl evaluate --dumps runs/arenarl/validation --data aime24.parquet gpqa.parquet
    python scripts/eval/evaluate.py --dumps runs/rlvr/validation/200.jsonl --data val.parquet --k 1 5 16 --json r.json
    python scripts/eval/evaluate.py --dumps generations.jsonl --sandbox-url http://sandbox:8080/run_code

Exit status: 0 a report was written (benchmarks that could not be scored are listed as such), 2 the input cannot
be evaluated or a usage error (one line naming the file, row, prompt or flag). See scripts/eval/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.core.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from arena_verl.data.dumps import disagreement_note
from arena_verl.evaluation.report import Scorer, StepReport, evaluate_groups, render_table, report_json
from arena_verl.evaluation.verified import read_verified
from arena_verl.tools.options import add_data, add_verification, scoring_options

__all__ = ["configure_parser", "run", "main"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dumps", required=True, help="trainer.validation_data_dir, one <step>.jsonl, or a generation jsonl"
    )
    add_data(parser, required_for="needed for verl dumps")
    parser.add_argument("--step", default="latest", help="latest (default), all, or a step number")
    parser.add_argument("--k", nargs="+", type=int, help="pass@k for these k (default: pass@5 for code, none else)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--use-dumped-scores",
        action="store_true",
        help="trust the dump's acc (else score > 0) instead of re-scoring; arena rewards may hold judge rewards",
    )
    parser.add_argument(
        "--allow-unequal-n",
        action="store_true",
        help="prompts of a benchmark may have different sample counts (each uses its own n)",
    )
    add_verification(parser)


def run(args: argparse.Namespace) -> int:
    try:
        if args.k is not None and min(args.k) < 1:
            raise InputError("--k values must be >= 1")
        options = scoring_options(args, use_dumped_scores=args.use_dumped_scores)
        reports, disagreements = [], []
        with Scorer(options) as scorer:
            for verified in read_verified(
                args.dumps, scorer, data=args.data, step=args.step, need_data=True, generations=True
            ):
                results = evaluate_groups(verified.groups, ks=args.k, allow_unequal_n=args.allow_unequal_n)
                reports.append(StepReport(verified.file.step, str(verified.file.path), results))
                disagreements += verified.disagreements
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    note = disagreement_note(disagreements)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    print(render_table(reports))
    if args.json is not None:
        extra = {"dumps": args.dumps, "data": args.data, "ground_truth_disagreements": len(disagreements)}
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(report_json(reports, options, extra) + "\n")
        except OSError as exc:
            print(f"error: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    return EXIT_OK


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    configure_parser(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
