"""Scoring one sample by its kind: math-verify (with timeouts) for math, the multiple-choice scorer for GPQA-style
sources, verl's sandbox_fusion for code, or the dump's own score (``use_dumped_scores``). See
:mod:`arena_verl.evaluation.report` for the kinds and the options."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from arena_verl.core.sources import classify_source
from arena_verl.data.dumps import EvaluationInputError, Sample
from arena_verl.verify import multiple_choice

__all__ = ["Scorer", "ScoringOptions", "benchmark_kind"]


@dataclass(frozen=True)
class ScoringOptions:
    sandbox_url: str | None = None  # sandbox_fusion's run_code endpoint, for code benchmarks
    use_dumped_scores: bool = False
    answer_extraction: str = "boxed"  # the math verifier's (reward.arena.answer_extraction)
    workers: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    verifier_timeout_s: float = 10.0
    sandbox_timeout_s: int = 10  # per test case
    sandbox_memory_mb: int = 1024


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
