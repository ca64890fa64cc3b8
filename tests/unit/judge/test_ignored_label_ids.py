"""A served judge whose server ignores logprob_token_ids (vLLM 0.24's chat endpoint drops the field without an error):
the openai judge notices from the reply (it lacks the label tokens asked for), says so once, reads the top 20 from
then on, and counts a call whose labels are missing from them in the low-mass counter (JudgeStats.low_mass). Scripted
replies, no server."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from arena_verl.core.judge_protocol import Trace
from arena_verl.judge.backends.openai_backend import OpenAIJudge, label_ids_answered
from arena_verl.judge.verdicts.label_probs import PartialProbabilities, is_low_mass, pairwise_targets, read_labels
from arena_verl.settings import judge_settings
from arena_verl.testing.toy import build_toy_tokenizer

SETTINGS = dict(backend="openai", base_url="http://judge.invalid:8000/v1", model_path="judge", verdict="probability",
                timeout_s=2.0, retries=0, backoff_s=0.0, parse_retries=0, low_mass_floor=0.1)  # fmt: skip
JUNK = [f"x{i}" for i in range(19)]  # tokens that spell no label


def body(entries):
    """A chat completion whose first token has these ``(text, probability)`` top log-probabilities."""
    top = [{"token": text, "logprob": math.log(p) if p > 0 else -9999.0} for text, p in entries]
    return {"choices": [{"message": {"role": "assistant", "content": entries[0][0]},
                         "logprobs": {"content": [{**top[0], "top_logprobs": top}]}}]}  # fmt: skip


def top20_without_b(_payload):
    """What vLLM 0.24 answers: its top 20, whatever ids were asked for; B and TIE are not among them, and the tail is
    flat enough (2% each) that their mass could matter."""
    return body([("A", 0.5), *((text, 0.02) for text in JUNK)])


def top20_with_every_label(_payload):
    return body([("A", 0.6), ("B", 0.3), ("TIE", 0.05), *((text, 0.0025) for text in JUNK[:17])])


class ScriptedServer(OpenAIJudge):
    """The openai judge with its HTTP request replaced by scripted replies (a reply may read the request)."""

    def __init__(self, tokenizer, replies, **settings):
        super().__init__(judge_settings(**{**SETTINGS, "tokenizer": str(tokenizer), **settings}))
        self.replies = list(replies)
        self.payloads = []

    async def _post(self, payload, group=None):
        self.payloads.append(payload)
        return self.replies.pop(0)(payload)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return build_toy_tokenizer(tmp_path_factory.mktemp("tok") / "tok")


def compare_all(judge, times):
    async def scenario():
        return [await judge.compare("p", Trace("a"), Trace("b")) for _ in range(times)]

    return asyncio.run(scenario())


def test_ignored_label_ids_are_noticed_said_once_and_missing_labels_count_as_low_mass(tokenizer, caplog):
    judge = ScriptedServer(tokenizer, [top20_without_b, top20_with_every_label, top20_without_b])
    with caplog.at_level(logging.WARNING, logger="arena_verl.judge.backends.openai_backend"):
        outcomes = compare_all(judge, 3)
    assert outcomes[0] == 1.0 and outcomes[2] == 1.0  # A alone among the labels listed: its verdict stands
    assert outcomes[1] == pytest.approx((0.6 + 0.025) / 0.95)
    assert "logprob_token_ids" in judge.payloads[0]  # asked for the label ids ...
    assert all("logprob_token_ids" not in p for p in judge.payloads[1:])  # ... and not again once they were ignored
    assert not judge.send_label_ids
    warnings = [r.getMessage() for r in caplog.records if "ignored logprob_token_ids" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per run
    assert "top 20" in warnings[0] and "low-mass" in warnings[0]
    # Calls 1 and 3 lack B and TIE from a top 20 whose tail (2% a token) could hold them: low-mass. Call 2 has every
    # label: not low-mass (its labels hold 95%).
    assert (judge.stats.calls, judge.stats.failures, judge.stats.low_mass) == (3, 0, 2)


def test_a_server_that_answers_the_label_ids_keeps_being_asked(tokenizer, caplog):
    def every_label_asked(payload):  # vLLM >= 0.31: every token asked for is listed
        texts = [judge.vocabulary.texts[i] for i in payload["logprob_token_ids"]]
        return body([("A", 0.9)] + [(text, 0.0) for text in texts if text != "A"])

    judge = ScriptedServer(tokenizer, [every_label_asked, every_label_asked])
    with caplog.at_level(logging.WARNING, logger="arena_verl.judge.backends.openai_backend"):
        assert compare_all(judge, 2) == [1.0, 1.0]
    assert judge.send_label_ids and all("logprob_token_ids" in p for p in judge.payloads)
    assert not [r for r in caplog.records if "ignored" in r.getMessage()]
    assert judge.stats.low_mass == 0  # B has no mass, and we know it


def test_the_answer_check_counts_entries_and_compares_texts_without_spaces(tokenizer):
    judge = ScriptedServer(tokenizer, [])
    asked = list(judge.vocabulary.token_ids(pairwise_targets()))
    texts = [judge.vocabulary.texts[i] for i in asked]
    assert not label_ids_answered(judge.vocabulary, asked, top20_without_b(None))
    spaced = body([(" " + text.strip(), 0.01) for text in texts])  # a detokeniser that adds a leading space
    assert label_ids_answered(judge.vocabulary, asked, spaced)
    many = body([(f"y{i}", 0.01) for i in range(30)])  # more entries than a top-20 reply has: the ids were answered
    assert label_ids_answered(judge.vocabulary, asked, many)


def test_a_partial_read_is_incomplete_only_when_a_missing_label_could_matter():
    flat = PartialProbabilities({"A": 0.5, **{text: 0.02 for text in JUNK}})
    assert flat.bound == pytest.approx(0.02)
    steep = PartialProbabilities({"A": 0.9, "B": 0.09, **{text: 0.0005 for text in JUNK}})
    assert steep.bound == pytest.approx(0.0005)  # the least listed: a missing TIE has less than that

    async def reading(probabilities):
        async def read(continuation, targets):
            return probabilities

        return await read_labels(read, "[[", pairwise_targets())

    flat_reading, steep_reading = asyncio.run(reading(flat)), asyncio.run(reading(steep))
    assert flat_reading.incomplete and is_low_mass(flat_reading, 0.1)
    assert not steep_reading.incomplete and not is_low_mass(steep_reading, 0.1)
    full = asyncio.run(reading({"A": 0.5, **{text: 0.02 for text in JUNK}}))  # every token, as the ids asked for
    assert not full.incomplete and not is_low_mass(full, 0.1)
