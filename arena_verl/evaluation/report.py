"""The per-benchmark report of the paper's tables: score every sample, count correct samples per prompt, estimate.

**Kinds**: :func:`arena_verl.core.sources.classify_source` with the settings' default source lists, the rule training
uses (the data source's name first: multiple choice, math, code; the row's ``ability`` for a name no list matches).
``multiple_choice`` is scored by :mod:`arena_verl.verify.multiple_choice`; ``code`` by verl's sandbox_fusion scorer
(``--sandbox-url``; correct when every test case passes); ``math`` by the project's verifier (math-verify with
timeouts, :mod:`arena_verl.verify.math_verifier`; correct when it scores > 0); ``unknown`` is not scored.

Samples are re-scored from their text by default. ``use_dumped_scores`` trusts the dump instead: its ``acc`` where
present (the arena manager writes the verifier's verdict there), else ``score > 0``; ``score`` is the reward
manager's reward, which for arena runs may include judge rewards, hence not the default. A code benchmark without a
sandbox URL (and without ``use_dumped_scores``) is listed as not scored and never gets a number.

**Unverified samples** (see :mod:`arena_verl.evaluation.scoring`): a sample whose ground truth the verifier cannot
read, or whose code the sandbox could not run (unreachable, timed out, an error status, a malformed reply), is not
verified, never wrong. A benchmark with such a sample gets no number (a figure over the other prompts would be
another benchmark's, and one over fewer samples of a prompt another n): its row says ``not scored: <why> (S
sample(s) of P of N prompt(s))`` and counts the statuses, e.g. ``(40 sandbox_unavailable)``. Every sample has one
status (they add up to the benchmark's samples): a sample of a prompt not scored at all has why as its status
(``no_ground_truth``, ``differing_truths``, ``duplicate_uid``, ``not_scored``: code without a sandbox, an unknown
kind), and the row, the JSON and the ``warning:`` line count the same unverified samples. Its JSON has
``unverified_prompts``, ``unverified_samples`` and ``unverified_reasons`` (reason -> prompts), with
``avg_pass_ratio`` null and ``pass_at_k`` empty. Rerun with a working sandbox for the figures.

**Metrics** per benchmark, from n samples per prompt of which c are correct: the average pass ratio ``mean(c / n)``
(the paper's avg@16 for math and GPQA-Diamond, with n = 16) and the unbiased pass@k (the paper's pass@5 for
LiveCodeBench), see :mod:`arena_verl.evaluation.pass_at_k`. Every prompt of a benchmark must have the same n: a
prompt with fewer samples means a validation that lost samples, an error unless ``allow_unequal_n``, which estimates
each prompt from its own n (both estimators are unbiased per prompt) and notes it. A requested k above a
benchmark's smallest n is an error; a default k (pass@5 for code) that does not fit is skipped with a note.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from arena_verl.core.sources import CODE_SOURCES, KINDS
from arena_verl.data.dump_files import EvaluationInputError
from arena_verl.data.dumps import PromptSamples, Sample
from arena_verl.evaluation.pass_at_k import average_pass_ratio, pass_at_k
from arena_verl.evaluation.scoring import UNVERIFIED_REASONS, Scorer, ScoringOptions, benchmark_kind
from arena_verl.evaluation.tables import percent, text_table
from arena_verl.evaluation.verified import NO_GROUND_TRUTH, UNVERIFIED_STATUSES, VerifiedGroup, verify_prompts

__all__ = [
    "CODE_SOURCES",
    "KINDS",
    "UNVERIFIED_REASONS",
    "BenchmarkResult",
    "Scorer",
    "ScoringOptions",
    "StepReport",
    "benchmark_kind",
    "evaluate",
    "evaluate_groups",
    "render_table",
    "report_json",
]

DEFAULT_KS = {"code": (5,)}  # the paper: pass@5 for LiveCodeBench; avg@n (always reported) for math and GPQA


@dataclass
class BenchmarkResult:
    benchmark: str
    kind: str
    prompts: int
    samples: int
    samples_per_prompt: int | None  # n (the smallest, when allow_unequal_n let prompts differ)
    avg_pass_ratio: float | None = None  # mean of c / n, in [0, 1]
    pass_at_k: dict[int, float] = field(default_factory=dict)
    scored_by: str | None = None  # math-verify | multiple-choice | sandbox | dumped score
    not_scored: str | None = None  # why there is no number
    statuses: dict[str, int] = field(default_factory=dict)  # per-sample scoring outcomes; they add up to samples
    notes: list[str] = field(default_factory=list)
    unverified_prompts: int = 0  # prompts with a sample that could not be verified (then no number)
    unverified_samples: int = 0  # those samples (all of a prompt's when it was not scored at all)
    unverified_reasons: dict[str, int] = field(default_factory=dict)  # reason -> prompts


@dataclass
class StepReport:
    step: int | None
    file: str
    results: list[BenchmarkResult]


# ------------------------------------------------------------------------------------------------------ metrics


def evaluate(
    samples: Iterable[Sample], scorer: Scorer, ks: list[int] | None = None, allow_unequal_n: bool = False
) -> list[BenchmarkResult]:
    """One result per benchmark (data source), in name order; ``ks`` None means the paper's defaults."""
    by_prompt: dict[tuple[str, str], list[Sample]] = {}
    for sample in samples:
        by_prompt.setdefault((sample.benchmark, sample.prompt_id), []).append(sample)
    prompts = [PromptSamples(prompt_id, 0, None, tuple(group)) for (_, prompt_id), group in by_prompt.items()]
    return evaluate_groups(verify_prompts(prompts, scorer), ks, allow_unequal_n)


