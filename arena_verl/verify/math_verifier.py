"""The verifier: math answers scored with math-verify, in worker processes, with a timeout that always holds.

Answer extraction (done here, before math-verify sees anything), in the trace's last ``tail_chars`` characters:

- the answer is the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``);
- several different boxed answers are one set answer when the reference is a set of several values (gold
  ``(2, 2), (6, 2)``: ``\\boxed{(2, 2)}`` and ``\\boxed{(6, 2)}`` are compared as ``(2, 2), (6, 2)``); for a
  single-valued reference they are a hedge and score 0 (status ``hedged``);
- an "answer is X" / "Answer: X" / "final answer is X" form on the last non-empty line counts when there is no box
  ("Final Answer: The largest $n$ is 34." gives ``34``), and when it states a value after every box ("\\boxed{200}
  ... \\boxed{255} ... Final Answer: The final answer is $10,455$." gives ``10,455``);
- ``extraction="lenient"``: without a box, math-verify's own LaTeX and expression extraction (its "final answer
  is" / "answer:" anchors first) reads the trace's last ``lenient_chars`` characters instead of the answer-line rule
  (``... so we get $x = 5$.`` gives ``5``); boxes follow the rules above;
- anything else (no answer, an answer only in the middle of the trace, an empty trace) scores 0.

Equivalence is math-verify's (``parse`` + ``verify``): ``1/2``, ``0.5``, ``\\frac{1}{2}``, ``\\dfrac12`` and ``2/4`` all
match a gold ``\\frac{1}{2}``. A percentage keeps its number and drops the sign (math-verify's rule): ``50\\%``
matches ``50``, not ``1/2``. Ground truths may be strings, numbers, bytes, numpy scalars or arrays and lists: a
one-element list or array is its element, a longer one is a set answer.

Why processes: math-verify bounds sympy with ``signal`` alarms, which only work in a main thread, and reward
managers run in threads of Ray actors. Each worker process runs math-verify in its own main thread (so its
timeouts work), and the caller waits at most ``timeout_s`` plus a grace period; a worker stuck past that (C code
that ignores signals) is killed and replaced. A verification never raises: every failure is a score of 0 with a
status, and statuses are counted.

Why not ``multiprocessing.Pool``: an idle pool worker holds the pool's shared queue lock while it waits for work,
so a pool worker killed while idle (a SIGTERM to the process group, Ray killing a worker's children, the OOM
killer) leaves the lock taken for good: ``Pool.terminate()`` and multiprocessing's exit handler then wait for it
forever, the pool's handler thread starts a replacement worker, and the process (a Ray reward worker, ~500 MB)
never exits. The workers here are plain child processes, each with its own pair of pipes, no shared lock: killing
one costs nothing but its task. Every worker ends with the process that started it: on a closed pipe (its parent
exited), by ``PR_SET_PDEATHSIG`` (its parent was killed), by a watchdog on its parent id (reparented), by SIGTERM
(never ignored in a worker), and by ``close()``, ``weakref.finalize`` and ``atexit`` in the parent.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import math
import numbers
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from arena_verl.core.names import EXTRACTION_MODES, VERIFY_STATUSES

logger = logging.getLogger(__name__)

__all__ = [
    "EXTRACTION_MODES",
    "STATUSES",
    "MathVerifier",
    "VerifyResult",
    "extract_final_answer",
    "ground_truth_text",
]

STATUSES = VERIFY_STATUSES
_BOX_OPENERS = ("\\boxed{", "\\fbox{", "\\boxed {")
# The last "answer is|:|=" on the line (``.*`` is greedy): "Final Answer: The final answer is $5$" gives "$5$".
_ANSWER_LINE = re.compile(r".*\banswer\s*(?:is\b\s*:?|:|=)\s*(?P<answer>.+?)\s*$", re.IGNORECASE)
_I_HOPE = re.compile(r"\.?\s*I hope\b.*$", re.IGNORECASE)  # "... is $5$. I hope it is correct."
_PROSE_IS = re.compile(r"^.*\bis\b\s*:?\s*", re.IGNORECASE)  # "The largest $n$ is 34" gives "34"
# The math that opens an answer: $$...$$, $...$ (a closing $ is not an escaped \$), \(...\), \[...\].
_MATH_FIRST = re.compile(
    r"\$\$(?P<display>.+?)\$\$|\$(?P<inline>.+?)(?<!\\)\$|\\\((?P<paren>.+?)\\\)|\\\[(?P<bracket>.+?)\\\]", re.DOTALL
)
_MATH_JOINT = re.compile(r"\s*(?:,\s*(?:and|or)?|and|or)\s*(?=\$|\\\(|\\\[)")  # "$12$ and $13$"
_SENTENCE_END = re.compile(r"\.\s")
_MATHY = re.compile(r"[\d\\^=+*/<>()\[\]{}]")  # a digit, a LaTeX command or an operator
_QUOTES = re.compile(r'^(?:\\?["\u201c\u201d])+|(?:\\?["\u201c\u201d])+$')
_GRACE_S = 5.0  # past timeout_s, a worker that has not answered is killed
_START_TIMEOUT_S = 120.0  # a new worker (python + math-verify + sympy imports) must be ready by then


@dataclass(frozen=True)
class VerifyResult:
    score: float
    status: str  # one of STATUSES
    answer: str | None = None


# --------------------------------------------------------------------------------------------- answer extraction


@dataclass(frozen=True)
class _Extraction:
    answers: tuple[str, ...]  # one answer, or several distinct boxed answers (a set answer or a hedge)
    status: str  # "ok" or a failure status
    raw: bool = False  # lenient: answers[0] is the trace's tail, for math-verify's own extraction


def extract_final_answer(text: str | bytes, tail_chars: int = 4000) -> tuple[str | None, str]:
    """Return ``(answer, status)`` of the default (``boxed``) extraction; ``answer`` is None unless ``status == "ok"``.

    Several different boxed answers give ``(None, "hedged")`` here: whether they are one set answer depends on the
    reference, which :meth:`MathVerifier.score` knows.
    """
    found = _extract(text, tail_chars)
    if found.status != "ok":
        return None, found.status
    if len(found.answers) > 1:
        return None, "hedged"
    return found.answers[0], "ok"


def _extract(text: Any, tail_chars: int, lenient_chars: int = 0) -> _Extraction:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return _Extraction((), "error")
    tail = text[-tail_chars:]
    if not tail.strip():
        return _Extraction((), "empty")
    line_start, line = _last_line(tail)
    boxes = _boxed_contents(tail)
    if boxes:
        after_boxes = _answer_on_line(line[max(0, boxes[-1][1] - line_start) :])
        if after_boxes is not None and _MATHY.search(after_boxes):  # not "... the answer is correct."
            return _Extraction((after_boxes,), "ok")  # an explicit final answer after every box
        distinct: dict[str, str] = {}
        for content, _ in boxes:
            content = content.strip().strip("$").strip()
            if content:
                distinct[" ".join(content.split())] = content
        return _Extraction(tuple(distinct.values()), "ok") if distinct else _Extraction((), "no_answer")
    if lenient_chars > 0:  # math-verify's own extraction (its "final answer is" / "answer:" anchors first)
        return _Extraction((tail[-lenient_chars:],), "ok", raw=True)
    line_answer = _answer_on_line(line)
    return _Extraction((line_answer,), "ok") if line_answer is not None else _Extraction((), "no_answer")


def _last_line(text: str) -> tuple[int, str]:
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        if text[start:end].strip():
            return start, text[start:end]
        end = start - 1
    return 0, ""


def _answer_on_line(line: str) -> str | None:
    match = _ANSWER_LINE.match(line.replace("*", ""))
    if match is None:
        return None
    answer = _QUOTES.sub("", _I_HOPE.sub("", match.group("answer")).strip())
    maths = []  # "is $16,\\!386.20$. I apologize ...": the math that follows; "$12$ and $13$": both
    position = 0
    while (math := _MATH_FIRST.match(answer, position)) is not None:
        maths.append(math.group(math.lastgroup).strip())
        joint = _MATH_JOINT.match(answer, math.end())
        if joint is None:
            break
        position = joint.end()
    if maths:
        return ", ".join(m for m in maths if m) or None
    answer = _SENTENCE_END.split(answer, maxsplit=1)[0].strip()  # the sentence ("...", not a decimal point)
    if re.search(r"[A-Za-z]{2,}\s", answer):
        answer = _PROSE_IS.sub("", answer)  # prose before the value: "The largest $n$ is 34"
    answer = answer.strip().rstrip(".").strip().strip("$").strip()
    return answer or None


def _boxed_contents(text: str) -> list[tuple[str, int]]:
    """``(content, end)`` of every balanced ``\\boxed{...}``; an unclosed box is ignored."""
    return [(content, end) for _, end, content in boxed_spans(text)]


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of every balanced ``\\boxed{...}`` / ``\\fbox{...}``, in order; an unclosed box
    ends the scan (what follows it is inside it)."""
    found = []
    position = 0
    while True:
        starts = [(text.find(opener, position), opener) for opener in _BOX_OPENERS]
        starts = [(start, opener) for start, opener in starts if start >= 0]
        if not starts:
            return found
        start, opener = min(starts)
        depth, i = 1, start + len(opener)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth:
            return found
        found.append((start, i, text[start + len(opener) : i - 1]))
        position = i


