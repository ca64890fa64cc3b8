"""The paper's cost columns (its Table 2) from per-step figures of training runs: one generator for every table that
compares what arms cost (the learning experiment, the judge-cost measurements).

Input: ``{arm: [run, ...]}`` with each run a list of per-step rows (``step_s``, ``generations``,
``nonzero_advantage_share``, ``judge_calls``, ``reward_tail_s``; None where a step did not log it). Output per arm:

- ``step_s``: seconds per step, mean over every step of every run, and its p50;
- ``generations_per_step``: rollouts generated per step, DAPO's discarded (regenerated) groups included;
- ``generations_per_useful_sample``: generations per sample that carried a non-zero advantage (the arena's rewards
  where it gave them): ``sum(generations) / sum(generations * nonzero_advantage_share)`` over steps;
- ``judge_calls_per_step``; ``judge_computed_tokens_per_step``: the tokens the judge's engine computed (prompt minus
  prefix-cache hits, as it reported them; None for runs that did not log it, 0 for a judge that reads no tokens);
- ``reward_tail_s_p50`` / ``_p95``: the time the reward stage added after the step's last sample, over steps;
- ``vs_<baseline>``: the arm's step time and generations per step over the baseline's (``rlvr``, ``rlvr_dapo``),
  when both ran.

The first step of a run is left out of the time figures (it carries vLLM's and the judge's warm-up); every step
counts for the generation figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BASELINES", "cost_columns", "cost_rows"]

BASELINES = ("rlvr", "rlvr_dapo")


def _values(runs: list[list[dict]], name: str, skip_first: bool = False) -> list[float]:
    return [
        row[name]
        for steps in runs
        for row in (steps[1:] if skip_first and len(steps) > 1 else steps)
        if row.get(name) is not None
    ]


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _quantile(values: list[float], q: float) -> float | None:
    return float(np.quantile(values, q)) if values else None


def arm_costs(runs: list[list[dict]]) -> dict[str, Any]:
    step_s = _values(runs, "step_s", skip_first=True)
    tails = _values(runs, "reward_tail_s", skip_first=True)
    useful = [
        (row["generations"], row["generations"] * row["nonzero_advantage_share"])
        for steps in runs
        for row in steps
        if row.get("generations") is not None and row.get("nonzero_advantage_share") is not None
    ]
    useful_total = sum(u for _, u in useful)
    return {
        "runs": len(runs),
        "steps": sum(len(steps) for steps in runs),
        "step_s": _mean(step_s),
        "step_s_p50": _quantile(step_s, 0.5),
        "generations_per_step": _mean(_values(runs, "generations")),
        "generations_per_useful_sample": (sum(g for g, _ in useful) / useful_total) if useful_total > 0 else None,
        "judge_calls_per_step": _mean(_values(runs, "judge_calls")),
        "judge_computed_tokens_per_step": _mean(_values(runs, "judge_computed_tokens")),
        "reward_tail_s_p50": _quantile(tails, 0.5),
        "reward_tail_s_p95": _quantile(tails, 0.95),
    }


def cost_columns(arms: dict[str, list[list[dict]]]) -> dict[str, dict[str, Any]]:
    table = {arm: arm_costs(runs) for arm, runs in arms.items()}
    for arm, costs in table.items():
        for baseline in BASELINES:
            if baseline == arm or baseline not in table:
                continue
            base = table[baseline]
            costs[f"vs_{baseline}"] = {
                name: (costs[name] / base[name]) if costs[name] is not None and base[name] else None
                for name in ("step_s", "generations_per_step")
            }
    return table


def cost_rows(table: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """The table as text cells (header, rows), for a Markdown or HTML page."""
    header = [
        "arm",
        "s/step",
        "generations/step",
        "generations/useful sample",
        "judge calls/step",
        "judge computed tokens/step",
        "reward tail p50 / p95 (s)",
        "step time vs rlvr",
        "vs rlvr_dapo",
    ]

    def cell(value, digits=2):
        return "-" if value is None else f"{value:.{digits}f}"

    rows = []
    for arm, c in table.items():
        rows.append(
            [
                arm,
                cell(c["step_s"]),
                cell(c["generations_per_step"], 1),
                cell(c["generations_per_useful_sample"]),
                cell(c["judge_calls_per_step"], 1),
                cell(c["judge_computed_tokens_per_step"], 0),
                f"{cell(c['reward_tail_s_p50'])} / {cell(c['reward_tail_s_p95'])}",
                cell(c.get("vs_rlvr", {}).get("step_s")),
                cell(c.get("vs_rlvr_dapo", {}).get("step_s")),
            ]
        )
    return header, rows
