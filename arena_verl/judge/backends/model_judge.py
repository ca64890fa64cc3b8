"""What every model-backed judge shares: prompts, strict parsing with a bounded re-ask, timeouts, transient-error
retries with exponential backoff, a concurrency cap, and counted failures. A backend implements
``_generate(messages, temperature, group) -> str`` (or a :class:`~arena_verl.core.judge_protocol.Reply` that says
whether the token limit cut it) and, for ``verdict: probability``, ``_next_token_probs(messages, continuation,
targets, group)``: the probabilities of the tokens that may follow the assistant turn ``continuation`` (see
:mod:`arena_verl.judge.verdicts.label_probs`). ``group`` is the call's group (None: a call of no group), passed down
from ``compare``/``score`` for a backend that sends a group's requests to one engine or replica (its prefix cache holds
the group's prompts); a backend that does not route ignores it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from arena_verl.core.counts import is_count
from arena_verl.core.judge_protocol import (
    JudgeStats,
    Trace,
    counts_tokens,
    report_cost,
    report_failed_attempt,
    report_transport_failure,
)
from arena_verl.judge.prompting.hygiene import new_delimiter
from arena_verl.judge.prompting.messages import build_pairwise_messages, build_pointwise_messages
from arena_verl.judge.prompting.templates import check_judge_templates, load_template
from arena_verl.judge.verdicts.label_probs import (
    VERDICT_PREFIX,
    LabelTargets,
    is_low_mass,
    pairwise_targets,
    pointwise_targets,
    read_labels,
    verdict_continuation,
)
from arena_verl.judge.verdicts.parsing import VERDICT_OUTCOME, parse_score, parse_verdict
from arena_verl.settings_judge import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = ["ModelJudge", "PermanentJudgeError"]

_DELIMITER_CACHE = 10_000


class PermanentJudgeError(RuntimeError):
    """An error that retrying cannot fix (bad request, unknown model, authentication)."""


class _NoReading(Exception):
    """A probability read that failed after its retries (the call has no verdict)."""


def _never(text: str) -> None:
    return None


def _keep_recent(cache: dict, key, value) -> None:
    """``cache[key] = value`` as the most recently used entry (the caller popped ``key`` first), the oldest dropped
    past :data:`_DELIMITER_CACHE` groups."""
    cache[key] = value
    while len(cache) > _DELIMITER_CACHE:
        cache.pop(next(iter(cache)))


class ModelJudge:
    """Base of the transformers, openai and vllm judges.

    A compare/score call makes up to ``parse_retries + 1`` generations; each generation is tried up to
    ``retries + 1`` times on transient errors, each attempt bounded by ``timeout_s``. A call that ends without a
    parsable verdict returns None (counted in ``stats.failures``): the tournament then counts it as a tie or drops
    it, never as a win.

    With ``verdict: probability`` a call reads the labels' next-token probabilities instead of parsing a reply
    (after generating its reasoning first with ``think_first``): its outcome is a number in [0, 1]; a read whose
    labels got no mass is counted in ``stats.parse_failures`` (with ``think_first`` the reasoning is asked again),
    one whose labels got less than ``low_mass_floor`` in ``stats.low_mass`` (its verdict stands).
    """

    name = "model"
    reports_usage = False  # True once an engine reported a request's prompt tokens (count_usage)
    vocabulary = None  # a backend's LabelVocabulary (its tokenizer's label tokens), when it has a tokenizer

    def __init__(
        self,
        settings: JudgeSettings,
        count_tokens: Callable[[str], int] | None = None,
        special_tokens: Iterable[str] | None = None,
    ):
        self.settings = settings
        self.stats = JudgeStats()
        self.count_tokens = count_tokens
        self.special_tokens = frozenset(special_tokens or ())  # the judge tokenizer's: neutralised in traces
        self._limiter = asyncio.Semaphore(settings.max_concurrency)
        self._delimiters: dict[str, str] = {}
        self._shown: dict[str, set[int]] = {}  # group: hashes of its traces already in stats.trace_tokens
        check_judge_templates(settings)  # a judge built directly (not from a checked config) refuses them too

    async def _generate(self, messages: list[dict], temperature: float, group: str | None = None) -> str:
        raise NotImplementedError

    async def _next_token_probs(
        self, messages: list[dict], continuation: str, targets: LabelTargets, group: str | None = None
    ) -> dict:
        """``{token text: probability}`` of the token after the assistant turn ``continuation`` (at least the label
        tokens of ``targets`` the backend can see; tokens with the same text summed)."""
        raise NotImplementedError(f"the {self.name} judge cannot read verdict probabilities")

    async def ready(self) -> None:
        """Wait until the judge can take calls (a vllm judge's engines have started): a tool that times its calls
        awaits this first, so that the start is neither counted in a call's time nor cut by its timeout."""
        await self._ready()

    async def _ready(self) -> None:
        """Awaited before each call, outside its timeouts (an engine still starting)."""

    def delimiter(self, group: str | None) -> str | None:
        """One random delimiter per group (None: a fresh one per call), so a group's calls share their prefix."""
        if group is None:
            return None
        tag = self._delimiters.pop(group, None) or new_delimiter()
        _keep_recent(self._delimiters, group, tag)
        return tag

    def count_usage(self, prompt_tokens, cached_tokens) -> None:
        """Add an engine's report of one generation or read (its prompt tokens, those served from its prefix cache)
        to ``stats``; a count that is not a non-negative integer (a server's garbage) is left out, and a cached count
        is never above its prompt's."""
        if not is_count(prompt_tokens):
            return
        self.reports_usage = True
        cached = min(cached_tokens, prompt_tokens) if is_count(cached_tokens) else 0
        self.stats.prompt_tokens += prompt_tokens
        self.stats.cached_tokens += cached
        report_cost(prompt_tokens=prompt_tokens, cached_tokens=cached)  # the call's own share, for its caller

    def _note_traces(self, group: str | None, *texts) -> None:
        """Add each trace's tokens as shown (its count, at most ``max_trace_tokens``) to ``stats.trace_tokens``, once
        per group (every call without a group). Needs the judge's tokenizer: a byte count is no token figure."""
        if self.count_tokens is None:
            return
        seen = set() if group is None else self._shown.pop(group, set())
        for text in texts:
            key = hash(text)
            if key not in seen:
                seen.add(key)
                self.stats.trace_tokens += min(self.count_tokens(str(text)), self.settings.max_trace_tokens)
        if group is not None:
            _keep_recent(self._shown, group, seen)

    async def compare(
        self,
        problem: str,
        first: Trace,
        second: Trace,
        reference: str | None = None,
        *,
        task: str = "math",
        group: str | None = None,
    ) -> float | None:
        self._note_traces(group, first.text, second.text)
        template = self.settings.pairwise_template or task
        messages = build_pairwise_messages(
            problem,
            first.text,
            second.text,
            reference=reference if self.settings.show_reference else None,
            template=template,
            max_trace_tokens=self.settings.max_trace_tokens,
            count_tokens=self.count_tokens,
            delimiter=self.delimiter(group),
            special_tokens=self.special_tokens,
        )
        if self.settings.verdict == "probability":
            targets = pairwise_targets(load_template(template))
            return await self._ask_probability(messages, targets, parse_verdict, group)
        verdict = await self._ask(messages, parse_verdict, group)
        return None if verdict is None else VERDICT_OUTCOME[verdict]

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
        self._note_traces(group, trace.text)
        messages = build_pointwise_messages(
            problem,
            trace.text,
            reference=reference if self.settings.show_reference else None,
            template=self.settings.pointwise_template,
            max_trace_tokens=self.settings.max_trace_tokens,
            count_tokens=self.count_tokens,
            delimiter=self.delimiter(group),
            special_tokens=self.special_tokens,
        )
        if self.settings.verdict == "probability":
            targets = pointwise_targets(load_template(self.settings.pointwise_template))
            return await self._ask_probability(messages, targets, parse_score, group)
        return await self._ask(messages, parse_score, group)

    async def _ask(self, messages: list[dict], parse, group: str | None):
        await self._ready()
        self.stats.calls += 1
        for attempt in range(self.settings.parse_retries + 1):
            temperature = self.settings.temperature if attempt == 0 else self.settings.retry_temperature
            raw = await self._generate_with_retries(messages, temperature, group)
            if raw is None:
                break
            if getattr(raw, "truncated", False):
                self.stats.truncated += 1
                parsed = None
            else:
                parsed = parse(raw)
            if parsed is not None:
                return parsed
            self.stats.parse_failures += 1
            report_failed_attempt()
        self.stats.failures += 1
        return None

    async def _ask_probability(
        self, messages: list[dict], targets: LabelTargets, parse, group: str | None
    ) -> float | None:
        """A verdict read from the labels' probabilities at the verdict position (see the class docstring)."""
        await self._ready()
        self.stats.calls += 1
        s = self.settings

        async def read(continuation: str, at: LabelTargets):
            probabilities = await self._with_retries(lambda: self._read_counted(messages, continuation, at, group))
            if probabilities is None:
                raise _NoReading
            return probabilities

        for attempt in range(s.parse_retries + 1 if s.think_first else 1):
            continuation = VERDICT_PREFIX
            if s.think_first:
                temperature = s.temperature if attempt == 0 else s.retry_temperature
                reasoning = await self._generate_with_retries(messages, temperature, group)
                if reasoning is None:
                    break
                # A cut reasoning still gets its verdict, read after all of it: a verdict token its cut end seems to
                # hold may be an echoed instruction ("[[A]] if Attempt A is better, ...").
                cut = getattr(reasoning, "truncated", False)
                continuation = verdict_continuation(str(reasoning), _never if cut else parse)
            try:
                pieces = self.vocabulary.first_pieces if self.vocabulary is not None else None
                reading = await read_labels(read, continuation, targets, pieces)
            except _NoReading:
                break
            if reading is not None:
                if is_low_mass(reading, s.low_mass_floor):
                    self.stats.low_mass += 1
                    report_cost(low_mass=1)
                return reading.outcome
            self.stats.parse_failures += 1
            report_failed_attempt()
        self.stats.failures += 1
        return None

    async def _generate_with_retries(self, messages: list[dict], temperature: float, group: str | None) -> str | None:
        return await self._with_retries(lambda: self._generate_counted(messages, temperature, group))

    async def _generate_counted(self, messages: list[dict], temperature: float, group: str | None):
        """One attempt of ``_generate``; when the call's caller counts tokens (:func:`counts_tokens`) and the judge
        has a tokenizer, the prompt's tokens (counted before the attempt: a failed one read them too) and the
        reply's go to the call's record."""
        counting = self.count_tokens is not None and counts_tokens()
        if counting:
            report_cost(tokens_in=self.count_tokens(self._prompt_text(messages)))
        reply = await self._generate(messages, temperature, group)
        if counting and isinstance(reply, str):
            report_cost(tokens_out=self.count_tokens(str(reply)))
        return reply

    async def _read_counted(self, messages: list[dict], continuation: str, targets: LabelTargets, group: str | None):
        """One attempt of ``_next_token_probs``, counted as :meth:`_generate_counted` counts (the prompt goes on with
        ``continuation``; a read generates no token)."""
        if self.count_tokens is not None and counts_tokens():
            report_cost(tokens_in=self.count_tokens(self._prompt_text(messages) + str(continuation)), tokens_out=0)
        return await self._next_token_probs(messages, continuation, targets, group)

    def _prompt_text(self, messages: list[dict]) -> str:
        """The prompt as the judge's model reads it: through its chat template when the judge holds its tokenizer
        (``self.tokenizer``), else the messages' text."""
        tokenizer = getattr(self, "tokenizer", None)
        if tokenizer is not None:
            from arena_verl.judge.backends.transformers_backend import render_chat

            return render_chat(tokenizer, messages)
        return "\n\n".join(str(m.get("content", "")) for m in messages)

    async def _with_retries(self, attempt_call):
        """``attempt_call()``'s result, each attempt under the concurrency cap and ``timeout_s``; transient errors
        retried with backoff; None when every attempt failed or the error is permanent."""
        s = self.settings
        for attempt in range(s.retries + 1):
            try:
                async with self._limiter:
                    return await asyncio.wait_for(attempt_call(), s.timeout_s)
            except asyncio.CancelledError:
                raise
            except PermanentJudgeError as exc:
                self.stats.errors += 1
                report_failed_attempt()
                logger.warning("%s judge: %s (not retried)", self.name, exc)
                self._after_failed_attempt(exc)  # another server may answer at the old address now
                return None
            except Exception as exc:  # noqa: BLE001  (transient: timeout, connection, dead engine)
                self.stats.errors += 1
                report_failed_attempt()  # a call cut while it waits to retry is a failure, not a straggler
                report_transport_failure()  # no judge answered it (the breaker counts these)
                self._after_failed_attempt(exc)
                if attempt == s.retries:
                    logger.warning("%s judge: giving up after %d attempts: %r", self.name, attempt + 1, exc)
                    return None
                await asyncio.sleep(s.backoff_s * 2**attempt)
        return None

    def _after_failed_attempt(self, exc: BaseException) -> None:
        """Called after each failed attempt, transient or not (a served judge looks for a new address here)."""

    async def close(self) -> None:
        return None
