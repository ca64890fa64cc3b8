"""The math verifier: answers scored with math-verify, in worker processes, with a timeout that always holds.

The answer is extracted first (:mod:`arena_verl.verify.extraction`: the last ``\\boxed{}``, set answers and hedges,
answer lines, ``extraction="lenient"``), the reference made one text (:mod:`arena_verl.verify.ground_truth`).

Equivalence is math-verify's (``parse`` + ``verify``): ``1/2``, ``0.5``, ``\\frac{1}{2}``, ``\\dfrac12`` and ``2/4`` all
match a gold ``\\frac{1}{2}``. A percentage keeps its number and drops the sign (math-verify's rule): ``50\\%``
matches ``50``, not ``1/2``. Ground truths may be strings, numbers, bytes, numpy scalars or arrays and lists: a
one-element list or array is its element, a longer one is a set answer.

math-verify bounds sympy with ``signal`` alarms, which only work in a main thread, and reward managers run in
threads of Ray actors: each verification runs in a worker process (:mod:`arena_verl.verify.pool`), and the caller
waits at most ``timeout_s`` plus a grace period; a worker stuck past that is killed and replaced. A verification
never raises: every failure is a score of 0 with a status, and statuses are counted.

A worker process starts as ``python -c "...; from arena_verl.verify.math_verifier import _worker_main;
_worker_main(...)"``: this module is its entry point.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from arena_verl.core.names import EXTRACTION_MODES, VERIFY_STATUSES
from arena_verl.verify.extraction import boxed_spans, extract_answers, extract_final_answer
from arena_verl.verify.ground_truth import ground_truth_text
from arena_verl.verify.pool import WorkerPool, WorkerStartError, WorkerTimeout, WorkerUnavailable, serve

logger = logging.getLogger(__name__)

__all__ = [
    "EXTRACTION_MODES",
    "STATUSES",
    "MathVerifier",
    "VerifyResult",
    "boxed_spans",
    "extract_final_answer",
    "ground_truth_text",
]

STATUSES = VERIFY_STATUSES
_GRACE_S = 5.0  # past timeout_s, a worker that has not answered is killed
_START_TIMEOUT_S = 120.0  # a new worker (python + math-verify + sympy imports) must be ready by then
_WORKER_ENTRY = f"{__name__}:_worker_main"


@dataclass(frozen=True)
class VerifyResult:
    score: float
    status: str  # one of STATUSES
    answer: str | None = None


# ---------------------------------------------------------------------------------------- math-verify, in a worker


def _worker_main(parent_pid: int, request_fd: int, reply_fd: int) -> None:
    """Entry point of a worker process: verify requests until the parent closes the pipe or dies."""
    serve(parent_pid, request_fd, reply_fd, _verify_worker, prepare=_import_math_verify)


def _import_math_verify() -> None:
    import math_verify  # noqa: F401  (imported before the first task, so that it does not count against it)


def _verify_worker(answers: tuple[str, ...], truth: str, timeout_s: int, raw: bool = False) -> tuple:
    """Runs in a worker process's main thread, where math-verify's signal timeouts work.

    Returns ``(score, status, shown_answer)``.
    """
    started = time.monotonic()
    shown = None
    try:
        from math_verify import parse, verify

        gold = parse(_gold_latex(truth), parsing_timeout=timeout_s)
        if not gold:
            return 0.0, "error", None
        if raw:  # lenient: math-verify's own LaTeX + expression extraction on the trace's tail
            predicted = parse(answers[0], parsing_timeout=timeout_s)
            if not predicted:
                return 0.0, "no_answer", None
            shown = predicted[-1] if isinstance(predicted[-1], str) else str(predicted[0])
        else:
            if len(answers) > 1 and not _is_set_answer(gold[0]):
                return 0.0, "hedged", None
            shown = ", ".join(answers)  # several boxes for a set reference: one set answer
            predicted = parse(_as_latex(shown), parsing_timeout=timeout_s)
            if not predicted:
                return 0.0, "wrong", shown
        if verify(gold, predicted, timeout_seconds=timeout_s):
            return 1.0, "correct", shown
        # math-verify catches its own timeout and answers False: tell that apart by the time it took.
        return 0.0, "timeout" if time.monotonic() - started >= 0.9 * timeout_s else "wrong", shown
    except TimeoutError:
        return 0.0, "timeout", shown
    except Exception:  # noqa: BLE001  (a verifier never raises)
        return 0.0, "error", shown


def _is_set_answer(gold: Any) -> bool:
    from sympy import FiniteSet

    return isinstance(gold, FiniteSet) and len(gold) > 1


def _as_latex(answer: str) -> str:
    answer = answer.strip()
    return answer if answer.startswith("$") else f"${answer}$"


def _gold_latex(truth: str) -> str:
    # A reference that is a whole solution with a box (some data sets): math-verify finds the box itself.
    return truth if "\\boxed" in truth else _as_latex(truth)


# ----------------------------------------------------------------------------------------------------- the verifier


class MathVerifier:
    """Scores math answers against ground truth; thread-safe, never raises.

    Parameters
    ----------
    timeout_s : float
        Budget for one verification (math-verify's own timeouts get the same value).
    num_workers : int
        Worker processes (started on first use).
    tail_chars : int
        Only the last ``tail_chars`` characters of a trace are searched for the answer.
    max_answer_chars : int
        A longer extracted answer (or ground truth) is not parsed: status ``error``.
    extraction : str
        ``boxed`` (default): boxed answers and answer lines only. ``lenient``: a trace without a box is read by
        math-verify's own LaTeX + expression extraction (its last ``lenient_chars`` characters).
    lenient_chars : int
        How much of the trace's end ``lenient`` extraction reads.
    """

    def __init__(
        self,
        timeout_s: float = 10.0,
        num_workers: int = 1,
        tail_chars: int = 4000,
        max_answer_chars: int = 1000,
        extraction: str = "boxed",
        lenient_chars: int = 4000,
    ):
        if timeout_s <= 0 or num_workers < 1:
            raise ValueError("timeout_s must be > 0 and num_workers >= 1")
        if extraction not in EXTRACTION_MODES:
            raise ValueError(f"extraction must be one of {EXTRACTION_MODES}, got {extraction!r}")
        self.timeout_s = float(timeout_s)
        self.num_workers = int(num_workers)
        self.tail_chars = int(tail_chars)
        self.max_answer_chars = int(max_answer_chars)
        self.extraction = extraction
        self.lenient_chars = int(lenient_chars) if extraction == "lenient" else 0
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._pool = WorkerPool(self.num_workers, _WORKER_ENTRY, start_timeout_s=_START_TIMEOUT_S, grace_s=_GRACE_S)

    @property
    def pool_restarts(self) -> int:
        """Workers killed or lost (a verification past its timeout, a worker that died)."""
        return self._pool.restarts

    def score(self, solution: str | bytes, ground_truth: Any) -> VerifyResult:
        found = extract_answers(solution, self.tail_chars, self.lenient_chars)
        if found.status != "ok":
            return self._count(VerifyResult(0.0, found.status))
        shown = None if found.raw else ", ".join(found.answers)
        truth = ground_truth_text(ground_truth)
        too_long = shown is not None and len(shown) > self.max_answer_chars
        if truth is None or too_long or len(truth) > self.max_answer_chars:
            return self._count(VerifyResult(0.0, "error", shown))
        score, status, answer = self._run((found.answers, truth, max(1, int(self.timeout_s)), found.raw))
        return self._count(VerifyResult(score, status, answer if answer is not None else shown))

    def _run(self, task: tuple) -> tuple[float, str, str | None]:
        try:
            return self._pool.call(task, self.timeout_s)
        except WorkerTimeout:
            # A worker ignored math-verify's alarm (C code): the pool killed it, so it cannot leak.
            logger.warning("verifier worker stuck past %.1fs; killed and replaced", self.timeout_s)
            return 0.0, "timeout", None
        except WorkerStartError as exc:
            logger.warning("verifier worker could not start (%r)", exc.__cause__)
            return 0.0, "error", None
        except WorkerUnavailable:  # its worker died, and so did the one it was retried on
            return 0.0, "error", None

    def _count(self, result: VerifyResult) -> VerifyResult:
        with self._lock:
            self.counts[result.status] += 1
        return result

    def close(self) -> None:
        """Kill the worker processes (a later ``score`` starts new ones)."""
        self._pool.close()
