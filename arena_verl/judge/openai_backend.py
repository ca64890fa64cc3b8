"""A judge behind any OpenAI-compatible chat endpoint: ``vllm serve``, SGLang, a hosted API, or verl's own
reward-model router (``reward.reward_model.*`` hands the manager its address). One aiohttp session per judge, so
connections are reused; the connection pool is capped at the judge's concurrency."""

from __future__ import annotations

import logging
import os

from ..settings import JudgeSettings
from .base import Reply
from .model_judge import ModelJudge, PermanentJudgeError
from .prompts import special_token_strings

logger = logging.getLogger(__name__)

__all__ = ["OpenAIJudge"]


class OpenAIJudge(ModelJudge):
    name = "openai"

    def __init__(self, settings: JudgeSettings):
        tokenizer = _local_tokenizer(settings.model_path)
        if tokenizer is None:
            logger.info(
                "openai judge: no local tokenizer for %r; trace budgets are counted in UTF-8 bytes (safe for any "
                "script, about 4x fewer English tokens than max_trace_tokens)",
                settings.model_path,
            )
            super().__init__(settings)
        else:
            super().__init__(
                settings,
                count_tokens=lambda text: len(tokenizer.encode(text)),
                special_tokens=special_token_strings(tokenizer),
            )
        base = settings.base_url.rstrip("/")
        self.url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
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
        async with session.post(self.url, json=payload) as response:
            if response.status in (400, 401, 403, 404, 422):
                raise PermanentJudgeError(f"HTTP {response.status} from {self.url}: {(await response.text())[:300]}")
            response.raise_for_status()  # 429 and 5xx: transient, retried
            body = await response.json()
        choice = body["choices"][0]
        # Servers with a reasoning parser return the reasoning separately; the verdict is in the content.
        return Reply(choice["message"].get("content") or "", truncated=choice.get("finish_reason") == "length")

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def _local_tokenizer(name: str | None):
    """The served model's tokenizer when it is on this machine (a model folder, or a hub id already in the local
    cache; nothing is downloaded), else None."""
    if not name:
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:  # noqa: BLE001  (not local, or not a tokenizer: the byte count is the safe fallback)
        return None
