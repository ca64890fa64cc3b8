"""``results.json``: every arm's runs and their figures across seeds (mean and a Student-t 95% interval over seeds).

    {"plan": {...}, "assets": {...}, "arms": {arm: {"summary": str, "runs": [{"seed", "steps_logged", "final",
      "steps", "val"}], "across_seeds": {figure: {"mean", "low", "high", "n"}}}}, "budget": {...}, "costs": {...}}

"At a fixed generation budget": every run's validation pass rate at the last validation whose cumulative generations
(DAPO's discarded ones included) are within the budget, the budget being the smallest total any run of the grid
generated, so every run has reached it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from arena_verl.evaluation.costs import cost_columns

__all__ = ["across_seeds", "aggregate", "t_interval"]

# The figures summarised across seeds: each run's mean over its steps.
_STEP_MEANS = (
    "step_s",
    "generations",
    "all_correct_share",
    "all_wrong_share",
    "non_diverse_share",
    "nonzero_advantage_share",
    "mean_abs_advantage",
    "response_length",
    "judge_calls",
    "reward_tail_s",
)


def t_interval(values: list[float], confidence: float = 0.95) -> dict[str, float | int | None]:
    """Mean and the Student-t interval of the mean over ``values`` (seeds); one value has no interval."""
    from scipy import stats

    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = float(np.mean(values))
    if n == 1:
        return {"mean": mean, "low": None, "high": None, "n": 1}
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def _run_figures(run: dict, sources: list[str], budget: float | None) -> dict[str, float | None]:
    figures: dict[str, float | None] = {}
    for source in sources:
        rows = [row for row in run["val"] if row.get(source) is not None]
        figures[f"val_last/{source}"] = rows[-1][source] if rows else None
        figures[f"val_start/{source}"] = rows[0][source] if rows and rows[0]["step"] == 0 else None
        within = [row for row in rows if budget is not None and row["generations_cumulative"] <= budget]
        figures[f"val_at_budget/{source}"] = within[-1][source] if within else None
    for name in _STEP_MEANS:
        values = [row[name] for row in run["steps"] if row.get(name) is not None]
        figures[f"mean/{name}"] = float(np.mean(values)) if values else None
    figures["total_generations"] = run["steps"][-1]["generations_cumulative"] if run["steps"] else None
    return figures


def across_seeds(runs: list[dict], sources: list[str], budget: float | None) -> dict[str, dict]:
    per_run = [_run_figures(run, sources, budget) for run in runs]
    names = sorted({name for figures in per_run for name in figures})
    return {name: t_interval([figures.get(name) for figures in per_run]) for name in names}


def aggregate(results: dict[str, list[dict]], summaries: dict[str, str], plan: dict, assets: dict) -> dict[str, Any]:
    """``results``: arm -> its finished runs (``grid.run_one``'s records)."""
    sources = sorted({k for runs in results.values() for run in runs for row in run["val"] for k in row} - {"step"})
    sources = [s for s in sources if s != "generations_cumulative"]
    totals = [run["steps"][-1]["generations_cumulative"] for runs in results.values() for run in runs if run["steps"]]
    budget = min(totals) if totals else None
    arms = {}
    for arm, runs in results.items():
        runs = sorted(runs, key=lambda r: r["seed"])
        arms[arm] = {
            "summary": summaries.get(arm, ""),
            "runs": [
                {k: run[k] for k in ("seed", "steps_logged", "duplicate_steps", "final", "steps", "val", "wall_s")}
                for run in runs
            ],
            "across_seeds": across_seeds(runs, sources, budget),
        }
    return {
        "plan": plan,
        "assets": assets,
        "val_sources": sources,
        "generation_budget": budget,
        "interval": "mean over seeds and its 95% Student-t interval (n-1 degrees of freedom)",
        "arms": arms,
        "costs": cost_columns({arm: [run["steps"] for run in runs] for arm, runs in results.items()}),
    }
