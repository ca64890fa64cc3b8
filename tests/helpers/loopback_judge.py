"""A loopback OpenAI-compatible judge server of the tests' own: NOT a model. It stands where `vllm serve` stands for
the recipes' `serve` placement (the readiness probe's ``GET /v1/models`` and the openai judge's
``POST /v1/chat/completions``, both behind ``--api-key``), and answers every pairwise prompt with a short reasoning
line and a parser-valid verdict, ``[[A]]`` or ``[[B]]``: the attempt whose text has the larger SHA-256 (a fixed
total order over traces, so a group's verdicts are transitive and its fitted strengths distinct; a seeded coin when
the prompt does not show two attempts). It counts what it was asked."""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .verl_dumps import send_json

# The pairwise templates show each attempt between tags of one name: "## Attempt A\n<tag>\n...\n</tag>".
_ATTEMPT = re.compile(r"## Attempt ([AB])\n<([^>\n]+)>\n(.*?)\n</\2>", re.DOTALL)


class LoopbackJudge:
    """``with LoopbackJudge(api_key="k") as judge: judge.url`` (``http://127.0.0.1:PORT/v1``)."""

    served_name = "judge"

    def __init__(self, api_key: str | None = None, seed: int = 0):
        self.api_key = api_key
        self.calls = 0  # chat completions answered
        self.refused = 0  # requests without the key
        self.prompts: list[str] = []
        self.coin_flips = 0  # prompts without two attempts the order could read
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
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
        content = f"Both traces reach the same answer; {label} argues it more carefully.\n[[{label}]]"
        return {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
        }

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
                send_json(self, judge._verdict(prompt))

        return Handler
