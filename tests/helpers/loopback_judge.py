"""A loopback OpenAI-compatible judge server of the tests' own: NOT a model. It stands where `vllm serve` stands for
the recipes' `serve` placement (the readiness probe's ``GET /v1/models`` and the openai judge's
``POST /v1/chat/completions``, both behind ``--api-key``), and answers every pairwise prompt with a short reasoning
line and a parser-valid verdict, ``[[A]]`` or ``[[B]]``: the attempt whose text has the larger SHA-256 (a fixed
total order over traces, so a group's verdicts are transitive and its fitted strengths distinct; a seeded coin when
the prompt does not show two attempts). It counts what it was asked."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .verl_dumps import send_json

# The pairwise templates show each attempt between tags of one name: "## Attempt A\n<tag>\n...\n</tag>".
_ATTEMPT = re.compile(r"## Attempt ([AB])\n<([^>\n]+)>\n(.*?)\n</\2>", re.DOTALL)


class LoopbackJudge:
    """``with LoopbackJudge(api_key="k") as judge: judge.url`` (``http://127.0.0.1:PORT/v1``)."""

    served_name = "judge"

    def __init__(
        self,
        api_key: str | None = None,
        seed: int = 0,
        port: int = 0,
        calls_log: str | None = None,
        control: str | None = None,
    ):
        self.api_key = api_key
        # In a process of its own (JudgeProcess): one line per answer in calls_log, and the seconds to wait before
        # each answer read from the JSON file control ({"delay_s": 6}) at every request.
        self.calls_log = calls_log
        self.control = control
        self.calls = 0  # chat completions answered
        self.refused = 0  # requests without the key
        self.prompts: list[str] = []
        self.coin_flips = 0  # prompts without two attempts the order could read
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LoopbackJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _authorised(self, handler) -> bool:
        if self.api_key is None or handler.headers.get("Authorization") == f"Bearer {self.api_key}":
            return True
        with self._lock:
            self.refused += 1
        handler.send_error(401, "invalid API key")
        return False

    def _verdict(self, prompt: str) -> dict:
        with self._lock:
            self.calls += 1
            self.prompts.append(prompt)
            attempts = {label: text for label, _, text in _ATTEMPT.findall(prompt)}
            if set(attempts) == {"A", "B"}:
                rank = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in attempts.items()}
                label = "A" if rank["A"] > rank["B"] else "B"
            else:
                self.coin_flips += 1
                label = self._rng.choice("AB")
        if self.calls_log:
            with self._lock, open(self.calls_log, "a") as log:
                log.write(json.dumps({"label": label, "coin": set(attempts) != {"A", "B"}, "t": time.time()}) + "\n")
        content = f"Both traces reach the same answer; {label} argues it more carefully.\n[[{label}]]"
        return {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
        }

    def _control(self) -> dict:
        if not self.control:
            return {}
        try:
            with open(self.control) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def _logged_answers(self) -> int:
        """Answers in ``calls_log``; the caller holds ``_lock``."""
        if not os.path.exists(self.calls_log):  # nothing answered yet
            return 0
        with open(self.calls_log) as log:
            return sum(1 for _ in log)

    def _die_once_answered(self, count: int) -> None:
        """Exit at once (as a killed server: no answer, every connection reset) when ``count`` answers are logged, and
        say when in ``calls_log.deaths``. Under the lock that logs answers, and exiting while holding it: no answer is
        logged after the death's time (another request's answer is logged before it or never, and is sent only once
        logged), so the answers up to the death's time are all a client could have received."""
        with self._lock:
            answered = self._logged_answers()
            if answered < count:
                return
            with open(self.calls_log + ".deaths", "a") as deaths:  # what a test may assert from
                deaths.write(json.dumps({"t": time.time(), "answers": answered}) + "\n")
            os._exit(137)

    def _handler(self):
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the test reads the counters
                pass

            def do_GET(self):
                if not judge._authorised(self):
                    return
                if self.path.rstrip("/") != "/v1/models":
                    self.send_error(404)
                    return
                send_json(self, {"object": "list", "data": [{"id": judge.served_name, "object": "model"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not judge._authorised(self):
                    return
                if self.path != "/v1/chat/completions" or body.get("model") != judge.served_name:
                    self.send_error(404)
                    return
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                if judge.calls_log:  # a request received: in flight until its answer is logged
                    with judge._lock, open(judge.calls_log + ".started", "a") as started:
                        started.write("1\n")
                control = judge._control()
                die_after = control.get("die_after_calls")
                if die_after is not None and judge.calls_log:
                    judge._die_once_answered(die_after)
                delay = float(control.get("delay_s") or 0.0)
                if delay:
                    time.sleep(delay)  # a slow judge: the client may have given up meanwhile
                if control.get("hang"):  # accepts, never answers: until the control says otherwise, then hangs up
                    while judge._control().get("hang"):
                        time.sleep(0.2)
                    self.close_connection = True
                    return
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    if control.get("garbage"):
                        _send_garbage(self, control["garbage"])
                    else:
                        send_json(self, judge._verdict(prompt))

        return Handler


# What a judge answers after a bad deploy (the control's "garbage"): unreadable text, a JSON body cut short, an HTTP
# 500 with a web server's HTML page.
GARBAGE = {
    "text": (200, "text/plain", b"the model is having a bad day; please try again later"),
    "json": (200, "application/json", b'{"id": "x", "choices": [{"message": {"content": "[[A'),
    "html500": (500, "text/html", b"<html><head><title>500 Internal Server Error</title></head><body><h1>Internal "
                b"Server Error</h1></body></html>"),
}  # fmt: skip


def _send_garbage(handler, kind: str) -> None:
    status, content_type, body = GARBAGE[kind]
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def serve(argv: list[str] | None = None) -> None:
    """``serve --port P --api-key K --calls-log F --control F``: run until killed (JudgeProcess starts it); prints the
    address it listens on."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--api-key")
    parser.add_argument("--calls-log")
    parser.add_argument("--control")
    args = parser.parse_args(argv)
    judge = LoopbackJudge(api_key=args.api_key, port=args.port, calls_log=args.calls_log, control=args.control)
    print(judge.url, flush=True)
    judge._server.serve_forever()
