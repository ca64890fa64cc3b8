"""Model-backed judges: the shared retry/parse/failure logic, the openai client against a scripted HTTP server, and
real generation with a tiny RANDOM-weight model through the transformers backend inside the referee's Ray actor.
Random weights give unparsable verdicts: these tests check plumbing and failure accounting, not judging."""

import asyncio
import dataclasses

import pytest
import ray
from aiohttp import web

from arena_verl.core.names import FALLBACK_JUDGE_ERROR
from arena_verl.judge import Trace
from arena_verl.judge.backends.model_judge import ModelJudge, PermanentJudgeError
from arena_verl.judge.backends.openai_backend import OpenAIJudge
from arena_verl.settings import arena_settings, judge_settings
from arena_verl.testing.toy import build_toy_model
from helpers.ray_local import local_ray

FAST = dict(timeout_s=2.0, retries=2, backoff_s=0.0, parse_retries=1)


class ScriptedJudge(ModelJudge):
    """ModelJudge with canned generations (tests the shared logic, not a model)."""

    name = "scripted"

    def __init__(self, replies, **settings):
        super().__init__(judge_settings(**{**FAST, **settings}))
        self.replies = list(replies)
        self.temperatures = []

    async def _generate(self, messages, temperature, group=None):
        self.temperatures.append(temperature)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "hang":
            await asyncio.sleep(60)
        return reply


def compare(judge):
    return asyncio.run(judge.compare("p", Trace("first"), Trace("second")))


def test_verdicts_map_to_outcomes_for_the_trace_shown_first():
    assert compare(ScriptedJudge(["A is better\n[[A]]"])) == 1.0
    assert compare(ScriptedJudge(["[[B]]"])) == 0.0
    assert compare(ScriptedJudge(["[[TIE]]"])) == 0.5
    assert asyncio.run(ScriptedJudge(["[[0.5]]"]).score("p", Trace("t"))) == 0.5


def test_unparsable_verdict_is_asked_again_hotter_then_counted_never_a_win():
    judge = ScriptedJudge(["I like A", "still no verdict"])
    assert compare(judge) is None
    assert judge.temperatures == [0.0, 0.7]
    assert (judge.stats.calls, judge.stats.parse_failures, judge.stats.failures) == (1, 2, 1)
    judge = ScriptedJudge(["no verdict", "[[B]]"])
    assert compare(judge) == 0.0 and judge.stats.failures == 0


def test_transient_errors_are_retried_permanent_ones_are_not():
    judge = ScriptedJudge([ConnectionError("reset"), "hang", "[[A]]"], timeout_s=0.05)
    assert compare(judge) == 1.0 and judge.stats.errors == 2
    judge = ScriptedJudge([PermanentJudgeError("HTTP 401"), "[[A]]"])
    assert compare(judge) is None and judge.stats.errors == 1 and judge.replies == ["[[A]]"]
    judge = ScriptedJudge([ConnectionError()] * 3, parse_retries=0)
    assert compare(judge) is None and judge.stats.failures == 1


def test_reference_is_shown_only_when_configured():
    seen = []

    class Capturing(ScriptedJudge):
        async def _generate(self, messages, temperature, group=None):
            seen.append(messages[0]["content"])
            return "[[A]]"

    asyncio.run(Capturing([]).compare("p", Trace("a"), Trace("b"), reference="42"))
    asyncio.run(Capturing([], show_reference=True).compare("p", Trace("a"), Trace("b"), reference="42"))
    assert "Reference answer" not in seen[0] and "Reference answer" in seen[1]


@pytest.fixture
def scripted_server():
    """A scripted OpenAI-compatible HTTP server on loopback: answers from a queue of (status, content)."""
    state = {"queue": [], "requests": [], "connections": set()}

    async def chat(request):
        state["requests"].append(await request.json())
        state["connections"].add(request.transport.get_extra_info("peername"))
        status, content = state["queue"].pop(0)
        if status != 200:
            return web.Response(status=status, text="scripted error")
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": content}}]})

    async def start():
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, site._server.sockets[0].getsockname()[1]

    return state, start


def test_openai_client_retries_5xx_stops_on_4xx_and_reuses_connections(scripted_server):
    state, start = scripted_server

    async def scenario():
        runner, port = await start()
        settings = judge_settings(backend="openai", base_url=f"http://127.0.0.1:{port}/v1", model_path="judge", **FAST)
        judge = OpenAIJudge(settings)
        try:
            state["queue"] += [(503, ""), (200, "[[B]]")]
            first = await judge.compare("p", Trace("a"), Trace("b"))
            state["queue"] += [(200, "[[A]]")] * 4
            more = [await judge.compare("p", Trace("a"), Trace("b")) for _ in range(4)]
            state["queue"] += [(401, "")]
            denied = await judge.compare("p", Trace("a"), Trace("b"))
        finally:
            await judge.close()
            await runner.cleanup()
        return first, more, denied, judge

    first, more, denied, judge = asyncio.run(scenario())
    assert first == 0.0 and more == [1.0] * 4 and denied is None
    assert state["requests"][0]["model"] == "judge" and state["requests"][0]["messages"][0]["role"] == "user"
    assert len(state["connections"]) == 1  # one kept-alive connection served every sequential call
    assert judge.stats.errors == 2 and judge.stats.failures == 1


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory):
    return build_toy_model(tmp_path_factory.mktemp("toy-model"))


