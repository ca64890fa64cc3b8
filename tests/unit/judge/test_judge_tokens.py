"""What the judge's engine computed, counted: prompt tokens and prefix-cache hits as a vLLM engine or an
OpenAI-compatible server reports them (garbage left out), each judged trace's tokens once per group, and each call's
own share in the call's record (with its tokens, when the caller asks)."""

import asyncio
from types import SimpleNamespace

import pytest

from arena_verl.core.judge_protocol import CallRecord, Trace, recording_call
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.backends.openai_backend import reported_usage
from arena_verl.judge.backends.vllm_backend import usage
from arena_verl.settings import judge_settings


class Words(ModelJudge):
    """A model judge whose tokenizer counts words; every generation answers [[A]] and reports 30 prompt tokens,
    12 of them cached."""

    name = "words"

    def __init__(self, **settings):
        super().__init__(judge_settings(**{"parse_retries": 0, "retries": 0, **settings}),
                         count_tokens=lambda text: len(text.split()))  # fmt: skip

    async def _generate(self, messages, temperature, group=None):
        self.count_usage(30, 12)
        return "[[A]]"


def test_a_vllm_request_output_gives_its_prompt_length_and_cache_hits():
    assert usage(SimpleNamespace(prompt_token_ids=[1, 2, 3, 4], num_cached_tokens=2)) == (4, 2)
    assert usage(SimpleNamespace(prompt_token_ids=[1, 2], num_cached_tokens=None)) == (2, None)
    assert usage(None) == (None, None)  # aborted before it started


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"usage": {"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 512}}}, (900, 512)),
        ({"usage": {"prompt_tokens": 900, "prompt_tokens_details": None}}, (900, None)),  # vllm serve without details
        ({"usage": {"prompt_tokens": 900}}, (900, None)),
        ({"usage": "lots"}, (None, None)),
        ({}, (None, None)),
        ([1, 2], (None, None)),
    ],
)
def test_a_served_judges_usage_is_read_where_the_reply_has_it(body, expected):
    assert reported_usage(body) == expected


@pytest.mark.parametrize(
    ("prompt", "cached", "expected"),
    [
        (100, 40, (100, 40)),
        (100, None, (100, 0)),
        (100, 500, (100, 100)),  # a cache hit is never above its prompt
        (100, -3, (100, 0)),
        (-1, 5, (0, 0)),
        (True, 1, (0, 0)),
        (12.5, 1, (0, 0)),
        ("100", 1, (0, 0)),
        (None, None, (0, 0)),
    ],
)
def test_engine_counts_that_are_no_counts_are_left_out(prompt, cached, expected):
    judge = Words()
    judge.count_usage(prompt, cached)
    assert (judge.stats.prompt_tokens, judge.stats.cached_tokens) == expected
    assert judge.reports_usage == (expected[0] > 0)


def test_each_trace_is_counted_once_per_group_and_within_the_budget():
    judge = Words(max_trace_tokens=5)
    a, b, c = Trace("one two three"), Trace("a b c d e f g h"), Trace("x y")

    async def calls():
        assert await judge.compare("p", a, b, group="g1") == 1.0
        await judge.compare("p", b, a, group="g1")  # both seen in g1 already
        await judge.compare("p", a, c, group="g1")  # c is new
        await judge.compare("p", a, b, group="g2")  # another group: counted again
        await judge.score("p", c, group="g2")
        await judge.compare("p", a, c)  # no group: every call counts its traces

    asyncio.run(calls())
    g1 = 3 + 5 + 2  # b is cut to the 5-token budget
    g2 = 3 + 5 + 2
    assert judge.stats.trace_tokens == g1 + g2 + 3 + 2
    assert judge.stats.calls == 6 and judge.stats.prompt_tokens == 6 * 30 and judge.stats.cached_tokens == 6 * 12


def test_a_judge_without_a_tokenizer_counts_no_trace_tokens():
    judge = Words()
    judge.count_tokens = None  # budgets in bytes: no token figure
    asyncio.run(judge.compare("p", Trace("one two"), Trace("three"), group="g"))
    assert judge.stats.trace_tokens == 0


def test_each_call_record_gets_its_calls_own_counts_and_token_counts_only_when_its_caller_asks():
    class Prompts(Words):
        async def _generate(self, messages, temperature, group=None):
            self.words = len("\n\n".join(m["content"] for m in messages).split())
            await asyncio.sleep(0)  # the other call runs in between
            return await super()._generate(messages, temperature, group)

    judge = Prompts()

    async def call(record: CallRecord | None):
        if record is not None:
            recording_call(record)
        return await judge.compare("What is 1 + 1?", Trace("two, it is"), Trace("three"))

    async def scenario():
        asked, training = CallRecord(count_tokens=True), CallRecord()  # training's tournament asks for no tokens
        assert await asyncio.gather(call(asked), call(training)) == [1.0, 1.0]  # each in a task of its own
        return asked, training

    asked, training = asyncio.run(scenario())
    assert (asked.prompt_tokens, asked.cached_tokens) == (training.prompt_tokens, training.cached_tokens) == (30, 12)
    assert (judge.stats.prompt_tokens, judge.stats.cached_tokens) == (60, 24)
    assert (asked.tokens_in, asked.tokens_out) == (judge.words, 1)  # the prompt's words; "[[A]]"
    assert (training.tokens_in, training.tokens_out) == (None, None)
    assert asked.low_mass == training.low_mass == 0
    assert asyncio.run(call(None)) == 1.0 and judge.stats.prompt_tokens == 90  # no record: the stats only
