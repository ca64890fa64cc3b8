"""Per-step figures of a training run, from verl's file logger (``$RUN_DIR/metrics/<attempt>.jsonl``, which every
recipe writes):
step time and generations per step, as the paper compares RLVR + DAPO (which regenerates non-diverse groups) with the
arena (which keeps them and pays judge calls instead).

    python -m arena_verl.runlog runs/arena_live [runs/rlvr_dapo ...] [--json out.json]

One table per run (a folder holding metrics.jsonl, or the file itself) and a last block comparing the runs' means.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arena_verl.data.metrics_log import summarise
from arena_verl.evaluation.tables import finite_or_none, text_table

__all__ = ["COLUMNS", "step_rows", "run_means", "format_table"]

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


def metrics_files(path: Path) -> list[Path]:
    """A run's metrics files, oldest first: ``RUN_DIR/metrics/*.jsonl`` (one per attempt; the recipes name them by
    start time, since verl's file logger truncates its file) and ``RUN_DIR/metrics.jsonl`` (recipes/cpu_smoke.sh);
    or the file itself."""
    path = Path(path)
    if not path.is_dir():
        return [path] if path.exists() else []
    attempts = sorted((path / "metrics").glob("*.jsonl")) if (path / "metrics").is_dir() else []
    single = [path / "metrics.jsonl"] if (path / "metrics.jsonl").exists() else []
    return single + attempts


def step_rows(path: Path) -> list[dict[str, float | None]]:
    """One row per logged training step over every attempt of the run (a step logged again after a resume: the
    later attempt's record wins)."""
    files = metrics_files(path)
    if not files:
        raise FileNotFoundError(f"{path}: no metrics (the recipes write RUN_DIR/metrics/<attempt>.jsonl)")
    steps: dict[int, dict] = {}
    for metrics in files:
        for step in summarise(metrics, rc=0, wall_s=0.0)["steps"]:
            steps[int(step["training/global_step"])] = step
    return [{column: finite_or_none(steps[s].get(key)) for column, key in COLUMNS} for s in sorted(steps)]


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
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    report = {}
    try:
        for run in args.runs:
            rows = step_rows(Path(run))
            report[run] = {"steps": rows, "means": run_means(rows)}
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    columns = [c for c, _ in COLUMNS]
    for run, data in report.items():
        print(f"# {run}")
        print(format_table(columns, [[row[c] for c in columns] for row in data["steps"]]))
        print()
    header = ["run", "steps", *columns[1:], "generations_per_hour"]
    print("# means per step")
    print(format_table(header, [[run, *(data["means"][c] for c in header[1:])] for run, data in report.items()]))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
