"""The question/answer reader's rules hold for every file format and for verl-layout ground truths, not only for
JSON answers (tests/unit/data/test_convert.py covers those)."""

import json

import pandas as pd
import pytest

from arena_verl.data.benchmarks import prepare
from arena_verl.data.qa import DataError, JsonNumber, answer_value, load_json, question_answers, read_rows, text_value


def test_json_numbers_are_their_source_text():
    value = load_json('{"a": 0.50, "b": 123456789012345678901234567890, "c": -0, "d": [1e-7], "e": "033"}')
    assert value == {"a": "0.50", "b": "123456789012345678901234567890", "c": "-0", "d": ["1e-7"], "e": "033"}
    assert isinstance(value["a"], JsonNumber) and not isinstance(value["e"], JsonNumber)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ([True, False], "'answer' is a bool, expected a number or text"),
        ([[1, 2], [3]], "'answer' is a ndarray, expected a number or text"),  # lists come back as numpy arrays
        (["1", None], "row 1: 'answer' is empty"),
        ([1.5, float("nan")], "row 1: 'answer' is empty"),
    ],
)
def test_parquet_answers_follow_the_same_rules(tmp_path, column, message):
    source = tmp_path / "set.parquet"
    pd.DataFrame({"problem": ["Q1", "Q2"], "answer": column}).to_parquet(source)
    with pytest.raises(DataError, match=message):
        question_answers(read_rows(source))


def test_parquet_numbers_become_text(tmp_path):
    source = tmp_path / "set.parquet"
    pd.DataFrame({"problem": ["Q1", "Q2"], "answer": [12, 7]}).to_parquet(source)
    assert [pair.answer for pair in question_answers(read_rows(source))] == ["12", "7"]
    assert answer_value(0.25, "x") == "0.25" and answer_value(204.0, "x") == "204"


def test_a_bare_number_is_an_answer_but_not_a_question_or_an_option():
    assert answer_value(JsonNumber("0.50"), "x") == "0.50"
    with pytest.raises(DataError, match="x is a number, expected text"):
        text_value(JsonNumber("12"), "x")


def test_a_verl_layout_ground_truth_follows_the_answer_rules(tmp_path):
    def row(truth):
        return {"prompt": [{"role": "user", "content": "Find x."}], "reward_model": {"ground_truth": truth}}

    source = tmp_path / "verl.jsonl"
    source.write_text(f"{json.dumps(row('033'))}\n" + '{"prompt": [{"role": "user", "content": "Q"}], '
                      '"reward_model": {"ground_truth": 0.50}}\n')  # fmt: skip
    prepare("aime2024", [source], tmp_path / "out.parquet")
    truths = [rm["ground_truth"] for rm in pd.read_parquet(tmp_path / "out.parquet").reward_model]
    assert truths == ["033", "0.50"]
    for bad, message in ((True, "is a bool"), ([1], "is a list"), (None, "'reward_model' has no ground_truth")):
        source.write_text(json.dumps(row(bad)) + "\n")
        with pytest.raises(DataError, match=f"verl.jsonl: row 0: .*{message}"):
            prepare("aime2024", [source], tmp_path / "out.parquet")
