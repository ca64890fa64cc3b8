"""The fast trainer's cost: one arm of the learning experiment's grid plan (300 steps of 32 prompts x 8 samples,
validated every 25 steps on the hard test split and the all-wrong set) through ``arena-verl experiment``'s own run
path (:func:`arena_verl.tools.experiment.grid.run_one` with the plan's ``trainer="fast"``), timed end to end.

    .venv/bin/python scripts/bench/fast_trainer.py [--arms arena_live,rlvr] [--steps 300] [--out f.json]

It prints, per arm: the run's wall time (the process start, the recipe's config, the policy, every step and every
validation), the mean step and its parts (generation, reward, update) and the validations' share; the issue's bound
is 8 minutes for ``arena_live`` on an idle machine. The machine's load average before and after each run is recorded.
The warmed policy is built once under ``--cache``; the assets under ``--work``. Exit status: 0 every run finished.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from arena_verl.data.metrics_log import metric_value, scan_records, training_steps
from arena_verl.tools.experiment.arms import ARMS, FAST
from arena_verl.tools.experiment.command import build_assets
from arena_verl.tools.experiment.grid import Run, code_revision, run_one

PARTS = ("step", "gen", "reward", "update_actor")


def _step_means(folder: Path) -> dict[str, float]:
    records = []
    for path in sorted((folder / "metrics").glob("*.jsonl")):
        records.extend(scan_records(path).records)
    steps = training_steps(records)
    out = {}
    for part in PARTS:
        values = [metric_value(data.get(f"timing_s/{part}")) for data in steps.values()]
        values = [v for v in values if v is not None]
        out[part] = sum(values) / len(values) if values else None
    out["steps"] = len(steps)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", default="arena_live")
    parser.add_argument("--steps", type=int, default=FAST.steps)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "arena-verl")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.arms.split(",") if n.strip()]
    if not names or any(n not in ARMS for n in names) or not 1 <= args.steps <= 2000:
        parser.error(f"--arms: some of {', '.join(ARMS)}; --steps in [1, 2000]")
    work = args.work or Path(tempfile.mkdtemp(prefix="fast_trainer_"))
    plan = dataclasses.replace(FAST, steps=args.steps, test_freq=min(FAST.test_freq, args.steps))

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    assets = build_assets(work, plan, args.cache, False, log)
    figures = {"revision": code_revision(), "plan": dataclasses.asdict(plan), "runs": {}}
    failed = 0
    for name in names:
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        rc, result = run_one(Run(ARMS[name], args.seed), plan, assets, work, lambda line, n=name: log(f"{n}: {line}"))
        wall = time.monotonic() - started
        means = _step_means(Run(ARMS[name], args.seed).folder(work))
        training = (means["step"] or 0.0) * means["steps"]
        figures["runs"][name] = {
            "rc": rc,
            "wall_s": round(wall, 1),
            "mean_s": {k: round(v, 3) if v else v for k, v in means.items()},
            "outside_steps_s": round(wall - training, 1),  # start-up, validations
            "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        }
        failed += result is None
    columns = (("wall (min)", 11), ("step (s)", 10), ("gen", 8), ("reward", 8), ("update", 8), ("outside", 9))
    print(f"{'arm':<22}" + "".join(f"{h:>{w}}" for h, w in columns) + f"{'load':>11}")
    for name, run in figures["runs"].items():
        m = run["mean_s"]
        cells = [f"{(m[p] or 0):>8.3f}" for p in ("gen", "reward", "update_actor")]
        print(
            f"{name:<22}{run['wall_s'] / 60:>11.2f}{(m['step'] or 0):>10.3f}{''.join(cells)}"
            f"{run['outside_steps_s']:>8.0f}s{run['load_before']:>5.1f}-{run['load_after']:<4.1f}"
        )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
