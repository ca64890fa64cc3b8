"""verdict: probability through the model judges' shared code (a scripted backend: no model), the openai client
against a loopback HTTP server of the test's own that answers log-probabilities (NOT a model), and the vLLM
backend's request and parsing code on fake engine outputs."""

import asyncio
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from arena_verl.core.judge_protocol import Reply, Trace
from arena_verl.judge.backends.model_judge import ModelJudge, PermanentJudgeError
from arena_verl.judge.backends.openai_backend import OpenAIJudge, top_logprobs_by_text
from arena_verl.judge.backends.vllm_backend import TOP_LOGPROBS, first_token_logprobs, label_sampling_kwargs
from arena_verl.settings import judge_settings
from arena_verl.testing.toy import build_toy_tokenizer

FAST = dict(timeout_s=2.0, retries=1, backoff_s=0.0, parse_retries=1, verdict="probability")


class ScriptedProbabilities(ModelJudge):
    """ModelJudge whose reads answer from a table {continuation: {token: probability}} (an exception: raised)."""

    name = "scripted"

    def __init__(self, reads, replies=(), **settings):
        super().__init__(judge_settings(**{**FAST, **settings}))
        self.reads = reads
        self.replies = list(replies)
        self.asked = []
        self.temperatures = []

    async def _generate(self, messages, temperature, group=None):
        self.temperatures.append(temperature)
        return self.replies.pop(0)

    async def _next_token_probs(self, messages, continuation, targets, group=None):
        self.asked.append((messages[-1]["content"][-40:], continuation))
        answer = self.reads[continuation]
        if isinstance(answer, list):  # one answer per read, in turn
            answer = answer.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if answer == "hang":
            await asyncio.sleep(60)
        return answer


def compare(judge, **kwargs):
    return asyncio.run(judge.compare("p", Trace("first"), Trace("second"), **kwargs))


def test_the_outcome_is_the_renormalised_probability_of_the_first_with_ties_split():
    judge = ScriptedProbabilities({"[[": {"A": 0.5, " A": 0.1, "B": 0.2, "TIE": 0.1, "The": 0.1}})
    assert compare(judge) == pytest.approx((0.6 + 0.05) / 0.9)
    assert judge.asked[0][1] == "[["  # the turn is continued right where the verdict token goes
    assert (judge.stats.calls, judge.stats.failures, judge.stats.low_mass, judge.stats.parse_failures) == (1, 0, 0, 0)


def test_low_mass_keeps_its_verdict_and_is_counted():
    judge = ScriptedProbabilities({"[[": {"B": 0.1, "A": 0.05, "Hello": 0.85}}, low_mass_floor=0.5)
    assert compare(judge) == pytest.approx(1 / 3)
    assert judge.stats.low_mass == 1 and judge.stats.failures == 0
    judge = ScriptedProbabilities({"[[": {"B": 0.1, "A": 0.05, "Hello": 0.85}}, low_mass_floor=0.1)
    assert compare(judge) == pytest.approx(1 / 3) and judge.stats.low_mass == 0


def test_zero_label_mass_is_a_call_without_a_verdict():
    judge = ScriptedProbabilities({"[[": {"Hello": 1.0}})
    assert compare(judge) is None
    assert (judge.stats.calls, judge.stats.failures, judge.stats.parse_failures) == (1, 1, 1)
    assert len(judge.asked) == 1  # without reasoning, asking again would read the same distribution


def test_read_errors_are_retried_then_the_call_fails():
    judge = ScriptedProbabilities({"[[": [ConnectionError("reset"), {"B": 1.0}]})
    assert compare(judge) == 0.0 and judge.stats.errors == 1
    judge = ScriptedProbabilities({"[[": [ConnectionError(), ConnectionError()]})
    assert compare(judge) is None and judge.stats.errors == 2 and judge.stats.failures == 1
    judge = ScriptedProbabilities({"[[": [PermanentJudgeError("HTTP 400"), {"A": 1.0}]})
    assert compare(judge) is None and judge.stats.errors == 1
    judge = ScriptedProbabilities({"[[": "hang"}, timeout_s=0.05, retries=0)
    assert compare(judge) is None and judge.stats.errors == 1 and judge.stats.failures == 1


def test_the_pointwise_score_is_the_expected_score():
    reads = {"[[": {"1": 0.5, "0": 0.4, "other": 0.1}, "[[0": {".": 0.5, "]]": 0.5}}
    judge = ScriptedProbabilities(reads)
    assert asyncio.run(judge.score("p", Trace("proof"))) == pytest.approx((0.5 + 0.5 * 0.2) / 0.9)
    assert [c for _, c in judge.asked] == ["[[", "[[0"]


