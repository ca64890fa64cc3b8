"""Evaluate validation generations per benchmark: avg@n and unbiased pass@k, as the paper's tables report them.

    python scripts/eval/evaluate.py --dumps runs/arenarl/validation --data aime24.parquet gpqa.parquet
    python scripts/eval/evaluate.py --dumps runs/rlvr/validation/200.jsonl --data val.parquet --k 1 5 16 --json r.json
    python scripts/eval/evaluate.py --dumps generations.jsonl --sandbox-url http://sandbox:8080/run_code

Exit status: 0 a report was written (benchmarks that could not be scored are listed as such), 1 the input cannot
be evaluated (the message names the file, row or prompt), 2 a usage error. See scripts/eval/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_verl.data.dumps import (
    EvaluationInputError,
    find_dump_files,
    read_samples,
    read_validation_data,
    select_steps,
)
from arena_verl.evaluation.report import Scorer, ScoringOptions, StepReport, evaluate, render_table, report_json
from arena_verl.verify.math_verifier import EXTRACTION_MODES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dumps", required=True, help="trainer.validation_data_dir, one <step>.jsonl, or a generation jsonl"
    )
    parser.add_argument("--data", nargs="+", default=[], help="the validation parquet file(s) (needed for verl dumps)")
    parser.add_argument("--step", default="latest", help="latest (default), all, or a step number")
    parser.add_argument("--k", nargs="+", type=int, help="pass@k for these k (default: pass@5 for code, none else)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--sandbox-url", help="sandbox_fusion run_code URL; without it code is not scored")
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
    parser.add_argument(
        "--answer-extraction",
        choices=EXTRACTION_MODES,
        default="boxed",
        help="the math verifier's answer extraction (reward.arena.answer_extraction)",
    )
    parser.add_argument("--workers", type=int, default=ScoringOptions().workers, help="scoring processes/threads")
    args = parser.parse_args(argv)
    if args.k is not None and min(args.k) < 1:
        parser.error("--k values must be >= 1")
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    options = ScoringOptions(
        sandbox_url=args.sandbox_url,
        use_dumped_scores=args.use_dumped_scores,
        answer_extraction=args.answer_extraction,
        workers=args.workers,
    )
    try:
        validation = read_validation_data(args.data) if args.data else None
        reports = []
        with Scorer(options) as scorer:
            for step, path in select_steps(find_dump_files(args.dumps), args.step):
                samples = read_samples(path, validation)
                results = evaluate(samples, scorer, ks=args.k, allow_unequal_n=args.allow_unequal_n)
                reports.append(StepReport(step, str(path), results))
    except EvaluationInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(render_table(reports))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report_json(reports, options, {"dumps": args.dumps, "data": args.data}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
