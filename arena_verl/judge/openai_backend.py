"""A judge behind any OpenAI-compatible chat endpoint: ``vllm serve``, SGLang, a hosted API, or verl's own
reward-model router (``reward.reward_model.*`` hands the manager its address). One aiohttp session per judge, so
connections are reused; the connection pool is capped at the judge's concurrency."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from arena_verl.judge.base import Reply
from arena_verl.judge.endpoint import Endpoint
from arena_verl.judge.hygiene import special_token_strings
from arena_verl.judge.model_judge import ModelJudge, PermanentJudgeError
from arena_verl.settings import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = ["OpenAIJudge", "judge_tokenizer", "byte_budget_warning"]


class OpenAIJudge(ModelJudge):
    name = "openai"

    def __init__(self, settings: JudgeSettings):
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
        self.endpoint = Endpoint(settings.base_url, settings.base_url_file)
        self.api_key = os.environ.get(settings.api_key_env, "")
        self._session = None

    async def _client(self):
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.settings.max_concurrency),
                headers={"Authorization": f"Bearer {self.api_key}"} if self.api_key else {},
            )
        return self._session

    async def _generate(self, messages: list[dict], temperature: float) -> str:
        payload = {
            "model": self.settings.model_path,
            "messages": messages,
            "temperature": temperature,
            "top_p": self.settings.top_p,
            "max_tokens": self.settings.max_new_tokens,
        }
        session = await self._client()
        url = self.endpoint.url
        async with session.post(url, json=payload) as response:
            if response.status in (400, 401, 403, 404, 422):
                raise PermanentJudgeError(f"HTTP {response.status} from {url}: {(await response.text())[:300]}")
            response.raise_for_status()  # 429 and 5xx: transient, retried
            body = await response.json()
        choice = body["choices"][0]
        # Servers with a reasoning parser return the reasoning separately; the verdict is in the content.
        return Reply(choice["message"].get("content") or "", truncated=choice.get("finish_reason") == "length")

    @property
    def url(self) -> str:
        return self.endpoint.url

    def _after_transient_error(self, exc: BaseException) -> None:
        # A refused connection, a reset or a timeout may mean the judge job moved: its URL file says where to.
        self.endpoint.refresh()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def judge_tokenizer(settings: JudgeSettings):
    """The tokenizer that counts trace tokens for a served judge, or None (budgets in UTF-8 bytes).

    ``settings.tokenizer`` when set: a local folder or a hub id, loaded as any ``from_pretrained`` (a hub id may be
    downloaded); one that cannot be loaded is a ``ValueError`` naming the key, never a silent byte count. Unset: the
    served model's own tokenizer when ``model_path`` is a folder on this machine or a hub id already in the local
    cache (nothing is downloaded), else None.
    """
    name = settings.tokenizer
    if not name:
        return _local_tokenizer(settings.model_path)
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
        f"judge: no tokenizer for the served model {settings.model_path!r} (set reward.arena.judge.tokenizer / "
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
