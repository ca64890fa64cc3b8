"""One run's curves, from the metrics verl's file logger wrote (every attempt of the run, a step logged twice counted).

Per training step: the step's time, its generations (DAPO's discarded ones included) and their running sum, the
non-diverse shares (all correct, all wrong), the share of samples with a non-zero advantage and the mean |advantage|
of the rewards the run trained on, the mean response length, judge calls, and the time the reward stage added after
the step's last sample; the update's entropy, gradient norm, KL and policy loss, the advantages by route, the
judge's certainty and the valid-step prefix of the step's batch. Per validation: the pass rate (mean ``acc``) on each
validation data source.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from arena_verl.data.metrics_log import logged_step, scan_records
from arena_verl.evaluation.tables import finite_or_none
from arena_verl.tools.experiment.measures import rollout_prefix

__all__ = ["STEP_FIGURES", "run_curves", "val_sources"]

# (figure, the metric it reads): the first metric of a tuple that the step logged.
STEP_FIGURES = {
    "step_s": ("timing_s/step",),
    "gen_s": ("timing_s/gen",),
    "generations": ("arena/generations",),
    "generations_discarded": ("arena/generations_discarded",),
    "all_correct_share": ("arena/all_correct_share",),
    "all_wrong_share": ("arena/all_incorrect_share",),
    "non_diverse_share": ("arena/alpha",),
    # What the run trained on: the arena's rewards where it gave them, the verifier's otherwise (rlvr logs only the
    # verifier's figure). DAPO's batch is the kept groups: verl's critic/advantages cover it, not these.
    "nonzero_advantage_share": ("arena/nonzero_advantage_share", "arena/nonzero_advantage_share_rlvr"),
    "mean_abs_advantage": ("arena/mean_abs_advantage", "arena/mean_abs_advantage_rlvr"),
    "nonzero_advantage_share_rlvr": ("arena/nonzero_advantage_share_rlvr",),
    "response_length": ("response_length/mean",),
    "judge_calls": ("arena/judge_calls",),
    "judge_computed_tokens": ("arena/judge_computed_tokens",),  # prompt minus cached, as the engine reported them
    "groups_routed": ("arena/groups_routed",),
    "fallbacks": ("arena/fallback_deadline", "arena/fallback_judge_error"),
    "reward_tail_s": ("arena/tail_after_last_sample_s",),
    "first_position_win_share": ("arena/first_position_win_share",),
    "score_mean": ("critic/score/mean",),
    # What the update did: the policy's entropy, the gradient norm, the approximate KL between the rollout policy and
    # the updated one, the policy loss, and the advantages the trainer used (by route: the arena_grpo estimator's).
    "entropy": ("actor/entropy",),
    "grad_norm": ("actor/grad_norm",),
    "kl": ("actor/ppo_kl",),
    "pg_loss": ("actor/pg_loss",),
    "mean_abs_advantage_routed": ("arena/mean_abs_advantage_routed",),
    "mean_abs_advantage_mixed": ("arena/mean_abs_advantage_mixed",),
    "certainty": ("arena/certainty",),
    "advantages_max": ("critic/advantages/max",),
    "advantages_min": ("critic/advantages/min",),
}
_VAL_ACC = re.compile(r"^val-core/(?P<source>[^/]+)/acc/mean@(?P<n>\d+)$")


def run_curves(folder: Path) -> dict[str, Any]:
    """``{"steps_logged": [1, 2, ...], "steps": [{"step", figures...}], "val": [{"step", "<source>": pass rate}],
    "final": the last step's figures and the last validation's, "duplicate_steps": steps logged more than once}``.
    A metric that is not a finite number is None."""
    records = []
    for metrics in sorted((Path(folder) / "metrics").glob("*.jsonl")):
        records.extend(scan_records(metrics).records)
    by_step: dict[int, dict] = {}
    seen: dict[int, int] = {}
    val: dict[int, dict] = {}
    for record in records:
        data = record["data"]
        step = logged_step(data.get("training/global_step", record.get("step")))
        if step is None:
            continue
        accs = {m.group("source"): finite_or_none(v) for k, v in data.items() if (m := _VAL_ACC.match(k))}
        if accs:
            val.setdefault(step, {}).update(accs)
        if "training/global_step" in data and any(k.startswith(("timing_s/", "arena/")) for k in data):
            seen[step] = seen.get(step, 0) + 1
            by_step[step] = data
    steps = []
    generations_so_far = 0.0
    for step in sorted(by_step):
        row = {"step": step}
        for name, keys in STEP_FIGURES.items():
            row[name] = next((_finite(by_step[step][k]) for k in keys if k in by_step[step]), None)
        # The step judge's measure on the step's own batch, from verl's rollout dump (None: not dumped).
        dump = Path(folder) / "rollout" / f"{step}.jsonl"
        row["prefix"] = rollout_prefix(dump) if dump.is_file() else None
        generations_so_far += row["generations"] or 0.0
        row["generations_cumulative"] = generations_so_far
        steps.append(row)
    cumulative = {row["step"]: row["generations_cumulative"] for row in steps}
    val_rows = []
    for step in sorted(val):
        # Validation before training is logged at step 0 (verl's val_before_train): no generation yet.
        val_rows.append({"step": step, "generations_cumulative": cumulative.get(step, 0.0), **val[step]})
    final = dict(steps[-1]) if steps else {}
    if val_rows:
        final.update({f"val/{k}": v for k, v in val_rows[-1].items() if k not in ("step", "generations_cumulative")})
    return {
        "steps_logged": sorted(by_step),
        "duplicate_steps": sorted(s for s, n in seen.items() if n > 1),
        "steps": steps,
        "val": val_rows,
        "final": final,
    }


def val_sources(curves: dict) -> list[str]:
    return sorted({k for row in curves["val"] for k in row if k not in ("step", "generations_cumulative")})


def _finite(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return finite_or_none(value)
    except (OverflowError, TypeError, ValueError):
        return None