# ---------------------------------------------------------------------------------------------------- ground truth


def ground_truth_text(ground_truth: Any) -> str | None:
    """The reference as math-verify input, or None when there is none.

    Strings, bytes, ints, finite floats (``42.0`` is ``42``), fractions and decimals, numpy scalars and arrays, and
    lists or tuples: a one-element list or array is its element, a longer one a set answer (``["2", "3"]`` is
    ``2, 3``). Booleans, dicts, empty strings or lists and anything else: None.
    """
    value = ground_truth
    if not isinstance(value, (str, bytes, bytearray)) and callable(getattr(value, "tolist", None)):
        try:
            value = value.tolist()  # numpy scalars and arrays (and tensors) as Python objects
        except Exception:  # noqa: BLE001
            return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (list, tuple)):
        items = [ground_truth_text(item) for item in value]
        if not items or any(item is None for item in items):
            return None
        return items[0] if len(items) == 1 else ", ".join(items)
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Rational):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            return None
        return str(int(number)) if number.is_integer() else repr(number)
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Complex):  # Decimal
        text = str(value)
        return text if re.fullmatch(r"-?\d+(\.\d+)?(E[+-]?\d+)?", text, re.IGNORECASE) else None
    return None


# ---------------------------------------------------------------------------------------- math-verify, in a worker


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