def evaluate_groups(
    groups: Iterable[VerifiedGroup], ks: list[int] | None = None, allow_unequal_n: bool = False
) -> list[BenchmarkResult]:
    """:func:`evaluate` on prompts already verified (:func:`arena_verl.evaluation.verified.read_verified`)."""
    by_benchmark: dict[str, list[VerifiedGroup]] = defaultdict(list)
    for group in groups:
        by_benchmark[group.data_source].append(group)
    return [_benchmark_result(name, by_benchmark[name], ks, allow_unequal_n) for name in sorted(by_benchmark)]


def _benchmark_result(
    name: str, groups: Sequence[VerifiedGroup], ks: list[int] | None, allow_unequal_n: bool
) -> BenchmarkResult:
    kinds = {benchmark_kind(s.benchmark, s.ability) for group in groups for s in group.samples}
    if len(kinds) > 1:
        raise EvaluationInputError(f"benchmark {name}: rows of several kinds ({sorted(kinds)}); check 'ability'")
    kind = kinds.pop()
    counts = np.array([len(group.samples) for group in groups])
    result = BenchmarkResult(name, kind, len(groups), int(counts.sum()), int(counts.min()))
    if counts.min() != counts.max():
        example = next(group.prompt.key for group in groups if len(group.samples) == counts.min())
        message = (
            f"benchmark {name}: prompts have between {counts.min()} and {counts.max()} samples "
            f"(e.g. {example} has {counts.min()})"
        )
        if not allow_unequal_n:
            raise EvaluationInputError(message + "; --allow-unequal-n estimates each prompt from its own n")
        result.notes.append(message + "; each prompt estimated from its own n")
    wanted = list(ks) if ks is not None else list(DEFAULT_KS.get(kind, ()))
    too_big = [k for k in wanted if k > counts.min()]
    if too_big and ks is not None:
        raise EvaluationInputError(f"benchmark {name}: pass@{too_big[0]} needs k <= n, but n = {counts.min()}")
    result.notes += [f"pass@{k} skipped: n = {counts.min()} < {k}" for k in too_big]

    result.statuses = dict(sorted(Counter(status for group in groups for status in group.sample_statuses).items()))
    unverified = [group for group in groups if group.correct is None]
    if unverified:  # a number over part of the prompts (or samples) would be another benchmark's: withheld
        result.unverified_prompts = len(unverified)
        result.unverified_samples = sum(group.unverified_samples for group in unverified)
        result.unverified_reasons = dict(sorted(Counter(str(g.unverified_because) for g in unverified).items()))
        why = [g.unverified_because for g in unverified if g.unverified_because != NO_GROUND_TRUTH]
        if not why:
            result.not_scored = f"not scored: {len(unverified)} prompt(s) without a ground truth"
        elif why[0] in UNVERIFIED_REASONS.values() or not why[0].startswith("not scored"):  # per sample, or the reader
            reason = why[0] if why[0].startswith("not scored") else f"not scored: {why[0]}"
            result.not_scored = (
                f"{reason} ({result.unverified_samples} sample(s) of {len(unverified)} of {len(groups)} prompt(s))"
            )
        else:  # the scorer declined the whole kind (code without a sandbox): every sample, said once
            result.not_scored = why[0]
        return result
    result.scored_by = groups[0].scored_by
    correct = np.array([sum(group.correct) for group in groups])
    result.avg_pass_ratio = float(np.mean(average_pass_ratio(counts, correct)))
    result.pass_at_k = {k: float(np.mean(pass_at_k(counts, correct, k))) for k in wanted if k not in too_big}
    return result


# ------------------------------------------------------------------------------------------------------- output


def render_table(reports: list[StepReport]) -> str:
    """A plain-text table, values in percent: one line per (step, benchmark)."""
    ks = sorted({k for report in reports for result in report.results for k in result.pass_at_k})
    header = ["step", "benchmark", "kind", "prompts", "n", "avg@n", *[f"pass@{k}" for k in ks], "scored by / note"]
    rows = []
    for report in reports:
        for r in report.results:
            note = r.not_scored or r.scored_by or ""
            troubles = {s: c for s, c in r.statuses.items() if s in ("timeout", "error", *UNVERIFIED_STATUSES)}
            if troubles:
                note += " (" + ", ".join(f"{c} {s}" for s, c in troubles.items()) + ")"
            if r.notes:
                note += "; " + "; ".join(r.notes)
            rows.append(
                [
                    "-" if report.step is None else str(report.step),
                    r.benchmark,
                    r.kind,
                    str(r.prompts),
                    str(r.samples_per_prompt),
                    percent(r.avg_pass_ratio, sign=""),
                    *[percent(r.pass_at_k.get(k), sign="") for k in ks],
                    note,
                ]
            )
    return text_table(header, rows)


def report_json(reports: list[StepReport], options: ScoringOptions, extra: dict[str, Any] | None = None) -> str:
    """The report as JSON: fractions in [0, 1] (the table shows percent); null where there is no number."""
    payload = {
        **(extra or {}),
        "scoring": {
            "use_dumped_scores": options.use_dumped_scores,
            "sandbox_url": options.sandbox_url,
            "answer_extraction": options.answer_extraction,
        },
        "steps": [
            {
                "step": report.step,
                "file": report.file,
                "benchmarks": [
                    {**asdict(r), "pass_at_k": {str(k): v for k, v in r.pass_at_k.items()}} for r in report.results
                ],
            }
            for report in reports
        ],
    }
    return json.dumps(payload, indent=2)
