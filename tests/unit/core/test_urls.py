"""The served judge's address rules, written once (``request_url``): one request URL per replica, whatever the
spelling, for any backend's request path."""

import pytest

from arena_verl.core.urls import repeated_servers, request_url


@pytest.mark.parametrize("spelling", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"])
def test_every_spelling_of_one_server_calls_one_url(spelling):
    assert request_url(spelling) == "http://h:8000/v1/chat/completions"


@pytest.mark.parametrize(
    ("base", "path", "url"),
    [
        ("http://h:1", "/v1/models", "http://h:1/v1/models"),
        ("http://h:1/v1", "/v1/models", "http://h:1/v1/models"),
        ("http://h:1/v2", "/v2/judge", "http://h:1/v2/judge"),
        ("http://h:1", "/v2/judge", "http://h:1/v2/judge"),
        ("http://h:1/api/v2/", "/v2/judge", "http://h:1/api/v2/judge"),
        ("http://h:1/v1", "/v2/judge", "http://h:1/v1/v2/judge"),  # another version: the base is kept as given
        ("http://h:1/x", "/score", "http://h:1/x/score"),
    ],
)
def test_a_backends_own_request_path_follows_the_same_rule(base, path, url):
    assert request_url(base, path) == url


def test_only_the_later_spellings_of_a_server_are_repeats():
    urls = ["http://h:8000", "http://g:8000/v1", "http://h:8000/v1/", "http://h:8001/v1", "http://h:8000/"]
    assert repeated_servers(urls) == ["http://h:8000/v1/", "http://h:8000/"]
    assert repeated_servers(["http://h:8000/v1", "http://h:8000/v2"]) == []  # another path, another server
    assert repeated_servers(["http://h:8000", "http://h:8000/v2"], "/v2/judge") == ["http://h:8000/v2"]
