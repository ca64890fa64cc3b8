"""``summary.json`` of a trainer run, from verl's file logger (``trainer.logger=[...,file]``, one JSON record per
``Tracking.log`` call: ``{"step": int, "data": {metric: value}}``).

    {"rc": int, "steps_completed": int, "wall_s": float,
     "steps": [{every metric logged at that training step, under verl's names, arena/* included}, ...],
     "val": {the last validation's metrics}, "val_history": [{"step": int, metrics...}, ...],
     "records_skipped": int, "records_skipped_by_reason": {reason: lines}, "metrics_error": str | null,
     "metrics_nulled": int, "metrics_nulled_examples": ["step 3 'timing_s/step': NaN", ...]}

The summary is strict JSON: a metric value of a usable record that is not a finite number (NaN, an infinity, a
string, a boolean, a list or an object) is written as null and counted in ``metrics_nulled`` (the first few, with
step and key, in ``metrics_nulled_examples``; :func:`nulled_note` says them in one line). A null stays null, uncounted.

Input contract of the reader (:func:`scan_records`): a line that is not a usable record is skipped and counted by
reason, never a traceback: ``not UTF-8``, ``not JSON`` (a torn last line of a killed run included, and JSON nested
too deeply or with an integer too long to read), ``not a record`` (not an object with a ``data`` object) and
``bad step`` (a ``step`` or ``training/global_step`` that is not a whole number 0 <= step < 2**53: null, infinite,
negative, 2.5, a string, true). Blank lines are no records. A missing file holds no record; a file that exists but
cannot be read (a folder, a dangling symlink, no permission) is an :class:`~arena_verl.core.errors.InputError` naming
it, and in :func:`summarise` (which always returns a summary) the ``metrics_error`` key.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

from arena_verl.core.errors import InputError

__all__ = [
    "SKIP_REASONS",
    "MetricsScan",
    "logged_step",
    "metric_value",
    "metrics_files",
    "nulled_note",
    "one_line",
    "read_records",
    "scan_records",
    "summarise",
    "training_steps",
]

_VAL_PREFIXES = ("val-", "val/", "validation/")
STEP_KEY = "training/global_step"
SKIP_REASONS = ("not UTF-8", "not JSON", "not a record", "bad step")
MAX_STEP = 2**53  # a step is exact as a float below this
NULLED_EXAMPLES = 5  # metric values written as null that the summary names


@dataclasses.dataclass
class MetricsScan:
    """The usable records of a metrics file and the lines skipped, by reason (see the module's contract)."""

    records: list[dict[str, Any]]
    skipped: collections.Counter

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def metrics_files(path: Path) -> list[Path]:
    """A run's metrics files, oldest first: ``RUN_DIR/metrics/*.jsonl`` (one per attempt; the recipes name them by
    start time, since verl's file logger truncates its file) and ``RUN_DIR/metrics.jsonl`` (recipes/cpu_smoke.sh);
    ``RUN_DIR/metrics`` itself (the folder of attempts); or the file itself."""
    path = Path(path)
    if not path.is_dir():
        return [path] if path.exists() or path.is_symlink() else []  # a dangling link: unreadable, said so
    attempts = sorted((path / "metrics").glob("*.jsonl")) if (path / "metrics").is_dir() else []
    single = [path / "metrics.jsonl"] if (path / "metrics.jsonl").exists() else []
    if not attempts and not single and path.name == "metrics":
        attempts = sorted(path.glob("*.jsonl"))
    return single + attempts


def logged_step(value: Any) -> int | None:
    """A logged step as an int: a whole number 0 <= step < 2**53 (``3`` or ``3.0``); anything else (null, NaN,
    infinite, negative, ``2.5``, a string, a bool, a number no float holds exactly) is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < MAX_STEP else None


def metric_value(value: Any) -> float | None:
    """A logged metric as a float to compute with; None when it is missing, a boolean, or no finite number (an
    integer too large for a float included)."""
    if isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _reason(raw: bytes) -> tuple[str | None, dict[str, Any] | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8", None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError, an int past Python's digit limit, deep nesting
        return "not JSON", None
    if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
        return "not a record", None
    if "step" in record and logged_step(record["step"]) is None:
        return "bad step", None
    if STEP_KEY in record["data"] and logged_step(record["data"][STEP_KEY]) is None:
        return "bad step", None
    return None, record


def scan_records(path: Path) -> MetricsScan:
    """The usable records of ``path`` and the skipped lines by reason; a missing file has none. A file that exists
    but cannot be read is an :class:`InputError` naming it."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    skipped: collections.Counter = collections.Counter()
    if not path.exists() and not path.is_symlink():
        return MetricsScan(records, skipped)
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.strip():
                    continue
                reason, record = _reason(raw)
                if reason is None:
                    records.append(record)
                else:
                    skipped[reason] += 1
    except OSError as exc:
        raise InputError(f"metrics file {path}: cannot be read ({exc.strerror or exc})") from None
    return MetricsScan(records, skipped)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The logged records; lines that are no usable record (a half-written last line of a killed run) are skipped."""
    return scan_records(path).records


def training_steps(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """``{training step: its metrics, validation left out}``; a step logged twice: the later record wins."""
    steps: dict[int, dict[str, Any]] = {}
    for record in records:
        data = record["data"]
        if STEP_KEY in data:
            # Validation that ran at this step is logged with it; it is reported under "val" instead.
            steps[logged_step(data[STEP_KEY])] = {k: v for k, v in data.items() if not k.startswith(_VAL_PREFIXES)}
    return steps


def summarise(metrics_path: Path, rc: int, wall_s: float) -> dict[str, Any]:
    """The summary of a run; never raises on a bad metrics file (skipped lines are counted, an unreadable file is
    ``metrics_error``), and always strict JSON (metric values that are no finite number are null, counted)."""
    error = None
    try:
        scan = scan_records(metrics_path)
    except InputError as exc:
        scan, error = MetricsScan([], collections.Counter()), str(exc)
    nulled: list[str] = []
    steps = training_steps(scan.records)
    ordered = [_strict(steps[s], f"step {s}", nulled) for s in sorted(steps)]
    val_history = []
    for record in scan.records:
        validation = {k: v for k, v in record["data"].items() if k.startswith(_VAL_PREFIXES)}
        if validation:
            step = logged_step(record.get("step"))
            step = -1 if step is None else step
            val_history.append({"step": step, **_strict(validation, f"validation at step {step}", nulled)})
    return {
        "rc": int(rc),
        "steps_completed": len(ordered),
        "wall_s": round(float(wall_s), 2),
        "steps": ordered,
        "val": {k: v for k, v in val_history[-1].items() if k != "step"} if val_history else {},
        "val_history": val_history,
        "records_skipped": scan.skipped_total,
        "records_skipped_by_reason": {reason: scan.skipped[reason] for reason in SKIP_REASONS if scan.skipped[reason]},
        "metrics_error": error,
        "metrics_nulled": len(nulled),
        "metrics_nulled_examples": nulled[:NULLED_EXAMPLES],
    }


def _strict(metrics: dict[str, Any], where: str, nulled: list[str]) -> dict[str, Any]:
    """``metrics`` with every value that is no finite number as None (strict JSON), each one said in ``nulled``."""
    kept = {}
    for key, value in metrics.items():
        if value is not None and not _finite_number(value):
            nulled.append(f"{where} {key!r}: {_shown(value)}")
            value = None
        kept[key] = value
    return kept


def _finite_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _shown(value: Any) -> str:
    """The value as the metrics file wrote it (``NaN``, ``"abc"``), cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def nulled_note(summary: dict[str, Any]) -> str | None:
    """One line on the metric values written as null (None when there were none)."""
    count = summary.get("metrics_nulled") or 0
    if not count:
        return None
    examples = "; ".join(summary.get("metrics_nulled_examples") or [])
    more = f"; ... ({count - NULLED_EXAMPLES} more)" if count > NULLED_EXAMPLES else ""
    return f"{count} metric value(s) are not finite numbers, written as null in summary.json: {examples}{more}"


def one_line(summary: dict[str, Any]) -> str:
    """One line of figures: exit code, steps, time, rewards, arena routing and cost, validation; then the metrics
    records skipped, the metric values written as null and an unreadable metrics file, when there were any."""
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
    if summary.get("records_skipped"):
        reasons = summary.get("records_skipped_by_reason") or {}
        detail = ",".join(f"{reason.replace(' ', '_')}:{n}" for reason, n in reasons.items())
        parts.append(f"records_skipped={summary['records_skipped']}" + (f"({detail})" if detail else ""))
    if summary.get("metrics_nulled"):
        parts.append(f"metrics_nulled={summary['metrics_nulled']}")
    if summary.get("metrics_error"):
        parts.append("metrics=unreadable")
    return " ".join(parts)


def _num(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.3g}"
    except (TypeError, ValueError, OverflowError):
        return "-"
