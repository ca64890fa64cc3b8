"""The gate before the grid: RLVR alone must move the policy (``arena-verl experiment --gate``).

A pilot is RLVR at one learning rate (seed 0), validated before and after training on the gate's own draw of hard
problems (``pilot``; never the split the grid reports). It **moved** the policy when its pass rate or its mean valid
prefix rose by at least :data:`RISE_SE` standard errors of the per-problem change, and it **collapsed** when either
fell by as much or its responses shrank below half their starting length (the policy stopped writing steps). The
grid runs at the learning rate of the pilot that moved most (largest prefix rise in standard errors) without
collapse; with none, it does not run.
"""

from __future__ import annotations

import math

from arena_verl.core.errors import InputError
from arena_verl.tools.experiment.measures import paired_change

__all__ = ["RISE_SE", "gate_record", "learning_rates", "pilot_figures"]

RISE_SE = 3.0
SPLIT = "pilot"
_FIGURES = {"pass": 0, "prefix": 1}


def learning_rates(text: str | None, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        rates = tuple(float(item) for item in text.split(","))
    except ValueError:
        raise InputError(f"--learning-rates {text!r}: comma-separated numbers, e.g. 1e-4,3e-4") from None
    if not rates or any(not math.isfinite(r) or not 0 < r < 1 for r in rates) or len(set(rates)) != len(rates):
        raise InputError(f"--learning-rates {text!r}: distinct numbers in (0, 1)")
    return rates


def _length(steps: list[dict], which: slice) -> float | None:
    values = [row["response_length"] for row in steps[which] if row.get("response_length") is not None]
    return sum(values) / len(values) if values else None


def pilot_figures(result: dict) -> dict:
    """One pilot's gate figures from its ``result.json``."""
    start = result.get("start", {}).get(SPLIT, {})
    end = result.get("end", {}).get(SPLIT, {})
    figures = {
        "learning_rate": result.get("learning_rate"),
        "prompts_per_step": result.get("prompts_per_step"),
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
    figures["moved"] = any(v is not None and v >= RISE_SE for v in z.values())
    shrank = first is not None and last is not None and last < 0.5 * first
    figures["collapsed"] = shrank or any(v is not None and v <= -RISE_SE for v in z.values())
    return figures


def gate_record(results: list[dict]) -> dict:
    """``{"rule", "pilots": [...], "learning_rate": the chosen one or None, "passed": bool}``."""
    pilots = sorted(
        (pilot_figures(r) for r in results), key=lambda p: (p["prompts_per_step"] or 0, p["learning_rate"] or 0.0)
    )
    passing = [p for p in pilots if p["moved"] and not p["collapsed"]]
    chosen = max(passing, key=lambda p: p["prefix_change"].get("z") or -math.inf, default=None)
    return {
        "rule": (
            f"moved: pass rate or valid prefix on the gate's own hard draw rose by >= {RISE_SE:g} standard errors of "
            f"the per-problem change; collapsed: either fell by as much, or responses shrank below half their first "
            f"five steps' length; the grid's learning rate and batch: the passing pilot's with the largest prefix "
            f"rise (in SE)"
        ),
        "pilots": pilots,
        "passed": chosen is not None,
        "learning_rate": chosen["learning_rate"] if chosen else None,
        "prompts_per_step": chosen["prompts_per_step"] if chosen else None,
        "steps": chosen["steps"] if chosen else None,
    }
