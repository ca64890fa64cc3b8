"""Is an OpenAI-compatible judge server up, and will it take our key? The recipes' readiness probe.

``python -m arena_verl.judge.probe URL [--api-key-env OPENAI_API_KEY] [--timeout S] [--expect-model NAME]``

``GET`` the server's model list (``URL/models`` when ``URL`` ends in ``/v1``, else ``URL/v1/models``: the address
the ``openai`` judge backend derives from the same ``base_url``), then ``POST`` one chat request of one token to the
model (``--expect-model``, else the first listed): a server that lists its models but hangs, fails or answers
garbage on chat is not ready. ``Authorization: Bearer <key>`` when the variable named by ``--api-key-env`` is set.
Environment proxies are not used (the judge's aiohttp client does not use them either). Exit status:

- 0: it answers with a model list and a chat answer; the served model names are printed on stdout, one a line;
- 1: it does not answer yet (connection refused or reset, timeout, a name that does not resolve, HTTP 5xx, a chat
  request that hangs past ``--timeout`` or gets no chat answer); one line on stderr says why. Waiting may help;
- 2: it answers and never will accept this run: the key is refused (HTTP 401/403), it is not an OpenAI-compatible
  server (another HTTP status, not a JSON model list), TLS fails, or ``--expect-model`` is not among its models.
  One line on stderr says what to fix. Waiting will not help.

Standard library only, so a shell loop can call it every few seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from arena_verl.core.urls import CHAT_COMPLETIONS, request_url

__all__ = ["UP", "NOT_YET", "NEVER", "ProbeResult", "models_url", "probe", "main"]

UP, NOT_YET, NEVER = 0, 1, 2
_MAX_BODY = 1 << 20  # a model list is a few KiB


class ProbeResult:
    """What :func:`probe` found: ``code`` (``UP``, ``NOT_YET``, ``NEVER``), the served ``models``, a ``message``."""

    def __init__(self, code: int, message: str = "", models: tuple[str, ...] = ()):
        self.code, self.message, self.models = code, message, tuple(models)

    def __repr__(self) -> str:
        return f"ProbeResult(code={self.code}, models={self.models!r}, message={self.message!r})"


def models_url(base_url: str) -> str:
    """The model list of the server the ``openai`` judge reaches at ``base_url`` (the one URL rule,
    :func:`arena_verl.core.urls.request_url`)."""
    return request_url(base_url, "/v1/models")


def probe(
    base_url: str, api_key: str | None = None, timeout: float = 5.0, expect_model: str | None = None,
    key_source: str = "OPENAI_API_KEY",
) -> ProbeResult:  # fmt: skip
    """Ask the server at ``base_url`` for its models (see the module docstring for the outcomes)."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ProbeResult(NEVER, f"the judge URL {base_url!r} is not an http(s) address (http://host:port/v1)")
    url = models_url(base_url)
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            status, body = response.status, response.read(_MAX_BODY)
    except urllib.error.HTTPError as exc:
        return _http_error(base_url, url, exc.code, bool(api_key), key_source)
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ssl.SSLError):
            return ProbeResult(NEVER, f"the judge at {base_url} fails TLS: {reason}")
        return ProbeResult(NOT_YET, f"the judge at {base_url} does not answer yet: {reason}")
    except ssl.SSLError as exc:
        return ProbeResult(NEVER, f"the judge at {base_url} fails TLS: {exc}")
    except (TimeoutError, ConnectionError) as exc:  # a timeout or reset while reading the answer
        return ProbeResult(NOT_YET, f"the judge at {base_url} does not answer yet: {exc!r}")
    except http.client.HTTPException as exc:  # not HTTP at all (BadStatusLine, ...)
        return ProbeResult(NEVER, f"the judge at {base_url} is not an HTTP server: GET {url} gave {exc!r}")
    except OSError as exc:
        return ProbeResult(NOT_YET, f"the judge at {base_url} does not answer yet: {exc!r}")
    if status != 200:  # 2xx other than 200, or a 3xx not followed
        return _http_error(base_url, url, status, bool(api_key), key_source)
    models = _model_names(body)
    if models is None:
        snippet = body[:120].decode("utf-8", "replace").replace("\n", " ")
        return ProbeResult(
            NEVER, f"the judge at {base_url} is not an OpenAI-compatible server: GET {url} gave no model list "
            f"({snippet!r})"
        )  # fmt: skip
    if not models:
        return ProbeResult(NEVER, f"the judge at {base_url} serves no model (GET {url} gave an empty list)")
    if expect_model is not None and expect_model not in models:
        return ProbeResult(
            NEVER, f"the judge at {base_url} does not serve {expect_model!r}; it serves {', '.join(models)} "
            "(vllm serve --served-model-name, JUDGE_SERVED_NAME)",
            models,
        )  # fmt: skip
    chat = _chat(base_url, expect_model or models[0], api_key, timeout, key_source)
    return chat if chat is not None else ProbeResult(UP, "", models)