def test_think_first_reasons_then_reads_where_the_verdict_goes():
    reads = {"Attempt A checks its result.\n[[": {"A": 0.3, "B": 0.1}}
    judge = ScriptedProbabilities(reads, replies=["Attempt A checks its result.\n[[A]]"], think_first=True)
    assert compare(judge) == pytest.approx(0.75)
    assert judge.temperatures == [0.0] and judge.stats.low_mass == 1  # 0.4 < the default floor 0.5


def test_think_first_reads_after_a_reasoning_cut_by_the_limit_and_reasons_again_without_mass():
    cut = Reply("<think>A is careful but", truncated=True)
    reads = {"<think>A is careful but\n</think>\n\n[[": {"Hm": 1.0}, "B guesses.\n\n[[": {"A": 0.9, "B": 0.1}}
    judge = ScriptedProbabilities(reads, replies=[cut, "B guesses."], think_first=True)
    assert compare(judge) == pytest.approx(0.9)
    assert judge.temperatures == [0.0, 0.7]  # the re-ask reasons again, hotter
    assert (judge.stats.parse_failures, judge.stats.failures, judge.stats.truncated) == (1, 0, 0)


def test_think_first_never_cuts_a_reasoning_cut_by_the_limit_at_its_verdict_token():
    cut = Reply("Compare...\n[[A]]", truncated=True)  # an echo stopped right after a verdict token
    reads = {"Compare...\n[[A]]\n\n[[": {"B": 1.0}}
    judge = ScriptedProbabilities(reads, replies=[cut], think_first=True)
    assert compare(judge) == 0.0 and judge.asked[0][1] == "Compare...\n[[A]]\n\n[["


def test_a_template_without_tie_reads_no_tie(tmp_path):
    template = tmp_path / "terse.txt"
    template.write_text("{problem}\n<{tag}>\n{first}\n</{tag}>\n<{tag}>\n{second}\n</{tag}>\nReply [[A]] or [[B]].")
    judge = ScriptedProbabilities(
        {"[[": {"A": 0.2, "B": 0.2, "TIE": 0.6}}, pairwise_template=str(template), backend="transformers",
        model_path="m",
    )  # fmt: skip
    assert compare(judge) == pytest.approx(0.5) and judge.stats.low_mass == 1  # TIE is not a label here


def test_generate_mode_is_unchanged():
    judge = ScriptedProbabilities({}, replies=["[[B]]"], verdict="generate")
    assert compare(judge) == 0.0 and judge.asked == []


# -- vLLM: the request and its parsing ----------------------------------------------------------------------------


class NewParams:  # a msgspec-like SamplingParams with the field (vLLM >= the one that added it)
    __struct_fields__ = ("max_tokens", "temperature", "logprobs", "logprob_token_ids")


class OldParams:
    __struct_fields__ = ("max_tokens", "temperature", "logprobs")


def test_vllm_asks_for_the_label_ids_where_it_can_else_the_top_20():
    assert label_sampling_kwargs(NewParams, (5, 7)) == {
        "max_tokens": 1,
        "temperature": 0.0,
        "logprob_token_ids": [5, 7],
    }
    assert label_sampling_kwargs(OldParams, (5, 7)) == {"max_tokens": 1, "temperature": 0.0, "logprobs": TOP_LOGPROBS}
    assert label_sampling_kwargs(NewParams, ())["logprobs"] == TOP_LOGPROBS  # no tokenizer ids: top 20


def test_vllm_output_parsing():
    entry = SimpleNamespace
    output = SimpleNamespace(outputs=[SimpleNamespace(logprobs=[{5: entry(logprob=-0.5), 7: entry(logprob=-2.0),
                                                                  9: entry(logprob=float("nan"))}])])  # fmt: skip
    assert first_token_logprobs(output) == {5: -0.5, 7: -2.0}
    assert first_token_logprobs(SimpleNamespace(outputs=[SimpleNamespace(logprobs=None)])) == {}
    assert first_token_logprobs(SimpleNamespace(outputs=[])) == {} and first_token_logprobs(None) == {}


# -- openai: a loopback server answering log-probabilities --------------------------------------------------------


