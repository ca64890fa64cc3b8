"""The verifier: math answers scored with math-verify, in worker processes, with a timeout that always holds.

Answer extraction (done here, before math-verify sees anything):

- the answer is the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in the trace's last
  ``tail_chars`` characters; if several boxed answers there differ, the trace hedged and scores 0;
- without a box, an "answer is X" / "Answer: X" / "final answer: X" form on the last non-empty line;
- anything else (no answer, an answer only in the middle of the trace, an empty trace) scores 0.

Equivalence is math-verify's (``parse`` + ``verify``): ``1/2``, ``0.5``, ``\\frac{1}{2}``, ``\\dfrac12`` and ``2/4`` all
match a gold ``\\frac{1}{2}``. A percentage keeps its number and drops the sign (math-verify's rule): ``50\\%``
matches ``50``, not ``1/2``.

Why processes: math-verify bounds sympy with ``signal`` alarms, which only work in a main thread, and reward
managers run in threads of Ray actors. Each worker process runs math-verify in its own main thread (so its
timeouts work), and the caller waits at most ``timeout_s`` plus a grace period; a worker stuck past that (C code
that ignores signals) is killed and the pool restarted. A verification never raises: every failure is a score of
0 with a status, and statuses are counted.
"""

from __future__ import annotations

import collections
import logging
import multiprocessing
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["VerifyResult", "MathVerifier", "extract_final_answer", "STATUSES"]

STATUSES = ("correct", "wrong", "no_answer", "hedged", "empty", "timeout", "error")
_BOX_OPENERS = ("\\boxed{", "\\fbox{", "\\boxed {")
_ANSWER_LINE = re.compile(r"\banswer\s*(?:is\b\s*:?|:|=)\s*(?P<answer>.+?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class VerifyResult:
    score: float
    status: str  # one of STATUSES
    answer: str | None = None


def extract_final_answer(text: str | bytes, tail_chars: int = 4000) -> tuple[str | None, str]:
    """Return ``(answer, status)``; ``answer`` is None unless ``status == "ok"``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return None, "error"
    tail = text[-tail_chars:]
    if not tail.strip():
        return None, "empty"
    boxes = _boxed_contents(tail)
    if boxes:
        distinct = {" ".join(b.split()) for b in boxes}
        if len(distinct) > 1:
            return None, "hedged"
        answer = boxes[-1].strip()
        return (answer, "ok") if answer else (None, "no_answer")
    last_line = next((line for line in reversed(tail.splitlines()) if line.strip()), "")
    match = _ANSWER_LINE.search(last_line.replace("*", ""))
    if match is None:
        return None, "no_answer"
    answer = match.group("answer").strip().rstrip(".").strip().strip("$").strip()
    return (answer, "ok") if answer else (None, "no_answer")


def _boxed_contents(text: str) -> list[str]:
    """Contents of every balanced ``\\boxed{...}``; an unclosed box is ignored."""
    found = []
    start = 0
    while True:
        positions = [(text.find(opener, start), opener) for opener in _BOX_OPENERS]
        positions = [(pos, opener) for pos, opener in positions if pos >= 0]
        if not positions:
            return found
        pos, opener = min(positions)
        depth, i = 1, pos + len(opener)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth:
            return found
        found.append(text[pos + len(opener) : i - 1])
        start = i


def _verify_worker(answer: str, ground_truth: str, timeout_s: int) -> tuple[float, str]:
    """Runs in a worker process's main thread, where math-verify's signal timeouts work."""
    started = time.monotonic()
    try:
        from math_verify import parse, verify

        gold = parse(_as_latex(ground_truth), parsing_timeout=timeout_s)
        predicted = parse(_as_latex(answer), parsing_timeout=timeout_s)
        if not gold:
            return 0.0, "error"
        if not predicted:
            return 0.0, "wrong"
        if verify(gold, predicted, timeout_seconds=timeout_s):
            return 1.0, "correct"
        # math-verify catches its own timeout and answers False: tell that apart by the time it took.
        return 0.0, "timeout" if time.monotonic() - started >= 0.9 * timeout_s else "wrong"
    except TimeoutError:
        return 0.0, "timeout"
    except Exception:  # noqa: BLE001  (a verifier never raises)
        return 0.0, "error"


def _as_latex(answer: str) -> str:
    answer = answer.strip()
    return answer if answer.startswith("$") else f"${answer}$"


class MathVerifier:
    """Scores math answers against ground truth; thread-safe, never raises.

    Parameters
    ----------
    timeout_s : float
        Budget for one verification (math-verify's own timeouts get the same value).
    num_workers : int
        Worker processes.
    tail_chars : int
        Only the last ``tail_chars`` characters of a trace are searched for the answer.
    max_answer_chars : int
        A longer extracted answer (or ground truth) is not parsed: status ``error``.
    """

    def __init__(self, timeout_s: float = 10.0, num_workers: int = 1, tail_chars: int = 4000, max_answer_chars=1000):
        if timeout_s <= 0 or num_workers < 1:
            raise ValueError("timeout_s must be > 0 and num_workers >= 1")
        self.timeout_s = float(timeout_s)
        self.num_workers = int(num_workers)
        self.tail_chars = int(tail_chars)
        self.max_answer_chars = int(max_answer_chars)
        self.counts: collections.Counter[str] = collections.Counter()
        self.pool_restarts = 0
        self._lock = threading.Lock()
        self._pool: Any = None

    def score(self, solution: str | bytes, ground_truth: Any) -> VerifyResult:
        answer, status = extract_final_answer(solution, self.tail_chars)
        if answer is None:
            return self._count(VerifyResult(0.0, status))
        truth = _ground_truth_text(ground_truth)
        if truth is None or len(answer) > self.max_answer_chars or len(truth) > self.max_answer_chars:
            return self._count(VerifyResult(0.0, "error", answer))
        score, status = self._run(answer, truth)
        return self._count(VerifyResult(score, status, answer))

    def _run(self, answer: str, truth: str) -> tuple[float, str]:
        for attempt in range(2):
            pool = self._get_pool()
            pending = pool.apply_async(_verify_worker, (answer, truth, max(1, int(self.timeout_s))))
            try:
                return pending.get(timeout=self.timeout_s + 5.0)
            except multiprocessing.TimeoutError:
                # A worker ignored math-verify's alarm (C code): kill the pool so it cannot leak.
                logger.warning("verifier worker stuck past %.1fs; restarting the pool", self.timeout_s)
                self._restart(pool)
                return 0.0, "timeout"
            except Exception:  # noqa: BLE001  (the pool was restarted under us, or a worker died)
                if attempt == 0:
                    continue
                return 0.0, "error"
        return 0.0, "error"

    def _get_pool(self):
        with self._lock:
            if self._pool is None:
                self._pool = multiprocessing.get_context("spawn").Pool(self.num_workers)
            return self._pool

    def _restart(self, pool) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
                self.pool_restarts += 1
        pool.terminate()

    def _count(self, result: VerifyResult) -> VerifyResult:
        with self._lock:
            self.counts[result.status] += 1
        return result

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()


def _ground_truth_text(ground_truth: Any) -> str | None:
    if isinstance(ground_truth, (list, tuple)) and ground_truth:
        ground_truth = ground_truth[0]
    if isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool):
        return str(ground_truth)
    if isinstance(ground_truth, str) and ground_truth.strip():
        return ground_truth.strip()
    return None
