"""The per-benchmark report of the paper's tables: score every sample, count correct samples per prompt, estimate.

**Kinds** (first rule that holds; data sources compared in lower case):

================  =======================================================================================
multiple_choice   ability ``multiple_choice``, or a data source containing one of
                  ``reward.arena.multiple_choice_data_sources``' defaults (gpqa):
                  :mod:`arena_verl.verify.multiple_choice`
code              ability ``code``, or a data source containing one of ``CODE_SOURCES``: verl's sandbox_fusion
                  scorer (``--sandbox-url``); a sample is correct when it passes every test case
math              ability ``math``, or a data source containing one of ``reward.arena.math_data_sources``' defaults
                  (math, gsm8k, aime, amc, olympiad, numina, deepscaler): the project's verifier (math-verify with
                  timeouts, :mod:`arena_verl.verify.math_verifier`); correct when it scores > 0
unknown           not scored
================  =======================================================================================

Samples are re-scored from their text by default. ``use_dumped_scores`` trusts the dump instead: its ``acc`` where
present (the arena manager writes the verifier's verdict there), else ``score > 0``; ``score`` is the reward
manager's reward, which for arena runs may include judge rewards, hence not the default. A code benchmark without a
sandbox URL (and without ``use_dumped_scores``) is listed as not scored and never gets a number.

**Metrics** per benchmark, from n samples per prompt of which c are correct: the average pass ratio ``mean(c / n)``
(the paper's avg@16 for math and GPQA-Diamond, with n = 16) and the unbiased pass@k (the paper's pass@5 for
LiveCodeBench), see :mod:`arena_verl.evaluation.pass_at_k`. Every prompt of a benchmark must have the same n: a
prompt with fewer samples means a validation that lost samples, an error unless ``allow_unequal_n``, which estimates
each prompt from its own n (both estimators are unbiased per prompt) and notes it. A requested k above a
benchmark's smallest n is an error; a default k (pass@5 for code) that does not fit is skipped with a note.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from arena_verl.core.sources import CODE_SOURCES, KINDS, classify_source
from arena_verl.data.dumps import EvaluationInputError, Sample
from arena_verl.evaluation.pass_at_k import average_pass_ratio, pass_at_k
from arena_verl.verify import multiple_choice

__all__ = [
    "CODE_SOURCES",
    "KINDS",
    "BenchmarkResult",
    "Scorer",
    "ScoringOptions",
    "StepReport",
    "benchmark_kind",
    "evaluate",
    "render_table",
    "report_json",
]

DEFAULT_KS = {"code": (5,)}  # the paper: pass@5 for LiveCodeBench; avg@n (always reported) for math and GPQA


@dataclass(frozen=True)
class ScoringOptions:
    sandbox_url: str | None = None  # sandbox_fusion's run_code endpoint, for code benchmarks
    use_dumped_scores: bool = False
    answer_extraction: str = "boxed"  # the math verifier's (reward.arena.answer_extraction)
    workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    verifier_timeout_s: float = 10.0
    sandbox_timeout_s: int = 10  # per test case
    sandbox_memory_mb: int = 1024


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
    statuses: dict[str, int] = field(default_factory=dict)  # per-sample scoring outcomes
    notes: list[str] = field(default_factory=list)


@dataclass
class StepReport:
    step: int | None
    file: str
    results: list[BenchmarkResult]


def benchmark_kind(data_source: str, ability: str | None) -> str:
    """One of ``KINDS`` (:func:`arena_verl.core.sources.classify_source` with the settings' default source lists)."""
    return classify_source(data_source, ability).kind


# ------------------------------------------------------------------------------------------------------ scoring


class Scorer:
    """Scores samples by kind; holds the math verifier's worker processes until ``close`` (or the ``with`` block)."""

    def __init__(self, options: ScoringOptions):
        self.options = options
        self._verifier = None

    def __enter__(self) -> Scorer:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def close(self) -> None:
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None

    def method(self, kind: str, samples: list[Sample]) -> tuple[str | None, str | None]:
        """``(scored_by, None)``, or ``(None, why not)``."""
        if self.options.use_dumped_scores:
            if any(s.dumped_acc is None and s.dumped_score is None for s in samples):
                return None, "not scored: --use-dumped-scores but samples carry no score"
            return "dumped score", None
        if kind == "code" and not self.options.sandbox_url:
            return None, "not scored: needs --sandbox-url"
        if kind == "unknown":
            return None, "not scored: unknown kind (set ability math|multiple_choice|code, or --use-dumped-scores)"
        return {"math": "math-verify", "multiple_choice": "multiple-choice", "code": "sandbox"}[kind], None

    def score(self, method: str, samples: list[Sample]) -> list[tuple[bool, str]]:
        """``(correct, status)`` per sample."""
        if method == "dumped score":
            return [(_dumped_correct(s), "dumped") for s in samples]
        if method == "multiple-choice":
            return [_score_choice(s) for s in samples]
        if method == "math-verify":
            return self._in_threads(self._score_math, samples)
        if method == "sandbox":
            return self._in_threads(self._score_code, samples)
        raise ValueError(f"unknown scoring method {method!r}")

    def _in_threads(self, function: Callable[[Sample], tuple[bool, str]], samples: list[Sample]):
        with ThreadPoolExecutor(max_workers=max(1, self.options.workers)) as pool:
            return list(pool.map(function, samples))

    def _score_math(self, sample: Sample) -> tuple[bool, str]:
        result = self._math_verifier().score(sample.response, sample.ground_truth)
        return result.score > 0, result.status

    def _math_verifier(self):
        if self._verifier is None:
            from arena_verl.verify.math_verifier import MathVerifier

            self._verifier = MathVerifier(
                timeout_s=self.options.verifier_timeout_s,
                num_workers=max(1, self.options.workers),
                extraction=self.options.answer_extraction,
            )
        return self._verifier

    def _score_code(self, sample: Sample) -> tuple[bool, str]:
        from verl.utils.reward_score import sandbox_fusion

        try:
            fraction, _ = sandbox_fusion.compute_score(
                self.options.sandbox_url,
                None,
                self.options.sandbox_memory_mb,
                sample.response,
                sample.ground_truth,
                continuous=False,
                timeout=self.options.sandbox_timeout_s,
            )
        except Exception:  # noqa: BLE001  (one sample the sandbox could not run is wrong, and counted)
            return False, "error"
        correct = float(fraction) >= 1.0  # every test case passed (the reward manager's "acc" rule)
        return correct, "correct" if correct else "wrong"


def _score_choice(sample: Sample) -> tuple[bool, str]:
    try:
        correct = multiple_choice.score(sample.response, sample.ground_truth) > 0
    except ValueError as exc:
        raise EvaluationInputError(f"{sample.benchmark} prompt {sample.prompt_id}: {exc}") from None
    if correct:
        return True, "correct"
    return False, "wrong" if multiple_choice.extract_choice(sample.response) else "no_answer"


def _dumped_correct(sample: Sample) -> bool:
    value = sample.dumped_acc if sample.dumped_acc is not None else sample.dumped_score
    return value is not None and value > 0


# ------------------------------------------------------------------------------------------------------ metrics


def evaluate(
    samples: Iterable[Sample], scorer: Scorer, ks: list[int] | None = None, allow_unequal_n: bool = False
) -> list[BenchmarkResult]:
    """One result per benchmark (data source), in name order; ``ks`` None means the paper's defaults."""
    by_benchmark: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_benchmark[sample.benchmark].append(sample)
    return [_evaluate_benchmark(name, by_benchmark[name], scorer, ks, allow_unequal_n) for name in sorted(by_benchmark)]


def _evaluate_benchmark(
    name: str, samples: list[Sample], scorer: Scorer, ks: list[int] | None, allow_unequal_n: bool
) -> BenchmarkResult:
    kinds = {benchmark_kind(s.benchmark, s.ability) for s in samples}
    if len(kinds) > 1:
        raise EvaluationInputError(f"benchmark {name}: rows of several kinds ({sorted(kinds)}); check 'ability'")
    kind = kinds.pop()
    per_prompt: dict[str, list[int]] = defaultdict(list)  # prompt -> sample positions
    for position, sample in enumerate(samples):
        per_prompt[sample.prompt_id].append(position)
    counts = np.array([len(positions) for positions in per_prompt.values()])
    result = BenchmarkResult(name, kind, len(per_prompt), len(samples), int(counts.min()))
    if counts.min() != counts.max():
        example = next(prompt for prompt, positions in per_prompt.items() if len(positions) == counts.min())
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

    method, why_not = scorer.method(kind, samples)
    if method is None:
        result.not_scored = why_not
        return result
    verdicts = scorer.score(method, samples)
    result.scored_by = method
    result.statuses = dict(sorted(Counter(status for _, status in verdicts).items()))
    correct = np.array([sum(verdicts[p][0] for p in positions) for positions in per_prompt.values()])
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
            troubles = {s: c for s, c in r.statuses.items() if s in ("timeout", "error")}
            if troubles:
                note += " (" + ", ".join(f"{c} {s}" for s, c in troubles.items()) + ")"
            if r.notes:
                note += "; " + "; ".join(r.notes)
            cells = [
                "-" if report.step is None else str(report.step),
                r.benchmark,
                r.kind,
                str(r.prompts),
                str(r.samples_per_prompt),
                _percent(r.avg_pass_ratio),
                *[_percent(r.pass_at_k.get(k)) for k in ks],
                note,
            ]
            rows.append(cells)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, ["-" * w for w in widths] + ["-" * len(header[-1])], *rows]:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths)) + "  " + row[-1])
    return "\n".join(line.rstrip() for line in lines)


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


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"
