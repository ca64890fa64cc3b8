"""``results.json``: every arm's runs and their figures across seeds (mean and a Student-t 95% interval over seeds),
and the paired differences by seed that answer the experiment.

    {"plan": {...}, "assets": {...}, "arms": {arm: {"summary": str, "runs": [{"seed", "steps_logged", "start", "end",
      "final", "per_step", "steps", "val"}], "across_seeds": {figure: {"mean", "low", "high", "n"}}}},
     "paired": {arm: {figure: {"mean", "ci95": [lo, hi], "seeds"}}},           # arm minus rlvr, seed by seed
     "paired_control": {arm: {figure: ...}},                                  # a judge arm minus its random judge
     "gate": {...}, "budget": {...}, "costs": {...}}

``start`` and ``end``: per validation split, the pass rate and the valid-step prefix (mean and its standard error
clustered by problem) before and after training; ``per_step``: the run's per-step figures (one JSON line a step),
relative to ``results.json``. The paired figures (:data:`PAIRED_FIGURES`) are the after-training values: every arm
starts from the same policy, so a difference at the end is what training did.

"At a fixed generation budget": every run's validation pass rate at the last validation whose cumulative generations
(DAPO's discarded ones included) are within the budget, the budget being the smallest total any run of the grid
generated, so every run has reached it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from arena_verl.evaluation.costs import cost_columns

__all__ = [
    "PAIRED_FIGURES",
    "CONTROLS",
    "CERTAINTY_PAIRS",
    "across_seeds",
    "aggregate",
    "certainty_default",
    "paired",
    "reach",
    "t_interval",
]

# (figure, validation split, measure): what the paired differences compare, at the end of training.
PAIRED_FIGURES = {
    "pass_hard": ("test", "pass"),
    "prefix_hard": ("test", "prefix"),
    "prefix_all_wrong": ("all_wrong", "prefix"),
    "pass_all_wrong": ("all_wrong", "pass"),
}
BASELINE = "rlvr"
CONTROLS = {
    "arena_live": "arena_live_random",
    "arena_live_certain": "arena_live_random_certain",
    "arena_live_noisy": "arena_live_random",
    "arena_live_noisy_certain": "arena_live_random_certain",
}
# Certainty weighting on minus off, judge by judge (the pre-registered rule for its default: certainty_default).
CERTAINTY_PAIRS = {
    "arena_live_certain": "arena_live",
    "arena_live_noisy_certain": "arena_live_noisy",
    "arena_live_random_certain": "arena_live_random",
}
CERTAINTY_COST = 0.03  # the most a judge with signal may lose to certainty weighting, on the primary measure
PRIMARY = "prefix_hard"  # the primary endpoint's figure (docs/benchmarks/learning.md, pre-registration)
REACH_SE = 3.0  # RLVR did not move: the target is its start plus this many standard errors
# The pre-registered seeds an arm (at least): 8 for the noisy judge's pair, 6 for the others.
GRID_MIN_SEEDS = {"default": 6, "arena_live_noisy": 8, "arena_live_noisy_certain": 8}

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
    for figure, (split, measure) in PAIRED_FIGURES.items():
        start = run.get("start", {}).get(split, {}).get(measure, {}).get("mean")
        end = end_figure(run, figure)
        figures[f"start/{figure}"], figures[f"end/{figure}"] = start, end
        figures[f"change/{figure}"] = end - start if start is not None and end is not None else None
    figures["total_generations"] = run["steps"][-1]["generations_cumulative"] if run["steps"] else None
    return figures


def across_seeds(runs: list[dict], sources: list[str], budget: float | None) -> dict[str, dict]:
    per_run = [_run_figures(run, sources, budget) for run in runs]
    names = sorted({name for figures in per_run for name in figures})
    return {name: t_interval([figures.get(name) for figures in per_run]) for name in names}


def end_figure(run: dict, figure: str) -> float | None:
    split, measure = PAIRED_FIGURES[figure]
    return run.get("end", {}).get(split, {}).get(measure, {}).get("mean")


def paired(runs: list[dict], baseline_runs: list[dict]) -> dict[str, dict]:
    """Per figure: the mean of (run minus the baseline's run of the same seed) over the seeds both have, with its
    Student-t 95% interval."""
    base = {run["seed"]: run for run in baseline_runs}
    out = {}
    for figure in PAIRED_FIGURES:
        diffs, seeds = [], []
        for run in sorted(runs, key=lambda r: r["seed"]):
            mine, theirs = end_figure(run, figure), end_figure(base.get(run["seed"], {}), figure)
            if mine is not None and theirs is not None:
                diffs.append(mine - theirs)
                seeds.append(run["seed"])
        interval = t_interval(diffs)
        ci = [interval["low"], interval["high"]] if interval["low"] is not None else None
        out[figure] = {"mean": interval["mean"], "ci95": ci, "seeds": seeds}
    return out


def certainty_default(certainty: dict[str, dict]) -> dict:
    """The pre-registered rule: certainty weighting on by default iff it does not make the random judge worse (mean
    >= 0) and costs the exact and the noisy judge at most CERTAINTY_COST (their 95% intervals' lower bounds above
    -CERTAINTY_COST), on the primary measure paired by seed. ``on`` None until every pair has an interval."""
    random_pair = certainty.get("arena_live_random_certain", {}).get(PRIMARY, {})
    signal = [certainty.get(arm, {}).get(PRIMARY, {}) for arm in ("arena_live_certain", "arena_live_noisy_certain")]
    if random_pair.get("mean") is None or any(pair.get("ci95") is None for pair in signal):
        return {"on": None, "why": "not every pair of the rule has run (with at least two seeds)"}
    verdict = random_pair["mean"] >= 0 and all(pair["ci95"][0] > -CERTAINTY_COST for pair in signal)
    seeds = {arm: len(certainty[arm][PRIMARY]["seeds"]) for arm in CERTAINTY_PAIRS}
    short = [arm for arm, n in seeds.items() if n < GRID_MIN_SEEDS.get(arm, GRID_MIN_SEEDS["default"])]
    if short:  # the pre-registered seed counts are not in yet: the verdict so far, not the decision
        return {"on": None, "provisional": verdict, "seeds": seeds, "why": f"too few seeds yet: {', '.join(short)}"}
    return {"on": verdict, "seeds": seeds, "rule": certainty_default.__doc__.split(". ``on``")[0]}


def reach(results: dict[str, list[dict]], split: str = "test", measure: str = "prefix") -> dict:
    """Per arm, the first validation step (and the generations by then) at which its mean curve over seeds reaches
    RLVR's mean final value, or, when RLVR did not move (its mean final at most its mean start plus REACH_SE mean
    standard errors), that start plus REACH_SE standard errors; "not reached" when it never does. Descriptive."""
    base = results.get(BASELINE, [])
    curves = [run.get("val_curve") or [] for run in base]
    starts = [c[0][split][measure] for c in curves if c and c[0]["step"] == 0 and split in c[0]]
    starts = [s for s in starts if s.get("mean") is not None]
    finals = [c[-1][split][measure]["mean"] for c in curves if c and split in c[-1]]
    finals = [f for f in finals if f is not None]
    if not starts or not finals:
        return {}
    start = float(np.mean([s["mean"] for s in starts]))
    floor = start + REACH_SE * float(np.mean([s["se"] or 0.0 for s in starts]))
    target = max(float(np.mean(finals)), floor)
    out = {"target": target, "rlvr_moved": float(np.mean(finals)) > floor, "arms": {}}
    for arm, runs in results.items():
        by_step: dict[int, list[float]] = {}
        generations: dict[int, list[float]] = {}
        for run in runs:
            for row in run.get("val_curve") or []:
                if split in row and row[split][measure]["mean"] is not None:
                    by_step.setdefault(row["step"], []).append(row[split][measure]["mean"])
                    if row.get("generations_cumulative") is not None:
                        generations.setdefault(row["step"], []).append(row["generations_cumulative"])
        if not by_step:
            out["arms"][arm] = "no curve"
            continue
        reached = next((s for s in sorted(by_step) if np.mean(by_step[s]) >= target), None)
        out["arms"][arm] = (
            {"step": reached, "generations": float(np.mean(generations.get(reached, [0.0])))}
            if reached is not None
            else "not reached"
        )
    return out


def _without_per_problem(figures: dict) -> dict:
    return {split: {k: v for k, v in value.items() if k != "per_problem"} for split, value in figures.items()}


def _run_record(run: dict, arm: str) -> dict:
    record = {k: run[k] for k in ("seed", "steps_logged", "duplicate_steps", "final", "steps", "val", "wall_s")}
    record["learning_rate"] = run.get("learning_rate")
    record["revision"] = run.get("revision")
    record["start"] = _without_per_problem(run.get("start", {}))
    record["end"] = _without_per_problem(run.get("end", {}))
    record["per_step"] = f"runs/{arm}/seed{run['seed']}/{run['per_step']}" if run.get("per_step") else None
    record["val_curve"] = run.get("val_curve", [])
    record["trainer"] = run.get("trainer", "verl")
    return record


def aggregate(results: dict[str, list[dict]], summaries: dict[str, str], plan: dict, assets: dict) -> dict[str, Any]:
    """``results``: arm -> its finished runs (``grid.run_one``'s records)."""
    sources = sorted({k for runs in results.values() for run in runs for row in run["val"] for k in row} - {"step"})
    sources = [s for s in sources if s != "generations_cumulative"]
    totals = [run["steps"][-1]["generations_cumulative"] for runs in results.values() for run in runs if run["steps"]]
    budget = min(totals) if totals else None
    certainty = {
        arm: paired(results[arm], results[off])
        for arm, off in CERTAINTY_PAIRS.items()
        if arm in results and off in results
    }
    arms = {}
    for arm, runs in results.items():
        runs = sorted(runs, key=lambda r: r["seed"])
        arms[arm] = {
            "summary": summaries.get(arm, ""),
            "runs": [_run_record(run, arm) for run in runs],
            "across_seeds": across_seeds(runs, sources, budget),
        }
    return {
        "plan": plan,
        "assets": assets,
        "val_sources": sources,
        "generation_budget": budget,
        "interval": "mean over seeds and its 95% Student-t interval (n-1 degrees of freedom)",
        "arms": arms,
        "paired": {arm: paired(runs, results[BASELINE]) for arm, runs in results.items() if arm != BASELINE}
        if BASELINE in results
        else {},
        "paired_control": {
            arm: paired(results[arm], results[control])
            for arm, control in CONTROLS.items()
            if arm in results and control in results
        },
        "costs": cost_columns({arm: [run["steps"] for run in runs] for arm, runs in results.items()}),
        "certainty": certainty,
        "certainty_default": certainty_default(certainty),
        "reach": reach(results),
    }