class LogprobServer:
    """Answers every chat completion with the next scripted ``top_logprobs`` list (or an HTTP status), recording
    the request bodies."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.bodies = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                answer = owner.answers.pop(0)
                if callable(answer):  # an answer made from the request (the label ids it asks for)
                    answer = answer(body)
                if isinstance(answer, tuple):  # (status, text)
                    self.send_response(answer[0])
                    payload = answer[1].encode()
                else:
                    self.send_response(200)
                    top = [{"token": t, "logprob": math.log(p) if p > 0 else -9999.0} for t, p in answer]
                    first = dict(top[0]) if top else {"token": "x", "logprob": -1.0}
                    content = [{**first, "top_logprobs": top}]
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": first["token"]},
                                                       "logprobs": {"content": content},
                                                       "finish_reason": "length"}]}).encode()  # fmt: skip
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def logprob_server():
    servers = []

    def start(answers):
        servers.append(LogprobServer(answers))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def served(url, **settings):
    values = dict(backend="openai", base_url=url, model_path="judge", **FAST)
    return OpenAIJudge(judge_settings(**{**values, **settings}))


def run(judge, call):
    async def scenario():
        try:
            return await call(judge)
        finally:
            await judge.close()

    return asyncio.run(scenario())


def test_openai_continues_the_assistant_turn_and_reads_the_top_logprobs(logprob_server):
    server = logprob_server([[("A", 0.5), (" B", 0.25), ("The", 0.2), ("TI", 0.05)]])
    outcome = run(served(server.url), lambda j: j.compare("p", Trace("a"), Trace("b")))
    assert outcome == pytest.approx((0.5 + 0.025) / 0.8)
    body = server.bodies[0]
    assert body["messages"][-1] == {"role": "assistant", "content": "[["}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
    assert "logprob_token_ids" not in body  # no tokenizer for the served model: its ids are unknown


def test_openai_missing_labels_zero_mass_and_ties(logprob_server):
    server = logprob_server([[("B", 0.05), ("I", 0.9)], [("I", 0.6), ("The", 0.4)], [("TIE", 0.8), ("A", 0.2)]])
    judge = served(server.url)

    async def three(j):
        return [await j.compare("p", Trace("a"), Trace("b")) for _ in range(3)]

    assert run(judge, three) == [0.0, None, pytest.approx(0.6)]  # A missing from the top 20: no mass, not an error
    assert (judge.stats.calls, judge.stats.failures, judge.stats.low_mass, judge.stats.errors) == (3, 1, 1, 0)


def test_openai_pointwise_reads_after_the_zero(logprob_server):
    server = logprob_server([[("0", 0.6), ("1", 0.2)], [(".", 0.5), ("]]", 0.5)]])
    score = run(served(server.url), lambda j: j.score("p", Trace("proof")))
    assert score == pytest.approx((0.2 + 0.5 * 0.3) / 0.8)
    assert [b["messages"][-1]["content"] for b in server.bodies] == ["[[", "[[0"]


def test_openai_asks_for_the_label_ids_with_a_tokenizer_and_stops_when_refused(logprob_server, tmp_path):
    tokenizer = str(build_toy_tokenizer(tmp_path / "tok"))
    refusal = (400, '{"error": "unknown field logprob_token_ids"}')

    def every_label_asked(body):  # a server that honours logprob_token_ids lists every token asked for
        texts = [judge.vocabulary.texts[i] for i in body["logprob_token_ids"]]
        return [("A", 1.0)] + [(text, 0.0) for text in texts if text != "A"]

    server = logprob_server([every_label_asked, refusal, [("B", 1.0)], [("B", 1.0)]])
    judge = served(server.url, tokenizer=tokenizer)

    async def three(j):
        return [await j.compare("p", Trace("a"), Trace("b")) for _ in range(3)]

    assert run(judge, three) == [1.0, 0.0, 0.0]
    ids = server.bodies[0]["logprob_token_ids"]
    texts = {judge.vocabulary.texts[i] for i in ids}
    assert {"A", "B"} <= texts and all(i < len(judge.vocabulary.texts) for i in ids)
    assert "logprob_token_ids" in server.bodies[1] and "logprob_token_ids" not in server.bodies[2]
    assert "logprob_token_ids" not in server.bodies[3] and judge.stats.errors == 0


def test_top_logprobs_parsing_sums_distinct_ids_and_adds_the_sampled_token():
    body = {"choices": [{"logprobs": {"content": [{"token": "A", "logprob": math.log(0.3), "top_logprobs": [
        {"token": " B", "logprob": math.log(0.2)}, {"token": " B", "logprob": math.log(0.1)},
        {"token": "x", "logprob": None}]}]}}]}  # fmt: skip
    parsed = top_logprobs_by_text(body)
    assert parsed == pytest.approx({" B": 0.3, "A": 0.3})
    assert top_logprobs_by_text({"choices": [{"logprobs": None}]}) == {} and top_logprobs_by_text({}) == {}
