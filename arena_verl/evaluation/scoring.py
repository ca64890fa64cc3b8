"""Scoring one sample by its kind: math-verify (with timeouts) for math, the multiple-choice scorer for GPQA-style
sources, verl's sandbox_fusion for code, or the dump's own score (``use_dumped_scores``). See
:mod:`arena_verl.evaluation.report` for the kinds and the options.

A sample's verdict is ``(correct, status)``; ``correct`` is None when the sample could not be verified, for a
reason that is not the model's (never counted as wrong):

- ``unreadable_truth``: a ground truth the kind's verifier cannot read (math: empty, a dict, a list holding one of
  those, NaN or infinite, a boolean, longer than the verifier reads (1000 characters); multiple choice: not one
  allowed letter; code: not verl's test-case JSON with ``inputs``/``outputs`` of equal, non-zero length or
  ``assert_case``), checked before any verifier runs;
- ``sandbox_unavailable``: the sandbox could not be asked (connection refused, the request timed out, an HTTP
  error, a reply that is not JSON: verl's ``api_error``, ``internal_error``); after ``SANDBOX_GIVE_UP`` such
  samples in a row, the rest are not sent and are ``sandbox_unavailable`` too;
- ``sandbox_error``: the sandbox answered but did not run the program (verl's ``sandbox_error`` and its unknown
  states: ``unknown_failure``, ``unexpected_success_state``, ``unknown_api_status_*``, ...).

A program that does not compile, crashes, runs past its time limit or prints another answer is ``wrong``; a reply
without a code block is ``no_answer``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from arena_verl.core.sources import classify_source
from arena_verl.data.dumps import Sample
from arena_verl.verify import multiple_choice
from arena_verl.verify.ground_truth import ground_truth_text

__all__ = ["SANDBOX_GIVE_UP", "UNVERIFIED_REASONS", "Scorer", "ScoringOptions", "benchmark_kind", "readable_truth"]

# Statuses of a sample that could not be verified (``correct`` None), and the reason a group with one is unverified.
UNVERIFIED_REASONS = {
    "unreadable_truth": "not scored: a ground truth the verifier cannot read (empty, not an answer, or not finite)",
    "sandbox_unavailable": "not scored: the sandbox could not be reached (connection refused, timeout, HTTP error "
    "or a malformed reply); rerun with a working --sandbox-url",
    "sandbox_error": "not scored: the sandbox did not run the code (its error status); rerun when it works",
}
# After this many code samples in a row the sandbox could not be asked about, the rest are not sent (each try can
# wait compile + run + 10 s): they are ``sandbox_unavailable`` too. A sample it answered resets the count.
SANDBOX_GIVE_UP = 16
# verl's per-test-case statuses (sandbox_fusion.utils) of a program that ran and failed: the model's failures.
_PROGRAM_FAILURES = {
    "success",
    "wrong_answer",
    "runtime_error",
    "timeout",
    "compile_error",
    "compile_timeout",
    "compile_error_skipped",
}
_REQUEST_FAILURES = {"api_error", "internal_error"}


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
        self._lock = threading.Lock()
        self._sandbox_failures = 0  # code samples in a row the sandbox could not be asked about

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

    def score(self, method: str, samples: list[Sample]) -> list[tuple[bool | None, str]]:
        """``(correct, status)`` per sample; ``correct`` None: not verified (a status of ``UNVERIFIED_REASONS``)."""
        if method == "dumped score":
            return [(_dumped_correct(s), "dumped") for s in samples]
        if method == "multiple-choice":
            return [_score_choice(s) for s in samples]
        if method == "math-verify":
            return self._in_threads(self._score_math, samples)
        if method == "sandbox":
            return self._in_threads(self._score_code, samples)
        raise ValueError(f"unknown scoring method {method!r}")

    def _in_threads(self, function: Callable[[Sample], tuple[bool | None, str]], samples: list[Sample]):
        with ThreadPoolExecutor(max_workers=max(1, self.options.workers)) as pool:
            return list(pool.map(function, samples))

    def _score_math(self, sample: Sample) -> tuple[bool | None, str]:
        verifier = self._math_verifier()
        truth = ground_truth_text(sample.ground_truth)
        if truth is None or len(truth) > verifier.max_answer_chars:  # the verifier would say "error": not the model's
            return None, "unreadable_truth"
        result = verifier.score(sample.response, sample.ground_truth)
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

    def _score_code(self, sample: Sample) -> tuple[bool | None, str]:
        from verl.utils.reward_score import sandbox_fusion

        if not readable_truth("code", sample.ground_truth):
            return None, "unreadable_truth"
        with self._lock:
            if self._sandbox_failures >= SANDBOX_GIVE_UP:  # a dead sandbox: not asked again (each try can take 30 s)
                return None, "sandbox_unavailable"
        try:
            fraction, cases = sandbox_fusion.compute_score(
                self.options.sandbox_url,
                None,
                self.options.sandbox_memory_mb,
                sample.response,
                sample.ground_truth,
                continuous=False,
                timeout=self.options.sandbox_timeout_s,
            )
        except Exception:  # noqa: BLE001  (verl's client failed on this sample: not run, so not verified; counted)
            fraction, cases = 0.0, [{"status": "internal_error"}]
        verdict = _code_verdict(float(fraction), cases)
        with self._lock:
            self._sandbox_failures = self._sandbox_failures + 1 if verdict[1] == "sandbox_unavailable" else 0
        return verdict


def readable_truth(kind: str, ground_truth: Any) -> bool:
    """Whether the verifier of ``kind`` can read ``ground_truth`` (else a sample is ``unreadable_truth``)."""
    if kind == "math":
        return ground_truth_text(ground_truth) is not None
    if kind == "multiple_choice":
        try:
            multiple_choice.score("", ground_truth)
        except (ValueError, TypeError, AttributeError):
            return False
        return True
    if kind == "code":
        return _test_cases(ground_truth) is not None
    return True


def _test_cases(ground_truth: Any) -> dict | None:
    """verl's test cases (a dict or its JSON text) as sandbox_fusion.compute_score reads them, or None."""
    cases = ground_truth
    if isinstance(cases, (str, bytes, bytearray)):
        try:
            cases = json.loads(cases)
        except (ValueError, RecursionError):
            return None
    if not isinstance(cases, dict):
        return None
    if isinstance(cases.get("assert_case"), list):
        inputs = cases.get("inputs", cases["assert_case"])
        outputs = cases.get("outputs", cases["assert_case"])
    else:
        inputs, outputs = cases.get("inputs"), cases.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or not inputs or len(inputs) != len(outputs):
        return None
    if isinstance(cases.get("assert_case"), list) and len(cases["assert_case"]) != len(inputs):
        return None
    return cases


