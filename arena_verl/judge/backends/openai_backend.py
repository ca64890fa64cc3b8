"""A judge behind any OpenAI-compatible chat endpoint: ``vllm serve``, SGLang, a hosted API, or verl's own
reward-model router (``reward.reward_model.*`` hands the manager its address). One aiohttp session per judge, so
connections are reused; the connection pool is capped at the judge's concurrency.

``verdict: probability``: the request continues the assistant turn (``continue_final_message: true,
add_generation_prompt: false``, as vLLM's and SGLang's chat endpoints take them) for one token, with
``logprobs: true, top_logprobs: 20``; the labels are read from that token's top log-probabilities, so a label
outside the top 20 has no mass. With a tokenizer for the served model the label ids are asked for too
(``logprob_token_ids``, vLLM >= 0.31, which then lists every one of them). A server that refuses the field is asked
without it; one that ignores it (vLLM 0.24, the version verl 0.9.1 pins, drops unknown fields without an error) is
noticed by its reply, which lacks the label tokens asked for: the judge then says so once (a warning) and reads the
top 20 only. A read from the top 20 alone is partial (:class:`~.label_probs.PartialProbabilities`): a call whose
labels are missing from it, where their mass could matter, counts as low-mass (``arena/judge_calls_low_mass``)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from pathlib import Path

from arena_verl.core.judge_protocol import Reply
from arena_verl.judge.backends.endpoint import Endpoint
from arena_verl.judge.backends.model_judge import ModelJudge, PermanentJudgeError
from arena_verl.judge.prompting.hygiene import special_token_strings
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.judge.verdicts.label_probs import LabelTargets, LabelVocabulary, PartialProbabilities
from arena_verl.settings_judge import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = [
    "OpenAIJudge",
    "judge_tokenizer",
    "byte_budget_warning",
    "top_logprobs_by_text",
    "label_ids_answered",
    "reported_usage",
]

TOP_LOGPROBS = 20  # the most an OpenAI-compatible chat endpoint returns (vLLM 0.24 and the OpenAI API)


class OpenAIJudge(ModelJudge):
    name = "openai"

    def __init__(self, settings: JudgeSettings):
        check_judge_templates(settings)
        tokenizer = judge_tokenizer(settings)
        if tokenizer is None:
            logger.warning(byte_budget_warning(settings))
            super().__init__(settings)
        else:
            super().__init__(
                settings,
                count_tokens=lambda text: len(tokenizer.encode(text)),
                special_tokens=special_token_strings(tokenizer),
            )
        self.tokenizer = tokenizer
        self.vocabulary = LabelVocabulary(tokenizer) if tokenizer is not None and settings.verdict == "probability" \
            else None  # fmt: skip
        self.send_label_ids = self.vocabulary is not None  # off once a server refuses or ignores logprob_token_ids
        self.endpoint = Endpoint(
            settings.options.base_url, settings.options.base_url_file, request_path=settings.request_path
        )
        self.api_key = os.environ.get(settings.options.api_key_env, "")
        self._session = None

    async def _client(self):
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.settings.max_concurrency),
                headers={"Authorization": f"Bearer {self.api_key}"} if self.api_key else {},
            )
        return self._session

    async def _generate(self, messages: list[dict], temperature: float, group: str | None = None) -> str:
        payload = {
            "model": self.settings.options.model_path,
            "messages": messages,
            "temperature": temperature,
            "top_p": self.settings.top_p,
            "max_tokens": self.settings.max_new_tokens,
        }
        body = await self._post(payload, group)
        choice = body["choices"][0]
        # Servers with a reasoning parser return the reasoning separately; the verdict is in the content.
        content = choice["message"].get("content") or ""
        reasoning = choice["message"].get("reasoning_content") or choice["message"].get("reasoning")
        if reasoning and self.settings.verdict == "probability" and self.settings.think_first:
            content = f"<think>\n{reasoning}\n</think>\n\n{content}"  # the verdict is read after all of it
        return Reply(content, truncated=choice.get("finish_reason") == "length")

    async def _next_token_probs(
        self, messages: list[dict], continuation: str, targets: LabelTargets, group: str | None = None
    ) -> dict:
        payload = {
            "model": self.settings.options.model_path,
            "messages": [*messages, {"role": "assistant", "content": continuation}],
            "continue_final_message": True,
            "add_generation_prompt": False,
            "temperature": 0.0,
            "max_tokens": 1,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        asked = list(self.vocabulary.token_ids(targets)) if self.send_label_ids else None
        if asked is not None:
            payload["logprob_token_ids"] = asked
        try:
            body = await self._post(payload, group)
        except PermanentJudgeError as exc:
            if "logprob_token_ids" not in payload or "logprob_token_ids" not in str(exc):
                raise
            logger.warning("openai judge: the server refuses logprob_token_ids (%s); reading the top %d only",
                           str(exc)[:200], TOP_LOGPROBS)  # fmt: skip
            self.send_label_ids, asked = False, None
            del payload["logprob_token_ids"]
            body = await self._post(payload, group)
        probabilities = top_logprobs_by_text(body)
        if asked is not None and _top_entries(body):
            if label_ids_answered(self.vocabulary, asked, body):
                return probabilities  # every label token asked for is listed: nothing is missing
            self._ids_ignored()
        return PartialProbabilities(probabilities)

    def _ids_ignored(self) -> None:
        """The server answered without the label tokens it was asked for: from now on the top 20 only (said once)."""
        if self.send_label_ids:
            self.send_label_ids = False
            logger.warning(
                "openai judge: the server at %s ignored logprob_token_ids (its reply lacks the label tokens asked "
                "for; vLLM before 0.31 drops the field without an error): verdict probabilities are read from the "
                "top %d log-probabilities from now on, and a call whose labels are missing from them counts as "
                "low-mass (arena/judge_calls_low_mass)",
                self.endpoint.url,
                TOP_LOGPROBS,
            )

    async def _post(self, payload: dict, group: str | None) -> dict:
        """One request to the replica of the call's ``group`` (:mod:`.endpoint`). A replica that refuses the connection,
        resets it, answers 5xx or runs into the call's timeout leaves the ring for a while (the retry goes to the
        group's next choice); a 429 (busy) keeps it, and the call is retried there after its backoff."""
        import aiohttp

        session = await self._client()
        url = self.endpoint.pick(group)
        self.stats.rerouted = self.endpoint.rerouted  # counted when sent: a rerouted call may fail too
        started = time.monotonic()
        try:
            async with session.post(url, json=payload) as response:
                if response.status in (400, 401, 403, 404, 422):
                    raise PermanentJudgeError(f"HTTP {response.status} from {url}: {(await response.text())[:300]}")
                if response.status >= 500:
                    self.endpoint.failed(url)
                response.raise_for_status()  # 429 and 5xx: transient, retried
                body = await response.json()
        except asyncio.CancelledError:
            if time.monotonic() - started >= 0.9 * self.settings.timeout_s:  # its own timeout, not a caller leaving
                self.endpoint.failed(url)
            raise
        except (aiohttp.ClientConnectionError, asyncio.TimeoutError, OSError):
            self.endpoint.failed(url)
            raise
        self.endpoint.answered(url)
        self.count_usage(*reported_usage(body))
        return body

    @property
    def url(self) -> str:
        return self.endpoint.url

    def _after_failed_attempt(self, exc: BaseException) -> None:
        # A refused connection, a reset or a timeout may mean the judge job moved: its URL file says where to.
        self.endpoint.refresh()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def reported_usage(body) -> tuple[int | None, int | None]:
    """``(prompt tokens, of them cached)`` from a completion's ``usage`` (``prompt_tokens``,
    ``prompt_tokens_details.cached_tokens``: vLLM reports the latter with ``--enable-prompt-tokens-details``, and
    reports 0 cached tokens without it); None where the reply does not say."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return usage.get("prompt_tokens"), cached


def _top_entries(body: dict) -> list:
    """The ``top_logprobs`` entries of the first generated token of a chat completion (``[]`` without them)."""
    first = _first_token(body)
    entries = first.get("top_logprobs") if first else None
    return list(entries) if isinstance(entries, list) else []


def _first_token(body: dict) -> dict | None:
    choices = body.get("choices") if isinstance(body, dict) else None
    logprobs = (choices[0].get("logprobs") if choices and isinstance(choices[0], dict) else None) or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content or not isinstance(content[0], dict):
        return None
    return content[0]


def top_logprobs_by_text(body: dict) -> dict[str, float]:
    """``{token text: probability}`` of the first generated token of a chat completion with ``logprobs``: its top
    log-probabilities (entries with the same text, distinct token ids, summed) and the sampled token itself. A body
    without them gives ``{}`` (no label has mass)."""
    first = _first_token(body)
    if first is None:
        return {}
    out: dict[str, float] = {}
    for entry in first.get("top_logprobs") or ():
        _add(out, entry)
    if first.get("token") not in out:
        _add(out, first)
    return out


def label_ids_answered(vocabulary: LabelVocabulary, asked: list[int], body: dict) -> bool:
    """Whether a reply to a request with ``logprob_token_ids=asked`` answered them. A server that honours the field
    (vLLM >= 0.31) lists every token asked for (besides the sampled one); one that ignores it lists its top
    ``top_logprobs`` (20). So: more entries than a top-20 reply holds, or every asked token's text among the entries
    (compared without surrounding spaces, which detokenisers add or strip differently)."""
    entries = _top_entries(body)
    if len(entries) > TOP_LOGPROBS + 1:
        return True
    listed = {entry.get("token", "").strip() for entry in entries if isinstance(entry, dict)}
    listed.discard("")
    wanted = {vocabulary.texts[i].strip() for i in asked if 0 <= i < len(vocabulary.texts)}
    wanted.discard("")
    return wanted <= listed  # nothing to look for (no asked token has a text): taken as answered


def _add(out: dict[str, float], entry) -> None:
    token, value = (entry.get("token"), entry.get("logprob")) if isinstance(entry, dict) else (None, None)
    if isinstance(token, str) and isinstance(value, (int, float)) and value == value:  # not NaN
        out[token] = out.get(token, 0.0) + math.exp(min(0.0, float(value)))


def judge_tokenizer(settings: JudgeSettings):
    """The tokenizer that counts trace tokens for a served judge, or None (budgets in UTF-8 bytes).

    ``judge.tokenizer`` when set: a local folder or a hub id, loaded as any ``from_pretrained`` (a hub id may be
    downloaded); one that cannot be loaded is a ``ValueError`` naming the key, never a silent byte count. Unset: the
    served model's own tokenizer when ``model_path`` is a folder on this machine or a hub id already in the local
    cache (nothing is downloaded), else None.
    """
    name = settings.options.tokenizer
    if not name:
        return _local_tokenizer(settings.options.model_path)
    key = "reward.arena.judge.tokenizer"
    path = Path(name).expanduser()
    if looks_local(name) and not path.is_dir():
        raise ValueError(f"{key}={name!r}: {'not a folder' if path.exists() else 'no such folder'}")
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(path) if path.is_dir() else name)
    except Exception as exc:  # noqa: BLE001  (whatever transformers raises: one clear error at start-up)
        reason = " ".join(str(exc).split())[:300] or "no message"
        raise ValueError(
            f"{key}={name!r} cannot be loaded as a tokenizer ({type(exc).__name__}: {reason}); set it to the served "
            "model's folder or hub id, or to null to count trace budgets in UTF-8 bytes"
        ) from exc


def byte_budget_warning(settings: JudgeSettings) -> str:
    """The start-up warning of a judge that counts trace budgets in UTF-8 bytes (no tokenizer)."""
    budget = settings.max_trace_tokens
    tokens = int(float(f"{budget / 4:.2g}"))  # English text: about 4 bytes a token
    return (
        f"judge: no tokenizer for the served model {settings.options.model_path!r} (set reward.arena.judge.tokenizer / "
        f"JUDGE_TOKENIZER): traces are cut at {budget} UTF-8 bytes, about {tokens} tokens, not max_trace_tokens="
        f"{budget} tokens"
    )


def looks_local(name: str) -> bool:
    """A path rather than a hub id (``org/name``): absolute, ``./``, ``../``, ``~``, or there on disk."""
    return name.startswith(("/", ".", "~")) or os.path.exists(name)


def _local_tokenizer(name: str | None):
    """The served model's tokenizer when it is on this machine (a model folder, or a hub id already in the local
    cache; nothing is downloaded), else None."""
    if not name:
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:  # noqa: BLE001  (not local, or not a tokenizer: the byte count, with the start-up warning)
        return None