def _chat(base_url: str, model: str, api_key: str | None, timeout: float, key_source: str) -> ProbeResult | None:
    """One chat request of one token: None when the server answers it with a chat completion, else why not."""
    url = request_url(base_url, CHAT_COMPLETIONS)
    payload = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    not_yet = f"the judge at {base_url} lists its models but does not answer a chat request yet"
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(_MAX_BODY)
    except urllib.error.HTTPError as exc:
        if exc.code < 500 and exc.code != 429:  # a busy server (429) may answer later
            problem = _http_error(base_url, url, exc.code, bool(api_key), key_source)
            return ProbeResult(NEVER, f"{problem.message} (POST {url}, model {model!r})")
        return ProbeResult(NOT_YET, f"{not_yet}: POST {url} gave HTTP {exc.code}")
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
        return ProbeResult(NOT_YET, f"{not_yet}: {getattr(exc, 'reason', None) or exc!r}")
    try:
        parsed = json.loads(body)
        ok = isinstance(parsed, dict) and isinstance(parsed.get("choices"), list) and len(parsed["choices"]) > 0
    except ValueError:
        ok = False
    if not ok:
        snippet = body[:120].decode("utf-8", "replace").replace("\n", " ")
        return ProbeResult(NOT_YET, f"{not_yet}: POST {url} gave no chat completion ({snippet!r})")
    return None


def _http_error(base_url: str, url: str, status: int, sent_key: bool, key_source: str) -> ProbeResult:
    if status in (401, 403):
        sent = "the key in " + key_source if sent_key else f"no key ({key_source} is not set)"
        return ProbeResult(
            NEVER, f"the judge at {base_url} refuses the key (HTTP {status}, sent {sent}): set JUDGE_API_KEY to "
            "the server's --api-key"
        )  # fmt: skip
    if status >= 500:  # a proxy in front of a server still starting, or an overloaded one
        return ProbeResult(NOT_YET, f"the judge at {base_url} does not answer yet: GET {url} gave HTTP {status}")
    return ProbeResult(
        NEVER, f"the judge at {base_url} is not an OpenAI-compatible server: GET {url} gave HTTP {status}"
    )


def _model_names(body: bytes) -> tuple[str, ...] | None:
    """The ids of an OpenAI model list (``{"object": "list", "data": [{"id": ...}, ...]}``), None if it is not one."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    data = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in data):
        return None
    return tuple(m["id"] for m in data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena_verl.judge.probe",
        description="Whether an OpenAI-compatible judge server answers: exit 0 up (model names on stdout), "
        "1 not up yet, 2 it answers but will never work for this run (wrong key, not an OpenAI server, no such "
        "model).",
    )
    parser.add_argument("url", help="the judge's base URL, as reward.arena.judge.base_url (http://host:port/v1)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the key (%(default)s)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to connect and read (%(default)s)")
    parser.add_argument("--expect-model", default=None, help="exit 2 unless the server serves this model name")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error("--timeout must be > 0")
    key = os.environ.get(args.api_key_env) or None
    try:
        result = probe(args.url, key, args.timeout, args.expect_model, args.api_key_env)
    except Exception as exc:  # noqa: BLE001  (any other failure is a setting to fix: never "not up yet")
        # The exception's text may quote the request's headers (the key among them): with a key, its type only.
        reason = type(exc).__name__ if key else f"{type(exc).__name__}: {exc}"
        print(f"error: cannot probe the judge at {args.url!r}: {reason}", file=sys.stderr)
        return NEVER
    if result.code == UP:
        print("\n".join(result.models))
    else:
        print(("error: " if result.code == NEVER else "") + result.message, file=sys.stderr)
    return result.code


if __name__ == "__main__":
    sys.exit(main())
