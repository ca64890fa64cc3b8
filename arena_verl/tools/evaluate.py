"""Evaluate validation generations per benchmark: avg@n and unbiased pass@k, as the paper's tables report them.

    arena-verl evaluate --dumps runs/arenarl/validation --data aime24.parquet gpqa.parquet
    python scripts/eval/evaluate.py --dumps runs/rlvr/validation/200.jsonl --data val.parquet --k 1 5 16 --json r.json
    python scripts/eval/evaluate.py --dumps generations.jsonl --sandbox-url http://sandbox:8080/run_code

Exit status: 0 a report was written (benchmarks that could not be scored are listed as such), 2 the input cannot
be evaluated, ``--json`` cannot be written (checked before scoring), or a usage error (one line naming the file,
row, prompt or flag). A benchmark with samples that could not be verified (no ground truth, samples of one prompt
with different ground truths, a ground truth the verifier cannot read, code without ``--sandbox-url`` or that the
sandbox could not run: unreachable, timed out, an error status, a malformed reply) gets no number: its row says why
and how many, its JSON has ``unverified_prompts``, ``unverified_samples`` and ``unverified_reasons``, its
``statuses`` count every sample, and one ``warning:`` line on stderr names it with the same counts. A prompt whose
samples carry different ground truths is also named, with its truths, in a ``warning:`` line of its own. See
scripts/eval/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from arena_verl.core.errors import EXIT_OK, InputError, guarded, write_output
from arena_verl.data.dump_files import find_dump_files
from arena_verl.data.dump_notes import blank_line_note, differing_truth_note, disagreement_note, duplicate_note
from arena_verl.evaluation.report import StepReport, evaluate_groups, render_table, report_json
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.tables import table_cell
from arena_verl.evaluation.verified import DIFFERING_COPIES, DIFFERING_TRUTHS, UNVERIFIED_STATUSES, read_verified
from arena_verl.tools.common.options import add_data, add_verification, scoring_options

__all__ = ["check_writable", "configure_parser", "main", "run", "unverified_note"]


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
    """The report for ``args``; bad input raises :class:`InputError` (``guarded`` makes it one line, exit 2)."""
    if args.k is not None and min(args.k) < 1:
        raise InputError("--k values must be >= 1")
    options = scoring_options(args, use_dumped_scores=args.use_dumped_scores)
    if args.json is not None:
        check_writable(args.json, what="--json")  # before hours of scoring, not after
        _refuse_an_input_as_output(args)
    reports, disagreements, duplicates, blanks, differing = [], [], [], [], []
    with Scorer(options) as scorer:
        for verified in read_verified(
            args.dumps, scorer, data=args.data, step=args.step, need_data=True, generations=True
        ):
            results = evaluate_groups(verified.groups, ks=args.k, allow_unequal_n=args.allow_unequal_n)
            reports.append(StepReport(verified.file.step, str(verified.file.path), results))
            disagreements += verified.disagreements
            duplicates += verified.duplicates
            blanks += verified.blank_lines
            differing += [
                (verified.file.path, g.prompt) for g in verified.groups if g.unverified_because == DIFFERING_TRUTHS
            ]
    if args.json is not None:  # written before the table: a failed write leaves nothing printed as if done
        extra = {
            "dumps": args.dumps,
            "data": args.data,
            "ground_truth_disagreements": len(disagreements),
            "duplicate_uids": len(duplicates),
            "differing_truth_prompts": len(differing),
            "blank_lines": sum(len(blank.lines) for blank in blanks),
        }
        write_output(args.json, report_json(reports, options, extra) + "\n", what="--json")
    notes = (
        disagreement_note(disagreements),
        duplicate_note(duplicates, DIFFERING_COPIES),
        blank_line_note(blanks),
        differing_truth_note(differing),
        unverified_note(reports),
    )
    for note in filter(None, notes):
        print(f"warning: {note}", file=sys.stderr)
    print(render_table(reports))
    return EXIT_OK


def _refuse_an_input_as_output(args) -> None:
    """``--json`` must not replace a file the report is made from (a dump file or a --data parquet)."""
    target = Path(args.json).resolve()
    inputs = [*find_dump_files(args.dumps).values(), *(Path(p) for p in args.data or [])]
    if any(target == Path(p).resolve() for p in inputs):
        raise InputError(f"--json {args.json}: is one of the files read (the dump or --data): choose another path")


def check_writable(path: Path, what: str) -> None:
    """``path`` can be created or replaced (its folder made and written to), else an :class:`InputError`."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path}: is a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None


def unverified_note(reports: list[StepReport]) -> str | None:
    """One line on the samples that could not be verified (no ground truth, several, one the verifier cannot read,
    code the sandbox could not run or without a sandbox), whose benchmarks get no number; None when there are none.
    The counts are the statuses the rows and the JSON show."""
    withheld: Counter = Counter()
    names = set()
    for r in (r for report in reports for r in report.results):
        mine = {status: r.statuses[status] for status in UNVERIFIED_STATUSES if r.statuses.get(status)}
        if mine:
            withheld.update(mine)
            names.add(table_cell(r.benchmark))  # one line, whatever the data source's name holds
    if not withheld:
        return None
    why = ", ".join(f"{count} {status}" for status, count in sorted(withheld.items()))
    return (
        f"{sum(withheld.values())} sample(s) of {', '.join(sorted(names))} could not be verified ({why}): never "
        "counted as wrong, their benchmarks get no number (see their rows)"
    )


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
