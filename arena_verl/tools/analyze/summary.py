"""The figures of ``summary.json``: how much of a run's compute produced zero advantage, per step and data source.

A GRPO group whose rewards are all equal has zero advantage: its samples teach nothing. Counted two ways:

- **under RLVR**: the verifier's outcomes (re-verified, see :mod:`arena_verl.evaluation.groups`). A group is
  ``all_correct``, ``all_incorrect`` (together: non-diverse) or ``mixed``; ``alpha = (all_correct + all_incorrect)
  / groups``, the non-diverse share, and ``zero_advantage_samples_rlvr`` the samples of non-diverse groups;
- **under the dumped rewards** (``score``, what the run trained on, after the arena judged): the samples of groups
  whose dumped rewards are constant, ``zero_advantage_samples_dumped``: what the arena did not recover.
  ``recovered_samples`` are the samples of non-diverse groups whose dumped rewards differ: what the arena turned into
  a learning signal. It equals the difference of the two counts when every mixed group kept distinct rewards (the
  arena leaves mixed groups' verifier rewards alone).

Group and sample counts cover verified groups of two samples or more only (``unverified`` counts the groups nobody
could score, see the groups module; ``single_sample_groups`` the groups of one sample, e.g. a validation dump with
n=1, which have no group advantage to lose), so alpha is never diluted or inflated by them. Response lengths
(characters) and rewards cover every sample.
Judge calls per step come from verl's file logger (``--metrics``, ``arena/judge_calls``), read by
:mod:`arena_verl.data.metrics_log`, as ``runlog`` reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.data.dump_files import EvaluationInputError
from arena_verl.data.metrics_log import metric_value, metrics_files, scan_records, training_steps
from arena_verl.evaluation.groups import Group
from arena_verl.evaluation.verified import DUPLICATE_UID

__all__ = ["NON_DIVERSE", "count_groups", "judge_calls_per_step", "summarise"]

NON_DIVERSE = ("all_correct", "all_incorrect")
_JUDGE_CALLS = "arena/judge_calls"  # the tracker's metric
_REWARD_BINS = 10


def count_groups(groups: Iterable[Group]) -> dict[str, Any]:
    """The counts and shares of a set of groups (a step, a data source, the run)."""
    groups = list(groups)
    scored = [g for g in groups if g.correct is not None]
    # A group of one sample is no GRPO group (verl gives it advantage = reward): neither diverse nor non-diverse.
    verified = [g for g in scored if g.samples >= 2]
    outcomes = [g.outcome for g in verified]
    non_diverse = [g for g in verified if g.outcome in NON_DIVERSE]
    samples = sum(g.samples for g in verified)
    zero_rlvr = sum(g.samples for g in non_diverse)
    zero_dumped = sum(g.samples for g in verified if g.dumped_constant)
    recovered = [g for g in non_diverse if not g.dumped_constant]
    return {
        "groups": len(verified),
        "all_correct": outcomes.count("all_correct"),
        "all_incorrect": outcomes.count("all_incorrect"),
        "alpha": _share(len(non_diverse), len(verified)),
        "mixed": outcomes.count("mixed"),
        "unverified": len(groups) - len(scored),
        "single_sample_groups": len(scored) - len(verified),
        "samples": samples,
        "unverified_samples": sum(g.samples for g in groups) - sum(g.samples for g in scored),
        "zero_advantage_samples_rlvr": zero_rlvr,
        "zero_advantage_share_rlvr": _share(zero_rlvr, samples),
        "zero_advantage_samples_dumped": zero_dumped,
        "zero_advantage_share_dumped": _share(zero_dumped, samples),
        "recovered_groups": len(recovered),
        "recovered_samples": sum(g.samples for g in recovered),
        "response_chars_mean": _mean([length for g in groups for length in g.lengths]),
        "reward_mean": _mean([score for g in groups for score in g.scores]),
    }


def summarise(
    groups: list[Group],
    grouped_by: str,
    judge_calls: dict[int, float | None] | None = None,
    notes: Iterable[str] = (),
    ground_truth_disagreements: int = 0,
    duplicate_uids: dict[int, int] | None = None,
) -> dict[str, Any]:
    """``summary.json``: ``{"steps": [{"step", counts..., "judge_calls", "data_sources"}, ...], "totals": {counts
    of the run..., "judge_calls", "grouped_by", "response_chars", "reward", "data_sources", "notes",
    "ground_truth_disagreements"}}``.

    ``judge_calls`` maps a training step to its logged ``arena/judge_calls`` (None: no ``--metrics``);
    ``ground_truth_disagreements`` counts the prompts whose ``--data`` ground truth is not the dump's (verified
    against the dump's, see :mod:`arena_verl.data.dumps`); ``duplicate_uids`` maps a step to its dump lines that
    repeat a uid of the step (``duplicate_uids`` of the step and the totals; the groups whose copies differ are
    unverified, ``duplicate_uid_groups_unverified``).
    """
    duplicate_uids = duplicate_uids or {}
    by_step: dict[int, list[Group]] = defaultdict(list)
    by_source: dict[str, list[Group]] = defaultdict(list)
    for group in groups:
        by_step[group.step].append(group)
        by_source[group.data_source].append(group)
    steps = []
    for step in sorted(by_step):
        per_source = defaultdict(list)
        for group in by_step[step]:
            per_source[group.data_source].append(group)
        steps.append(
            {
                "step": step,
                **count_groups(by_step[step]),
                "judge_calls": None if judge_calls is None else judge_calls.get(step),
                "duplicate_uids": duplicate_uids.get(step, 0),
                "data_sources": {source: count_groups(per_source[source]) for source in sorted(per_source)},
            }
        )
    totals = {"steps": len(steps), **count_groups(groups)}
    logged = [step["judge_calls"] for step in steps if step["judge_calls"] is not None]
    totals["judge_calls"] = sum(logged) if logged else None
    totals["judge_calls_per_recovered_group"] = (
        _share(totals["judge_calls"], totals["recovered_groups"]) if logged else None
    )
    totals["grouped_by"] = grouped_by
    totals["response_chars"] = _length_distribution(groups)
    totals["reward"] = _reward_distribution([score for g in groups for score in g.scores])
    totals["data_sources"] = {source: count_groups(by_source[source]) for source in sorted(by_source)}
    totals["notes"] = list(notes)
    totals["ground_truth_disagreements"] = ground_truth_disagreements
    totals["duplicate_uids"] = sum(duplicate_uids.values())
    totals["duplicate_uid_groups_unverified"] = sum(g.unverified_because == DUPLICATE_UID for g in groups)
    return {"steps": steps, "totals": totals}


def judge_calls_per_step(metrics: str | Path) -> dict[int, float | None]:
    """``{training step: arena/judge_calls}`` from verl's file logger output: a metrics file, the metrics folder
    (``RUN_DIR/metrics``: verl's FileLogger writes one ``<attempt>.jsonl`` per attempt) or ``RUN_DIR`` itself. A step
    logged by several attempts: the later attempt's record wins."""
    steps: dict[int, float | None] = {}
    for file in metrics_files_of(Path(metrics)):
        for step, logged in training_steps(scan_records(file).records).items():  # an unreadable file: InputError
            steps[step] = metric_value(logged.get(_JUDGE_CALLS))
    if not steps:
        raise EvaluationInputError(
            f"--metrics {metrics}: no training step logged (verl's file logger writes training/global_step)"
        )
    return dict(sorted(steps.items()))


def metrics_files_of(path: Path) -> list[Path]:
    """The metrics files ``--metrics`` names, oldest attempt first: the file; ``RUN_DIR`` (its ``metrics.jsonl`` and
    ``metrics/*.jsonl``, as :func:`arena_verl.data.metrics_log.metrics_files`); or a folder of ``*.jsonl`` (the metrics
    folder). An entry that is not a regular file (a dangling symlink, a folder) is an error naming it."""
    if not path.is_dir():
        if not path.is_file():
            raise EvaluationInputError(f"--metrics {path}: no such file (give RUN_DIR, RUN_DIR/metrics or a .jsonl)")
        return [path]
    files = metrics_files(path) or sorted(path.glob("*.jsonl"))
    if not files:
        raise EvaluationInputError(
            f"--metrics {path}: no metrics (the recipes write RUN_DIR/metrics/<attempt>.jsonl; give RUN_DIR, "
            "RUN_DIR/metrics or a .jsonl)"
        )
    for file in files:
        if not file.is_file():
            raise EvaluationInputError(f"--metrics {file}: not a readable file (a dangling symlink or a folder?)")
    return files


def _length_distribution(groups: list[Group]) -> dict[str, float | None]:
    lengths = np.array([length for g in groups for length in g.lengths], dtype=float)
    by_outcome = {True: [], False: []}
    for group in groups:
        for correct, length in zip(group.correct or (), group.lengths):
            by_outcome[correct].append(length)
    if not lengths.size:
        return {"mean": None, "p50": None, "p90": None, "max": None, "mean_correct": None, "mean_incorrect": None}
    return {
        "mean": float(lengths.mean()),
        "p50": float(np.percentile(lengths, 50)),
        "p90": float(np.percentile(lengths, 90)),
        "max": float(lengths.max()),
        "mean_correct": _mean(by_outcome[True]),
        "mean_incorrect": _mean(by_outcome[False]),
    }


def _reward_distribution(scores: list[float]) -> dict[str, Any]:
    if not scores:
        return {"mean": None, "min": None, "max": None, "histogram": {"edges": [], "counts": []}}
    values = np.array(scores, dtype=float)
    low, high = float(values.min()), float(values.max())
    t = np.linspace(0.0, 1.0, _REWARD_BINS + 1)  # low * (1 - t) + high * t: finite even when high - low is not
    bins = _REWARD_BINS if low == high else low * (1 - t) + high * t
    counts, edges = np.histogram(values, bins=bins)
    return {
        "mean": _mean(scores),
        "min": float(values.min()),
        "max": float(values.max()),
        "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
    }


def _share(part: float | None, whole: float) -> float | None:
    return None if part is None or not whole else part / whole


def _mean(values: list[float]) -> float | None:
    """Finite for finite values (each divided first: the mean of ±1e308 does not overflow)."""
    return float(np.sum(np.asarray(values, dtype=float) / len(values))) if values else None
