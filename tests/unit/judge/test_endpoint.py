"""The served judge's address: the URL file a judge job publishes, re-read after a failed request."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from arena_verl.core.judge_protocol import Trace
from arena_verl.core.urls import request_url
from arena_verl.judge.backends.endpoint import Endpoint, read_url_file
from arena_verl.judge.backends.openai_backend import OpenAIJudge
from arena_verl.settings import judge_settings


def test_request_url_follows_the_v1_rule():
    assert request_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert request_url(" http://h:1 ") == "http://h:1/v1/chat/completions"


@pytest.mark.parametrize("text", ["", "\n", "ftp://h/v1\n", "h:8000/v1\n", "http://\n", "http:///v1"])
def test_a_url_file_without_an_http_address_is_refused_by_name(tmp_path, text):
    path = tmp_path / "judge_url"
    path.write_text(text)
    with pytest.raises(ValueError, match="judge URL file .*judge_url"):
        read_url_file(path)


def test_a_missing_url_file_is_refused_at_start(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        Endpoint(None, str(tmp_path / "absent"))


def test_the_file_is_read_again_on_refresh_and_a_broken_file_keeps_the_address(tmp_path):
    path = tmp_path / "judge_url"
    path.write_text("# the judge job's address\nhttp://a:1/v1\n\n")
    endpoint = Endpoint(None, str(path), min_interval_s=0.0)
    assert endpoint.url == "http://a:1/v1/chat/completions" and not endpoint.refresh()
    path.write_text("")  # the judge job is rewriting it
    assert not endpoint.refresh() and endpoint.url == "http://a:1/v1/chat/completions"
    path.write_text("  http://b:2/v1  \n")
    assert endpoint.refresh() and endpoint.url == "http://b:2/v1/chat/completions" and endpoint.changes == 1
    path.write_text("http://b:2/v1\nhttp://c:3/v1\n")  # a second replica: the new list replaces the old one
    assert endpoint.refresh() and endpoint.urls == ["http://b:2/v1/chat/completions", "http://c:3/v1/chat/completions"]
    path.write_text("http://b:2/v1\nnot an address\n")  # one bad line: the list in use stays
    assert not endpoint.refresh() and len(endpoint.urls) == 2


@pytest.mark.parametrize("second", ["http://a:1/v1", "http://a:1/v1/", "http://a:1"])
def test_a_url_file_listing_a_replica_twice_is_refused(tmp_path, second):
    # Spelt twice alike or not: one chat-completions URL, one replica (the ring could not hold it twice).
    path = tmp_path / "judge_url"
    path.write_text(f"http://a:1/v1\n{second}\n")
    with pytest.raises(ValueError, match="twice"):
        read_url_file(path)


def test_reads_are_rate_limited(tmp_path):
    path = tmp_path / "judge_url"
    path.write_text("http://a:1/v1\n")
    endpoint = Endpoint(None, str(path), min_interval_s=3600.0)
    endpoint.refresh()  # the first refresh reads
    path.write_text("http://b:2/v1\n")
    assert not endpoint.refresh() and endpoint.base_url == "http://a:1/v1"


def test_without_a_file_the_start_address_stays():
    endpoint = Endpoint("http://a:1/v1")
    assert not endpoint.refresh() and endpoint.url == "http://a:1/v1/chat/completions"


class _Verdicts(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"choices": [{"message": {"content": "[[A]]"}, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_an_openai_judge_follows_its_url_file_to_a_judge_that_moved(tmp_path):
    """The first address refuses connections (a judge job that ended); the file then names a live server: the
    failed attempt re-reads the file and the retry is answered there, within the same call."""
    dead = ThreadingHTTPServer(("127.0.0.1", 0), _Verdicts)
    dead_url = f"http://127.0.0.1:{dead.server_address[1]}/v1"
    dead.server_close()  # nothing listens there any more
    live = ThreadingHTTPServer(("127.0.0.1", 0), _Verdicts)
    threading.Thread(target=live.serve_forever, daemon=True).start()
    url_file = tmp_path / "judge_url"
    url_file.write_text(dead_url + "\n")
    settings = judge_settings(
        backend="openai", base_url_file=str(url_file), model_path="judge", retries=1, backoff_s=0.0, timeout_s=5.0
    )
    judge = OpenAIJudge(settings)
    judge.endpoint.min_interval_s = 0.0
    url_file.write_text(f"http://127.0.0.1:{live.server_address[1]}/v1\n")

    async def ask():
        try:
            return await judge.compare("1+1?", Trace("two"), Trace("2"))
        finally:
            await judge.close()

    try:
        assert asyncio.run(ask()) == 1.0
        assert judge.stats.errors == 1 and judge.stats.failures == 0 and judge.endpoint.changes == 1
    finally:
        live.shutdown()
        live.server_close()


def test_a_url_with_user_info_is_refused(tmp_path):
    path = tmp_path / "judge_url"
    path.write_text("http://judge-node:8000@elsewhere.example/v1\n")
    with pytest.raises(ValueError, match="user info"):
        read_url_file(path)


def test_a_fifo_is_not_opened(tmp_path):
    import os

    path = tmp_path / "judge_url"
    os.mkfifo(path)  # opening it would block until a writer came
    with pytest.raises(ValueError, match="not a regular file"):
        read_url_file(path)
