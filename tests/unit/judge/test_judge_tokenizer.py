"""reward.arena.judge.tokenizer: what counts a served judge's trace budget. With a tokenizer, max_trace_tokens is
tokens; without one it is UTF-8 bytes, said once at start-up; a tokenizer that cannot be loaded is an error then,
never a silent byte count. No server: the judge's generation is replaced by a canned verdict."""

import asyncio
import logging
import re

import pytest

from arena_verl.judge import Trace, make_judge
from arena_verl.judge.backends.openai_backend import OpenAIJudge, byte_budget_warning
from arena_verl.settings import JudgeSettings, judge_settings, settings_from_config
from arena_verl.testing.toy import build_toy_tokenizer

LOGGER = "arena_verl.judge.backends.openai_backend"
BUDGET = 200
LONG = "We compute the sum step by step. Let x = 2 + 2. So x = 4. " * 200  # ~11 KB, ~2,600 toy tokens


@pytest.fixture(scope="module")
def toy_tokenizer_dir(tmp_path_factory):
    return str(build_toy_tokenizer(tmp_path_factory.mktemp("toy-tokenizer")))


@pytest.fixture(scope="module")
def toy_tokenizer(toy_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(toy_tokenizer_dir)


def served(**overrides) -> JudgeSettings:
    """A served judge as JUDGE_PLACEMENT=serve configures it: the served name, not a folder, in model_path."""
    values = dict(backend="openai", base_url="http://127.0.0.1:9/v1", model_path="judge", max_trace_tokens=BUDGET)
    return judge_settings(**{**values, **overrides})


def shown_traces(judge, calls: int = 1) -> list[str]:
    """The traces the judge's prompts show, for ``calls`` comparisons of LONG against a short trace."""
    prompts = []

    async def canned(messages, temperature, group=None):
        prompts.append(messages[0]["content"])
        return "[[A]]"

    judge._generate = canned

    async def scenario():
        return [await judge.compare("What is 2 + 2?", Trace(LONG), Trace("4")) for _ in range(calls)]

    assert asyncio.run(scenario()) == [1.0] * calls
    tag = re.search(r"<(trace-[0-9a-f]{16})>", prompts[0]).group(1)
    return re.findall(rf"<{tag}>\n(.*?)\n</{tag}>", prompts[0], flags=re.S)


def test_with_a_tokenizer_a_long_trace_is_cut_to_max_trace_tokens_tokens(toy_tokenizer_dir, toy_tokenizer, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        judge = OpenAIJudge(served(tokenizer=toy_tokenizer_dir))
        first, second = shown_traces(judge)
    assert not [r for r in caplog.records if r.name == LOGGER]  # a tokenizer: nothing to warn about
    tokens = len(toy_tokenizer.encode(first))
    assert "characters omitted" in first  # cut in the middle
    assert BUDGET * 0.8 <= tokens <= BUDGET  # the budget is tokens, and it is used
    assert len(first.encode()) > 2 * BUDGET  # far more bytes than a byte budget would keep
    assert second == "4"


def test_without_a_tokenizer_the_budget_is_bytes_and_said_once(toy_tokenizer, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        judge = make_judge(served())  # the served name is not a folder: no tokenizer
        first, _ = shown_traces(judge, calls=12)
        shown_traces(judge, calls=3)
    assert judge.count_tokens is None
    assert len(first.encode()) <= BUDGET  # bytes, as before
    assert len(toy_tokenizer.encode(first)) < BUDGET / 2  # a quarter-ish of the tokens the setting names
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1, warnings  # once at start-up, not per call
    assert warnings[0] == byte_budget_warning(served())
    assert "'judge'" in warnings[0] and "reward.arena.judge.tokenizer" in warnings[0]
    assert f"cut at {BUDGET} UTF-8 bytes, about 50 tokens" in warnings[0]


def test_the_warning_states_the_default_budget():
    message = byte_budget_warning(judge_settings(backend="openai", base_url="http://h/v1", model_path="judge"))
    assert message.startswith("judge: no tokenizer for the served model 'judge' (set reward.arena.judge.tokenizer")
    assert "JUDGE_TOKENIZER" in message and "cut at 4096 UTF-8 bytes, about 1000 tokens" in message


def test_a_local_model_path_still_counts_with_its_tokenizer(toy_tokenizer_dir, toy_tokenizer, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        judge = OpenAIJudge(served(model_path=toy_tokenizer_dir))  # verl's router: model_path is the folder
        first, _ = shown_traces(judge)
    assert not [r for r in caplog.records if r.name == LOGGER]
    assert BUDGET * 0.8 <= len(toy_tokenizer.encode(first)) <= BUDGET


def test_the_setting_comes_from_the_config(toy_tokenizer_dir):
    config = {
        "actor_rollout_ref": {"rollout": {"n": 4}},
        "reward": {"arena": {"judge": {"backend": "openai", "base_url": "http://h:1/v1", "model_path": "judge",
                                       "tokenizer": toy_tokenizer_dir}}},
    }  # fmt: skip
    settings = settings_from_config(config)
    assert settings.judge.options.tokenizer == toy_tokenizer_dir
    # default: model_path's tokenizer when local, else bytes
    assert JudgeSettings(backend="openai").options.tokenizer is None
    judge = make_judge(settings.judge)  # as the referee builds it
    assert judge.count_tokens is not None and judge.count_tokens("x = 4") >= 1


def test_an_empty_tokenizer_setting_is_refused():
    config = {"actor_rollout_ref": {"rollout": {"n": 4}},
              "reward": {"arena": {"judge": {"backend": "openai", "base_url": "http://h:1/v1", "model_path": "judge",
                                             "tokenizer": " "}}}}  # fmt: skip
    with pytest.raises(ValueError, match=r"reward\.arena\.judge\.tokenizer"):
        settings_from_config(config)


@pytest.mark.parametrize("kind", ["missing", "file", "empty_folder", "not_a_tokenizer"])
def test_a_tokenizer_that_cannot_be_loaded_is_an_error_at_start_up(tmp_path, kind, caplog):
    path = tmp_path / "tok"
    if kind == "file":
        path.write_text("not a folder")
    elif kind == "empty_folder":
        path.mkdir()
    elif kind == "not_a_tokenizer":
        path.mkdir()
        (path / "tokenizer.json").write_text("{ not json")
    expected = {"missing": "no such folder", "file": "not a folder"}.get(kind, "cannot be loaded as a tokenizer")
    refused = pytest.raises(ValueError, match=r"reward\.arena\.judge\.tokenizer=.*tok")
    with caplog.at_level(logging.WARNING, logger=LOGGER), refused as info:
        make_judge(served(tokenizer=str(path)))
    assert expected in str(info.value)
    assert not [r for r in caplog.records if r.name == LOGGER]  # an error, not the byte-count warning
