"""The gate before the grid (``arena-verl experiment --gate``): is there a setting at which this policy learns at all?

The candidates (learning rate, prompts a step, steps, warm-up: :data:`arms.GATE_CANDIDATES`) and the rule are fixed
before the first pilot: ``OUT/gate.json`` records them (``registered``), and a folder whose record names other
candidates is refused. At every candidate, pilots of the reference (``valid_chain``: a right answer counts only
through a fully valid chain) and of ``rlvr``, one per gate seed (:data:`arms.GATE_SEEDS`, which the grid never uses),
validated before and after training on the gate's own hard draw (``pilot``; never the split the grid reports). No
arena arm runs in the gate.

**The rule.** A candidate passes when the reference raised the valid prefix by at least :data:`RISE_SE` standard
errors of the per-problem change in every one of its seeds (at least :data:`MIN_SEEDS`). Among passing candidates the
grid takes the one that serves RLVR best: the largest mean RLVR prefix change over the seeds (ties: the smaller
learning rate). Whether RLVR moves is a result, not a condition. With no passing candidate the grid does not run.
Each pilot's figures also say whether it collapsed (pass rate or prefix fell by ``RISE_SE``, or its responses shrank
below half their first five steps' length).
"""

from __future__ import annotations

import dataclasses
import math

from arena_verl.tools.experiment.arms import Candidate
from arena_verl.tools.experiment.measures import paired_change

__all__ = ["MIN_SEEDS", "RISE_SE", "RULE", "gate_record", "pilot_figures", "registration"]

RISE_SE = 3.0
MIN_SEEDS = 3
SPLIT = "pilot"
_FIGURES = {"pass": 0, "prefix": 1}
RULE = (
    f"a candidate passes when the valid-chain reference raised the valid prefix on the gate's own hard draw by >= "
    f"{RISE_SE:g} standard errors of the per-problem change in every one of its seeds (>= {MIN_SEEDS}); among passing "
    f"candidates the grid takes the one with the largest mean RLVR prefix change over the seeds (ties: the smaller "
    f"learning rate); whether RLVR moves is a result, not a condition; no passing candidate: no grid"
)


def registration(candidates: tuple[Candidate, ...], seeds: tuple[int, ...], arms: tuple[str, str], **extra) -> dict:
    """What the gate fixes before its first pilot (``gate.json``'s ``registered``)."""
    return {
        "candidates": [dataclasses.asdict(c) | {"label": c.label} for c in candidates],
        "seeds": list(seeds),
        "arms": {"reference": arms[0], "rlvr": arms[1]},
        "rule": RULE,
        **extra,
    }


def _length(steps: list[dict], which: slice) -> float | None:
    values = [row["response_length"] for row in steps[which] if row.get("response_length") is not None]
    return sum(values) / len(values) if values else None


def pilot_figures(result: dict) -> dict:
    """One pilot's gate figures from its ``result.json``."""
    start = result.get("start", {}).get(SPLIT, {})
    end = result.get("end", {}).get(SPLIT, {})
    figures = {
        "arm": result.get("arm"),
        "seed": result.get("seed"),
        "learning_rate": result.get("learning_rate"),
        "prompts_per_step": result.get("prompts_per_step"),
        "warmup_steps": result.get("warmup_steps", 0),
        "steps": len(result.get("steps_logged", [])),
    }
    for name, index in _FIGURES.items():
        figures[f"{name}_start"] = start.get(name, {}).get("mean")
        figures[f"{name}_end"] = end.get(name, {}).get("mean")
        figures[f"{name}_change"] = paired_change(start.get("per_problem", {}), end.get("per_problem", {}), index)
    steps = result.get("steps", [])
    first, last = _length(steps, slice(0, 5)), _length(steps, slice(-5, None))
    figures["response_length_first5"], figures["response_length_last5"] = first, last
    z = {name: figures[f"{name}_change"].get("z") for name in _FIGURES}
    figures["moved"] = z["prefix"] is not None and z["prefix"] >= RISE_SE
    shrank = first is not None and last is not None and last < 0.5 * first
    figures["collapsed"] = shrank or any(v is not None and v <= -RISE_SE for v in z.values())
    return figures


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return sum(values) / len(values) if values else None


def gate_record(registered: dict, results_by_candidate: dict[str, list[dict]]) -> dict:
    """``{"registered", "rule", "candidates": [{label, settings, pilots, reference_moved_seeds, rlvr_prefix_change,
    passed}], "passed", "chosen"}`` from the finished pilots (``label -> result.json`` contents)."""
    reference, rlvr = registered["arms"]["reference"], registered["arms"]["rlvr"]
    rows = []
    for candidate in registered["candidates"]:
        pilots = [pilot_figures(r) for r in results_by_candidate.get(candidate["label"], [])]
        ref = [p for p in pilots if p["arm"] == reference]
        base = [p for p in pilots if p["arm"] == rlvr]
        moved = sorted(p["seed"] for p in ref if p["moved"])
        rows.append(
            {
                "label": candidate["label"],
                "settings": {k: v for k, v in candidate.items() if k != "label"},
                "pilots": sorted(pilots, key=lambda p: (str(p["arm"]), p["seed"] if p["seed"] is not None else -1)),
                "reference_seeds": len(ref),
                "reference_moved_seeds": moved,
                "reference_prefix_change": _mean([p["prefix_change"].get("change") for p in ref]),
                "rlvr_seeds": len(base),
                "rlvr_prefix_change": _mean([p["prefix_change"].get("change") for p in base]),
                "rlvr_pass_change": _mean([p["pass_change"].get("change") for p in base]),
                "passed": len(ref) >= MIN_SEEDS and len(moved) == len(ref),
                "complete": len(ref) >= len(registered["seeds"]) and len(base) >= len(registered["seeds"]),
            }
        )
    passing = [row for row in rows if row["passed"] and row["complete"]]
    chosen = max(
        passing,
        key=lambda row: (
            row["rlvr_prefix_change"] if row["rlvr_prefix_change"] is not None else -math.inf,
            -row["settings"]["learning_rate"],
        ),
        default=None,
    )
    return {
        "registered": registered,
        "rule": RULE,
        "candidates": rows,
        "complete": all(row["complete"] for row in rows),
        # every candidate's pilots are in before one is chosen: "among passing candidates" means all of them
        "passed": chosen is not None and all(row["complete"] for row in rows),
        "chosen": chosen["settings"] if chosen and all(row["complete"] for row in rows) else None,
    }
