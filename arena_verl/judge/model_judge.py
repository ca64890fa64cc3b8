"""What every model-backed judge shares: prompts, strict parsing with a bounded re-ask, timeouts, transient-error
retries with exponential backoff, a concurrency cap, and counted failures. A backend only implements
``_generate(messages, temperature) -> str`` (or a :class:`~.base.Reply` that says whether the token limit cut it)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from arena_verl.judge.base import JudgeStats, Trace
from arena_verl.judge.hygiene import new_delimiter
from arena_verl.judge.messages import build_pairwise_messages, build_pointwise_messages
from arena_verl.judge.verdict import VERDICT_OUTCOME, parse_score, parse_verdict
from arena_verl.settings import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = ["ModelJudge", "PermanentJudgeError"]

_DELIMITER_CACHE = 10_000


class PermanentJudgeError(RuntimeError):
    """An error that retrying cannot fix (bad request, unknown model, authentication)."""


class ModelJudge:
    """Base of the transformers, openai and vllm judges.

    A compare/score call makes up to ``parse_retries + 1`` generations; each generation is tried up to
    ``retries + 1`` times on transient errors, each attempt bounded by ``timeout_s``. A call that ends without a
    parsable verdict returns None (counted in ``stats.failures``): the tournament then counts it as a tie or drops
    it, never as a win.
    """

    name = "model"

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

    async def _generate(self, messages: list[dict], temperature: float) -> str:
        raise NotImplementedError

    def delimiter(self, group: str | None) -> str | None:
        """One random delimiter per group (None: a fresh one per call), so a group's calls share their prefix."""
        if group is None:
            return None
        tag = self._delimiters.pop(group, None) or new_delimiter()
        self._delimiters[group] = tag  # most recently used last
        while len(self._delimiters) > _DELIMITER_CACHE:
            self._delimiters.pop(next(iter(self._delimiters)))
        return tag

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
        messages = build_pairwise_messages(
            problem,
            first.text,
            second.text,
            reference=reference if self.settings.show_reference else None,
            template=self.settings.pairwise_template or task,
            max_trace_tokens=self.settings.max_trace_tokens,
            count_tokens=self.count_tokens,
            delimiter=self.delimiter(group),
            special_tokens=self.special_tokens,
        )
        verdict = await self._ask(messages, parse_verdict)
        return None if verdict is None else VERDICT_OUTCOME[verdict]

    async def score(
        self, problem: str, trace: Trace, reference: str | None = None, *, task: str = "math", group: str | None = None
    ) -> float | None:
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
        return await self._ask(messages, parse_score)

    async def _ask(self, messages: list[dict], parse):
        self.stats.calls += 1
        for attempt in range(self.settings.parse_retries + 1):
            temperature = self.settings.temperature if attempt == 0 else self.settings.retry_temperature
            raw = await self._generate_with_retries(messages, temperature)
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
        self.stats.failures += 1
        return None

    async def _generate_with_retries(self, messages: list[dict], temperature: float) -> str | None:
        s = self.settings
        for attempt in range(s.retries + 1):
            try:
                async with self._limiter:
                    return await asyncio.wait_for(self._generate(messages, temperature), s.timeout_s)
            except asyncio.CancelledError:
                raise
            except PermanentJudgeError as exc:
                self.stats.errors += 1
                logger.warning("%s judge: %s (not retried)", self.name, exc)
                return None
            except Exception as exc:  # noqa: BLE001  (transient: timeout, connection, dead engine)
                self.stats.errors += 1
                self._after_transient_error(exc)
                if attempt == s.retries:
                    logger.warning("%s judge: giving up after %d attempts: %r", self.name, attempt + 1, exc)
                    return None
                await asyncio.sleep(s.backoff_s * 2**attempt)
        return None

    def _after_transient_error(self, exc: BaseException) -> None:
        """Called after each failed attempt, before the retry (a served judge looks for a new address here)."""

    async def close(self) -> None:
        return None
