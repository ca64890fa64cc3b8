"""``summary.json`` of a trainer run, from verl's file logger (``trainer.logger=[...,file]``, one JSON record per
``Tracking.log`` call: ``{"step": int, "data": {metric: value}}``).

    {"rc": int, "steps_completed": int, "wall_s": float,
     "steps": [{every metric logged at that training step, under verl's names, arena/* included}, ...],
     "val": {the last validation's metrics}, "val_history": [{"step": int, metrics...}, ...]}
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

__all__ = ["read_records", "summarise", "one_line"]

_VAL_PREFIXES = ("val-", "val/", "validation/")


def read_records(path: Path) -> list[dict[str, Any]]:
    """The logged records; a half-written last line (a killed run) is skipped."""
    records = []
    if not Path(path).exists():
        return records
    for line in Path(path).read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            records.append(record)
    return records


def summarise(metrics_path: Path, rc: int, wall_s: float) -> dict[str, Any]:
    steps: dict[int, dict[str, Any]] = {}
    val_history = []
    for record in read_records(metrics_path):
        data = record["data"]
        if "training/global_step" in data:
            step = int(data["training/global_step"])
            # Validation that ran at this step is logged with it; it is reported under "val" instead.
            steps[step] = {k: v for k, v in data.items() if not k.startswith(_VAL_PREFIXES)}
        validation = {k: v for k, v in data.items() if k.startswith(_VAL_PREFIXES)}
        if validation:
            val_history.append({"step": int(record.get("step", -1)), **validation})
    ordered = [steps[s] for s in sorted(steps)]
    return {
        "rc": int(rc),
        "steps_completed": len(ordered),
        "wall_s": round(float(wall_s), 2),
        "steps": ordered,
        "val": {k: v for k, v in val_history[-1].items() if k != "step"} if val_history else {},
        "val_history": val_history,
    }


def one_line(summary: dict[str, Any]) -> str:
    """One line of figures: exit code, steps, time, rewards, arena routing and cost, validation."""
    steps = summary["steps"]
    parts = [f"rc={summary['rc']}", f"steps={summary['steps_completed']}", f"wall={summary['wall_s']:.0f}s"]
    if steps:
        parts.append("step_s=" + ",".join(_fmt(s.get("timing_s/step")) for s in steps))
        parts.append("reward_mean=" + ",".join(_fmt(s.get("critic/rewards/mean")) for s in steps))
        routed = sum(_num(s.get("arena/groups_routed")) for s in steps)
        groups = sum(_num(s.get("arena/groups")) for s in steps)
        calls = sum(_num(s.get("arena/judge_calls")) for s in steps)
        parts.append(f"arena_routed={routed:.0f}/{groups:.0f} judge_calls={calls:.0f}")
        parts.append("tail_s=" + ",".join(_fmt(s.get("arena/tail_after_last_sample_s")) for s in steps))
    val = summary.get("val") or {}
    # verl's headline validation score: val-core/<data source>/reward/mean@<n> (n = val_kwargs.n)
    scores = {k: v for k, v in val.items() if re.fullmatch(r"val-core/[^/]+/reward/mean@\d+", k)}
    if scores:
        parts.append("val=" + ",".join(f"{k.split('/')[1]}:{_fmt(v)}" for k, v in sorted(scores.items())))
    return " ".join(parts)


def _num(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.3g}"
    except (TypeError, ValueError):
        return "-"
