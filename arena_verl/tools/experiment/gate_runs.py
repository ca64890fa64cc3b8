"""The gate's folder: its registration (written before the first pilot), each pilot's plan and label, the record
of the finished pilots, and the grid's plan at the chosen candidate (the rule itself: :mod:`.gate`)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path

from arena_verl.core.errors import InputError
from arena_verl.tools.experiment.arms import GATE_ARM, GATE_REFERENCE_ARM, Candidate, Plan
from arena_verl.tools.experiment.gate import gate_record, registration
from arena_verl.tools.experiment.grid import code_revision

__all__ = ["gate_label", "gate_plan", "gated_plan", "register_gate", "trained", "write_gate"]


def gate_label(candidate: Candidate, arm: str) -> str:
    return f"gate_{candidate.label}_{arm}"


def trained(plan: Plan, rate: float, prompts: int, steps: int) -> Plan:
    """``plan`` at a learning rate, batch and length, validated before training and after its last step. Its bound
    grows with the samples it trains on (never shrinks): a 64-prompt step took about 140 s here against 4 s at 8, and
    a 30-step pilot at 64 prompts would have outlasted the plan's 30 minutes."""
    work = (prompts * steps) / (plan.prompts_per_step * plan.steps)
    timeout_s = max(plan.timeout_s, math.ceil(plan.timeout_s * work))
    return dataclasses.replace(
        plan, learning_rate=rate, prompts_per_step=prompts, steps=steps, test_freq=steps, timeout_s=timeout_s
    )


def gate_plan(plan: Plan, candidate: Candidate) -> Plan:
    """A pilot's plan: the grid's shapes at the candidate's settings, validated on the gate's own draw before and after
    training."""
    pilot = trained(plan, candidate.learning_rate, candidate.prompts_per_step, candidate.steps)
    return dataclasses.replace(pilot, val_splits=("pilot",), warmup_steps=candidate.warmup_steps)


def register_gate(out: Path, gate_candidates: tuple[Candidate, ...], seeds: tuple[int, ...], plan: Plan) -> dict:
    """``OUT/gate.json``'s ``registered``: the candidates, seeds and rule, written before the first pilot; a folder
    whose gate names other candidates or seeds is refused (they were fixed before its pilots ran)."""
    path = out / "gate.json"
    fixed = registration(gate_candidates, seeds, (GATE_REFERENCE_ARM, GATE_ARM))
    if path.is_file():
        previous = json.loads(path.read_text()).get("registered") or {}
        if {k: previous.get(k) for k in fixed} != json.loads(json.dumps(fixed)):
            raise InputError(f"{path}: the gate's candidates and rule were fixed before its pilots; use another --out")
        return previous
    fixed |= {"trainer": plan.trainer, "revision": code_revision(), "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    _write_json(path, gate_record(fixed, {}))
    return fixed


def write_gate(out: Path) -> dict:
    """``OUT/gate.json`` from its registration and every finished pilot."""
    path = out / "gate.json"
    registered = json.loads(path.read_text())["registered"]
    by_candidate: dict[str, list[dict]] = {}
    for candidate in registered["candidates"]:
        for result in sorted((out / "runs").glob(f"gate_{candidate['label']}_*/seed*/result.json")):
            by_candidate.setdefault(candidate["label"], []).append(json.loads(result.read_text()))
    record = gate_record(registered, by_candidate)
    _write_json(path, record)
    return record


def _write_json(path: Path, record: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)


def gated_plan(out: Path, plan: Plan) -> Plan:
    """The grid's plan at the gate's chosen candidate; the grid does not run where no candidate passed."""
    path = out / "gate.json"
    if not path.is_file():
        raise InputError(
            f"no gate in {out}: run the gate's pilots first (--gate); the grid runs on a policy that learns"
        )
    gate = write_gate(out)
    if not gate["passed"]:
        raise InputError(f"{path}: no candidate passed (or its pilots are not all done); the grid is not run")
    chosen = gate["chosen"]
    grid = trained(plan, chosen["learning_rate"], chosen["prompts_per_step"], chosen["steps"])
    return dataclasses.replace(grid, test_freq=plan.test_freq, warmup_steps=chosen["warmup_steps"])
