"""The served judge's address rules: one chat-completions URL per replica, whatever the spelling."""

import pytest

from arena_verl.core.urls import chat_url, repeated_servers


@pytest.mark.parametrize("spelling", ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"])
def test_every_spelling_of_one_server_calls_one_url(spelling):
    assert chat_url(spelling) == "http://h:8000/v1/chat/completions"


def test_only_the_later_spellings_of_a_server_are_repeats():
    urls = ["http://h:8000", "http://g:8000/v1", "http://h:8000/v1/", "http://h:8001/v1", "http://h:8000/"]
    assert repeated_servers(urls) == ["http://h:8000/v1/", "http://h:8000/"]
    assert repeated_servers(["http://h:8000/v1", "http://h:8000/v2"]) == []  # another path, another server