def _worker_main(parent_pid: int, request_fd: int, reply_fd: int) -> None:
    """Entry point of a worker process: verify requests until the parent closes the pipe or dies."""
    _die_with_parent(parent_pid)
    requests = Connection(request_fd, writable=False)
    replies = Connection(reply_fd, readable=False)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watch", daemon=True).start()
    import math_verify  # noqa: F401  (imported before the first task, so that it does not count against it)

    try:
        replies.send(("ready", os.getpid()))
        while True:
            task = requests.recv()
            replies.send(_verify_worker(*task))
    except (EOFError, OSError):
        os._exit(0)  # the parent closed the pipes (close(), exit) or died


def _die_with_parent(parent_pid: int) -> None:
    # A worker ends on SIGTERM whatever its starter ignored or blocked (dispositions SIG_IGN and signal masks are
    # inherited across exec), and math-verify needs SIGALRM; Ctrl-C (SIGINT to the whole process group) is for
    # the parent to handle: it kills its workers itself.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGALRM})
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except Exception:  # noqa: BLE001  (the watchdog and the pipe still end the worker)
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl
        os._exit(0)


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(0)


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self, proc: subprocess.Popen, requests: Connection, replies: Connection, generation: int):
        self.proc = proc
        self.requests = requests
        self.replies = replies
        self.generation = generation
        self.ready = False

    def close_pipes(self) -> None:
        for conn in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                conn.close()

    def kill(self) -> None:
        self.close_pipes()
        with contextlib.suppress(OSError):
            self.proc.kill()

    def reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.proc.wait(timeout=5.0)


