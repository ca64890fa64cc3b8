"""The recipes' readiness probe (arena_verl/judge/probe.py) against the tests' loopback judge: a server that lists
its models but hangs or answers garbage on chat is not taken as ready (it was: the probe only asked /models)."""

from __future__ import annotations

import json

import pytest

from arena_verl.judge.probe import NEVER, NOT_YET, UP, probe
from helpers.loopback_judge import LoopbackJudge


@pytest.fixture
def judge(tmp_path):
    control = tmp_path / "control.json"
    control.write_text("{}")
    with LoopbackJudge(control=str(control)) as server:
        server.control_path = control
        yield server
        control.write_text("{}")  # a hanging handler lets go


def set_control(judge, **control):
    judge.control_path.write_text(json.dumps(control))


def test_a_judge_that_answers_chat_is_up(judge):
    result = probe(judge.url, timeout=5, expect_model="judge")
    assert result.code == UP and result.models == ("judge",)


def test_a_judge_that_hangs_on_chat_is_not_up_yet(judge):
    set_control(judge, hang=True)
    result = probe(judge.url, timeout=1)
    assert result.code == NOT_YET and "does not answer a chat request yet" in result.message


@pytest.mark.parametrize("kind", ["text", "json", "html500"])
def test_a_judge_that_answers_garbage_is_not_up_yet(judge, kind):
    set_control(judge, garbage=kind)
    result = probe(judge.url, timeout=5)
    assert result.code == NOT_YET, result


def test_the_chat_request_names_the_listed_model_and_an_unserved_one_is_never(judge):
    judge.served_name = "another"  # it lists "another" and refuses chat for the model we name
    result = probe(judge.url, timeout=5)
    assert result.code == UP  # asks for the model it lists
    set_control(judge)
    assert probe(judge.url, timeout=5, expect_model="judge").code == NEVER  # not served: refused before chat