def test_transformers_judge_generates_inside_the_referee_actor(toy_model):
    from arena_verl.actors.referee_actor import RefereeActor
    from arena_verl.core.referee import Submission

    judge = judge_settings(backend="transformers", model_path=str(toy_model), max_new_tokens=8, **FAST)
    settings = dataclasses.replace(arena_settings(group_size=4, referee_name="tf-referee"), judge=judge)
    with local_ray():
        actor = ray.remote(RefereeActor).options(max_concurrency=100).remote(settings)
        assert ray.get(actor.judge_backend.remote()) == "transformers"
        subs = [Submission("g", str(i), "What is 2+2?", Trace(f"attempt {i}: \\boxed{{4}}"), 1.0) for i in range(4)]
        verdicts = ray.get([actor.submit.remote(s) for s in subs], timeout=600)
        metrics = ray.get(actor.metrics.remote())
        stats = ray.get(actor.judge_stats.remote())
    # Random weights never write a verdict: every call fails after its re-ask and is counted; no verdict reaches the
    # fit, so the group keeps its verifier rewards as a counted judge_error fallback.
    assert all(v.judge_calls == 6 and v.judge_failures == 6 and v.fallback == FALLBACK_JUDGE_ERROR for v in verdicts)
    assert all(v.reward == pytest.approx(1.0) for v in verdicts)
    assert metrics["arena/judge_failures"] == 6 and metrics["arena/simulated_judge"] == 0.0
    # 12 real generations; most are cut at max_new_tokens=8 (random weights seldom say eos) and count as no verdict
    truncated = stats.pop("truncated")
    assert stats.pop("trace_tokens") > 0  # the group's traces, counted with the judge's tokenizer
    # The transformers judge runs its model itself: no engine reports prompt or cached tokens.
    assert stats.pop("prompt_tokens") == stats.pop("cached_tokens") == 0
    assert stats == {"calls": 6, "failures": 6, "parse_failures": 12, "errors": 0, "low_mass": 0, "rerouted": 0}
    assert 0 < truncated <= 12


def test_transformers_reads_verdict_probabilities_from_one_forward_pass(toy_model):
    """verdict: probability on the tiny RANDOM-weight model: the label probabilities are the softmax of the last
    position's logits (a direct torch computation of the same prompt), renormalised over the label tokens."""
    import torch

    from arena_verl.judge.backends.transformers_backend import TransformersJudge, render_chat
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.verdicts.label_probs import pairwise_targets

    judge = TransformersJudge(judge_settings(backend="transformers", model_path=str(toy_model), verdict="probability",
                                            low_mass_floor=0.5, **{**FAST, "parse_retries": 0}))  # fmt: skip
    messages = build_pairwise_messages("What is 2+2?", "x = 4", "4", delimiter="trace-0123456789abcdef")
    targets = pairwise_targets()
    probabilities = asyncio.run(judge._next_token_probs(messages, "[[", targets))

    prompt = render_chat(judge.tokenizer, messages, "[[")
    assert prompt == render_chat(judge.tokenizer, messages) + "[["  # the generation prompt, then the open turn
    with torch.inference_mode():
        logits = judge.model(**judge.tokenizer(prompt, return_tensors="pt")).logits[0, -1]
    direct = torch.softmax(logits.double(), dim=-1)
    ids = judge.vocabulary.token_ids(targets)
    assert ids and {judge.vocabulary.texts[i] for i in ids} >= {"A", "B"}
    expected = {}
    for i in ids:
        expected[judge.vocabulary.texts[i]] = expected.get(judge.vocabulary.texts[i], 0.0) + float(direct[i])
    assert probabilities == pytest.approx(expected, rel=1e-4)

    judge.delimiter = lambda group: "trace-0123456789abcdef"  # the same prompt as above
    outcome = asyncio.run(judge.compare("What is 2+2?", Trace("x = 4"), Trace("4")))
    mass = {1.0: 0.0, 0.0: 0.0, 0.5: 0.0}
    for text, p in probabilities.items():
        key = text.strip().upper()
        mass[1.0 if key.startswith("A") else 0.0 if key.startswith("B") else 0.5] += p
    assert outcome == pytest.approx((mass[1.0] + mass[0.5] / 2) / sum(mass.values()), rel=1e-4)
    assert (judge.stats.calls, judge.stats.failures, judge.stats.parse_failures) == (1, 0, 0)
    # Random weights spread their mass over the whole vocabulary: far below the floor, counted, the verdict kept.
    assert sum(mass.values()) < 0.5 and judge.stats.low_mass == 1
