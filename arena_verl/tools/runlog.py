"""Per-step figures of a training run, from verl's file logger (``$RUN_DIR/metrics/<attempt>.jsonl``, which every
recipe writes):
step time and generations per step, as the paper compares RLVR + DAPO (which regenerates non-diverse groups) with the
arena (which keeps them and pays judge calls instead).

    python -m arena_verl.runlog runs/arena_live [runs/rlvr_dapo ...] [--json out.json]

One table per run (a folder holding metrics.jsonl, or the file itself) and a last block comparing the runs' means.

Input contract: a run without metrics files, a metrics file that cannot be read, or a ``--json`` that cannot be
written (or is one of the files read) is one ``error:`` line and exit 2, with nothing printed (``--json`` is written
before the tables). A line that is no usable record (not UTF-8, not JSON, a torn last line, not an object with a
``data`` object, a step not a whole number 0 <= step < 2**53: null, infinite, negative, 2.5, a string) is skipped and
counted: a ``(N metrics records skipped: reason: n, ...)`` line under the run's table, and ``records_skipped`` and
``records_skipped_by_reason`` per run in ``--json``. A metric that is not a finite number is ``-`` (null in JSON). A
step logged more than once (a resumed attempt logs it again, or one file holds it twice) keeps its last record and is
counted: one ``warning:`` line per run naming the steps, and ``duplicate_steps`` (the steps) and
``duplicate_records`` (the records not kept) per run in ``--json``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from arena_verl.core.errors import InputError, guarded, write_output
from arena_verl.data.metrics_log import (
    SKIP_REASONS,
    STEP_KEY,
    logged_step,
    metric_value,
    metrics_files,
    scan_records,
    training_steps,
)
from arena_verl.evaluation.tables import text_table

__all__ = ["COLUMNS", "RunSteps", "duplicate_note", "read_run", "step_rows", "run_means", "format_table"]

# (column, verl/arena metric) in print order.
COLUMNS = (
    ("step", "training/global_step"),
    ("step_s", "timing_s/step"),
    ("gen_s", "timing_s/gen"),
    ("generations", "arena/generations"),
    ("discarded", "arena/generations_discarded"),
    ("groups_routed", "arena/groups_routed"),
    ("judge_calls", "arena/judge_calls"),
    ("tail_s", "arena/tail_after_last_sample_s"),
    ("reward_mean", "critic/rewards/mean"),
)


@dataclasses.dataclass
class RunSteps:
    """One row per logged training step of a run, the files read, the records skipped, by reason, and the steps
    logged more than once (step: records; the last one is the row)."""

    rows: list[dict[str, float | None]]
    files: list[Path]
    skipped: collections.Counter
    repeated: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def read_run(path: Path) -> RunSteps:
    """Every attempt of the run (a step logged again after a resume: the later attempt's record wins); lines that are
    no usable record are skipped and counted (:mod:`arena_verl.data.metrics_log`). A run without metrics files, or
    a file that cannot be read, is an :class:`InputError` naming it."""
    files = metrics_files(path)
    if not files:
        raise InputError(
            f"{path}: no metrics (the recipes write RUN_DIR/metrics/<attempt>.jsonl; cpu_smoke RUN_DIR/metrics.jsonl)"
        )
    steps: dict[int, dict] = {}
    skipped: collections.Counter = collections.Counter()
    logged: collections.Counter = collections.Counter()  # records per training step, over every attempt
    for metrics in files:
        scan = scan_records(metrics)
        skipped.update(scan.skipped)
        logged.update(logged_step(r["data"][STEP_KEY]) for r in scan.records if STEP_KEY in r["data"])
        steps.update(training_steps(scan.records))
    rows = [{column: metric_value(steps[s].get(key)) for column, key in COLUMNS} for s in sorted(steps)]
    for row, step in zip(rows, sorted(steps)):
        row["step"] = float(step)  # the validated step (training_steps' key), never a value float() misreads
    repeated = {step: count for step, count in sorted(logged.items()) if count > 1}
    return RunSteps(rows, files, skipped, repeated)


def duplicate_note(run: str, repeated: dict[int, int], shown: int = 10) -> str | None:
    """One line on the steps of ``run`` logged more than once (None when there are none)."""
    if not repeated:
        return None
    steps = ", ".join(str(step) for step in list(repeated)[:shown]) + (", ..." if len(repeated) > shown else "")
    extra = sum(repeated.values()) - len(repeated)
    return (
        f"{run}: {len(repeated)} step(s) logged more than once (step {steps}; {extra} earlier record(s) not used): "
        "the last record of each step is kept"
    )


def step_rows(path: Path) -> list[dict[str, float | None]]:
    """One row per logged training step over every attempt of the run (see :func:`read_run`)."""
    return read_run(path).rows


def run_means(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    """Mean of each column over the steps that logged it (None when none did), and the generation throughput."""
    means: dict[str, float | None] = {"steps": float(len(rows))}
    for column, _ in COLUMNS[1:]:
        values = [row[column] for row in rows if row[column] is not None]
        means[column] = sum(values) / len(values) if values else None
    step_s, generations = means["step_s"], means["generations"]
    means["generations_per_hour"] = 3600.0 * generations / step_s if step_s and generations else None
    return means


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    return text_table(header, [[_cell(v) for v in row] for row in rows], align="right", rule=False)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e9 else f"{value:.4g}"
    return str(value)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", help="run folders (RUN_DIR) or metrics.jsonl files")
    parser.add_argument("--json", default=None, help="also write the rows and means here")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Read every run (bad input: InputError, exit 2), write ``--json`` (before any table: an unwritable place is
    exit 2 with nothing printed), then print the tables."""
    report, inputs, warnings = {}, set(), []
    for run in args.runs:
        steps = read_run(Path(run))
        inputs.update(f.resolve() for f in steps.files)
        report[run] = {
            "steps": steps.rows,
            "means": run_means(steps.rows),
            "records_skipped": steps.skipped_total,
            "records_skipped_by_reason": {r: steps.skipped[r] for r in SKIP_REASONS if steps.skipped[r]},
            "duplicate_steps": list(steps.repeated),
            "duplicate_records": sum(steps.repeated.values()) - len(steps.repeated),
        }
        note = duplicate_note(run, steps.repeated)
        if note:
            warnings.append(note)
    if args.json:
        if Path(args.json).resolve() in inputs:
            raise InputError(f"--json {args.json}: is one of the metrics files read; give another path")
        write_output(args.json, json.dumps(report, indent=2), what="--json")
    for note in warnings:
        print(f"warning: {note}", file=sys.stderr)
    columns = [c for c, _ in COLUMNS]
    for run, data in report.items():
        print(f"# {run}")
        print(format_table(columns, [[row[c] for c in columns] for row in data["steps"]]))
        if data["records_skipped"]:
            reasons = ", ".join(f"{r}: {n}" for r, n in data["records_skipped_by_reason"].items())
            print(f"({data['records_skipped']} metrics records skipped: {reasons})")
        print()
    header = ["run", "steps", *columns[1:], "generations_per_hour"]
    print("# means per step")
    print(format_table(header, [[run, *(data["means"][c] for c in header[1:])] for run, data in report.items()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