def _code_verdict(fraction: float, cases: Any) -> tuple[bool | None, str]:
    """One program's verdict from verl's score and per-test-case metadata: a case the sandbox did not run (verl
    counts it as failed) leaves the sample unverified."""
    if fraction >= 1.0:  # every test case passed (the reward manager's "acc" rule)
        return True, "correct"
    entries = [case for case in cases if isinstance(case, dict)] if isinstance(cases, list) else []
    statuses = [case.get("status") for case in entries]
    if any(status in _REQUEST_FAILURES for status in statuses):
        return None, "sandbox_unavailable"
    if any(status is not None and status not in _PROGRAM_FAILURES for status in statuses):
        return None, "sandbox_error"  # SandboxError, unknown_failure, unknown_api_status_..., unknown_api_state
    errors = [str(case.get("error")) for case in entries if case.get("status") is None and case.get("error")]
    if any("missing code block" in error for error in errors):
        return False, "no_answer"
    if any("test_cases" in error or "input/output" in error.lower() for error in errors):
        return None, "unreadable_truth"  # verl refused the test cases after all
    if errors or not entries:  # verl's client failed ("Unhandled exception"), or no test case ran
        return None, "sandbox_error"
    return False, "wrong"


def _score_choice(sample: Sample) -> tuple[bool | None, str]:
    if not readable_truth("multiple_choice", sample.ground_truth):
        return None, "unreadable_truth"
    correct = multiple_choice.score(sample.response, sample.ground_truth) > 0
    if correct:
        return True, "correct"
    return False, "wrong" if multiple_choice.extract_choice(sample.response) else "no_answer"


def _dumped_correct(sample: Sample) -> bool:
    value = sample.dumped_acc if sample.dumped_acc is not None else sample.dumped_score
    return value is not None and value > 0