def _start_worker(generation: int) -> _Worker:
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    # The package's folder is appended to the worker's sys.path (after its own paths): the worker imports this
    # module even where the parent found it through a path its environment does not carry (Ray's working_dir).
    package_root = str(Path(__file__).resolve().parents[1])
    code = (
        f"import sys; sys.path.append({package_root!r}); from arena_verl.verify.math_verifier import _worker_main; "
        f"_worker_main({os.getpid()}, {request_r}, {reply_w})"
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            pass_fds=(request_r, reply_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    except BaseException:
        for fd in (request_w, reply_r):
            os.close(fd)
        raise
    finally:
        os.close(request_r)
        os.close(reply_w)
    return _Worker(proc, Connection(request_w, readable=False), Connection(reply_r, writable=False), generation)


# PR_SET_PDEATHSIG fires when the *thread* that started a process ends, not the process: workers are started by one
# long-lived daemon thread, never by callers' threads (a ThreadPoolExecutor's threads come and go).
_spawner_lock = threading.Lock()
_spawner: tuple[int, queue.SimpleQueue] | None = None


def _spawn_worker(generation: int) -> _Worker:
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():  # none yet, or a forked child
            requests: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_spawner_loop, args=(requests,), name="arena-verifier-spawner", daemon=True).start()
            _spawner = (os.getpid(), requests)
        requests = _spawner[1]
    future: Future = Future()
    requests.put((future, generation))
    try:
        return future.result(timeout=30.0)
    except TimeoutError:  # the spawner thread is gone (interpreter shutdown): start it from this thread
        if future.cancel():
            return _start_worker(generation)
        return future.result()


def _spawner_loop(requests: queue.SimpleQueue) -> None:
    while True:
        future, generation = requests.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(_start_worker(generation))
        except BaseException as exc:  # noqa: BLE001  (handed to the caller)
            future.set_exception(exc)


class _Workers:
    """The worker processes of one verifier; kept apart from it so that ``weakref.finalize`` can close them."""

    def __init__(self, size: int):
        self.size = size
        self.pid = os.getpid()
        self.cond = threading.Condition()
        self.idle: list[_Worker] = []
        self.live: set[_Worker] = set()
        self.started = 0  # live workers plus those being started
        self.generation = 0
        self.restarts = 0

    def _forget_after_fork(self) -> None:
        # A forked child shares its parent's worker pipes: it must neither use nor kill its parent's workers.
        if self.pid != os.getpid():
            for worker in self.live:
                worker.close_pipes()
            self.live, self.idle, self.started, self.pid = set(), [], 0, os.getpid()
            self.generation += 1

    def acquire(self) -> _Worker:
        with self.cond:
            self._forget_after_fork()
            while True:
                if self.idle:
                    return self.idle.pop()
                if self.started < self.size:
                    self.started += 1
                    generation = self.generation
                    break
                self.cond.wait()
        try:
            worker = _spawn_worker(generation)
        except BaseException:
            with self.cond:
                if generation == self.generation:
                    self.started -= 1
                self.cond.notify()
            raise
        with self.cond:
            if generation == self.generation:
                self.live.add(worker)
                return worker
        worker.kill()  # closed while it started
        worker.reap()
        raise RuntimeError("verifier closed")

    def release(self, worker: _Worker, healthy: bool) -> None:
        with self.cond:
            current = worker.generation == self.generation
            if healthy and current:
                self.idle.append(worker)
            elif current:
                self.live.discard(worker)
                self.started -= 1
                self.restarts += 1
            self.cond.notify()
        if not (healthy and current):
            worker.kill()
            worker.reap()

    def close(self) -> None:
        """Kill every worker (busy ones too: their callers get ``error``). Never blocks on a worker."""
        with self.cond:
            self._forget_after_fork()
            workers = list(self.live)
            self.live.clear()
            self.idle.clear()
            self.started = 0
            self.generation += 1
            self.cond.notify_all()
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.reap()


_ALL_WORKERS: weakref.WeakSet[_Workers] = weakref.WeakSet()


def _close_all_workers() -> None:
    for workers in list(_ALL_WORKERS):
        workers.close()


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
        self._workers = _Workers(self.num_workers)
        _ALL_WORKERS.add(self._workers)
        self._finalizer = weakref.finalize(self, self._workers.close)

    @property
    def pool_restarts(self) -> int:
        """Workers killed or lost (a verification past its timeout, a worker that died)."""
        return self._workers.restarts

    def score(self, solution: str | bytes, ground_truth: Any) -> VerifyResult:
        found = _extract(solution, self.tail_chars, self.lenient_chars)
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
        for attempt in range(2):
            try:
                worker = self._workers.acquire()
            except Exception as exc:  # noqa: BLE001  (could not start a worker)
                logger.warning("verifier worker could not start (%r)", exc)
                return 0.0, "error", None
            healthy = False
            try:
                if not worker.ready:
                    if not worker.replies.poll(_START_TIMEOUT_S):
                        raise EOFError("worker did not start")
                    worker.replies.recv()
                    worker.ready = True
                worker.requests.send(task)
                if not worker.replies.poll(self.timeout_s + _GRACE_S):
                    # A worker ignored math-verify's alarm (C code): it is killed (release) so it cannot leak.
                    logger.warning("verifier worker stuck past %.1fs; killed and replaced", self.timeout_s)
                    return 0.0, "timeout", None
                result = worker.replies.recv()
                healthy = True
                return result
            except (EOFError, OSError, ValueError):  # the worker died (or was closed) under us: once more
                if attempt == 0:
                    continue
                return 0.0, "error", None
            finally:
                self._workers.release(worker, healthy)
        return 0.0, "error", None

    def _count(self, result: VerifyResult) -> VerifyResult:
        with self._lock:
            self.counts[result.status] += 1
        return result

    def close(self) -> None:
        """Kill the worker processes (a later ``score`` starts new ones)."""
        self._workers.close()


# At interpreter exit (also ``sys.exit`` on a Ray worker's SIGTERM) every verifier's workers are killed; if the
# process dies without it, the workers' pipe, PR_SET_PDEATHSIG and watchdog end them.
atexit.register(_close_all_workers)
