"""``python -m arena_verl.data convert`` keeps every answer exactly as written and refuses rows without a usable
question or answer, with the same rules (the same reader) as the benchmark presets.

Regression: it used to read JSON through pandas' type guessing ("033" -> 33.0, "0.50" -> 0.5, a 21-digit answer ->
1.2345678901234568e+20, a 30-digit one crashed, a null answer became the ground truth "nan", booleans and lists
were accepted)."""

import json
import re

import pandas as pd
import pytest

from arena_verl.core.errors import InputError
from arena_verl.data.benchmarks import prepare
from arena_verl.data.convert import convert_qa, main
from arena_verl.data.qa import DataError
from arena_verl.data.verl_layout import MATH_SUFFIX

DIGITS_21 = "123456789012345678901"
DIGITS_30 = "123456789012345678901234567890"

# (the answer as the JSON file writes it, the ground truth expected): strings and bare JSON numbers, as written.
KEPT = [
    ('"033"', "033"),
    ('"1,000"', "1,000"),
    ('"1/2"', "1/2"),
    ('"0.50"', "0.50"),
    ("0.50", "0.50"),
    (f'"{DIGITS_21}"', DIGITS_21),
    (DIGITS_21, DIGITS_21),
    (f'"{DIGITS_30}"', DIGITS_30),
    (DIGITS_30, DIGITS_30),
    ("-7", "-7"),
    ("1e5", "1e5"),
    ('"  \\\\frac{1}{2} "', "\\frac{1}{2}"),  # strings are only stripped
]


def qa_jsonl(path, *answers, question='"What is it?"'):
    """A jsonl file with one row per raw JSON answer text (None: the row has no answer key); a text question is
    numbered after the first row (one question with two answers is refused)."""
    lines = []
    for number, answer in enumerate(answers):
        asked = question
        if number and isinstance(json.loads(question), str):
            asked = json.dumps(f"{json.loads(question)} ({number})")
        lines.append(f'{{"problem": {asked}}}' if answer is None else f'{{"problem": {asked}, "answer": {answer}}}')
    path.write_text("\n".join(lines) + "\n")
    return path


def ground_truths(path):
    return [rm["ground_truth"] for rm in pd.read_parquet(path).reward_model]


@pytest.mark.parametrize(("raw", "expected"), KEPT)
def test_convert_keeps_the_answer_exactly_as_written(tmp_path, raw, expected):
    source = qa_jsonl(tmp_path / "set.jsonl", '"first"', raw)
    assert convert_qa(source, tmp_path / "out.parquet", data_source="aime2024", split="test") == 2
    assert ground_truths(tmp_path / "out.parquet") == ["first", expected]


def test_a_json_list_file_keeps_answers_too(tmp_path):
    source = tmp_path / "set.json"
    rows = (f'{{"problem": "Q{i}", "answer": {raw}}}' for i, (raw, _) in enumerate(KEPT))
    source.write_text(f"[{', '.join(rows)}]")
    convert_qa(source, tmp_path / "out.parquet", data_source="x", split="test")
    assert ground_truths(tmp_path / "out.parquet") == [expected for _, expected in KEPT]


def test_csv_cells_are_text_and_an_integral_parquet_float_is_an_integer(tmp_path):
    csv = tmp_path / "set.csv"
    csv.write_text(f"problem,answer\nQ1,033\nQ2,{DIGITS_30}\nQ3,0.50\n")
    convert_qa(csv, tmp_path / "a.parquet", data_source="x", split="test")
    assert ground_truths(tmp_path / "a.parquet") == ["033", DIGITS_30, "0.50"]
    parquet = tmp_path / "set.parquet"
    pd.DataFrame({"problem": ["Q1", "Q2", "Q3"], "answer": [204.0, None, 7.0]}).iloc[[0, 2]].to_parquet(parquet)
    convert_qa(parquet, tmp_path / "b.parquet", data_source="x", split="test")
    assert ground_truths(tmp_path / "b.parquet") == ["204", "7"]  # an int column with gaps comes back as floats


def test_convert_writes_verls_layout(tmp_path):
    source = qa_jsonl(tmp_path / "aime.jsonl", "2", '"42"', question='"  Find $x$.  "')
    out = tmp_path / "aime.parquet"
    assert convert_qa(source, out, data_source="aime2024", split="test") == 2
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert list(frame.data_source) == ["aime2024", "aime2024"] and list(frame.ability) == ["math", "math"]
    assert [m["role"] for m in frame.prompt[0]] == ["user"]
    assert frame.prompt[0][0]["content"] == f"Find $x$.\n\n{MATH_SUFFIX}"
    assert [(e["split"], e["index"]) for e in frame.extra_info] == [("test", 0), ("test", 1)]
    convert_qa(source, out, data_source="aime2024", split="test", suffix="")
    assert pd.read_parquet(out).prompt[0][0]["content"] == "Find $x$."


# (the second row's answer as written, what the error says about it)
REFUSED_ANSWERS = [
    (None, r"row 1: 'answer' is empty"),  # no answer key
    ("null", r"row 1: 'answer' is empty"),
    ('""', r"row 1: 'answer' is empty"),
    ('"   "', r"row 1: 'answer' is empty"),
    ("NaN", r"row 1: 'answer' is empty"),  # what Python's json.dumps writes for a missing float
    ("Infinity", r"row 1: 'answer' is inf, expected a number or text"),
    ("true", r"row 1: 'answer' is a bool, expected a number or text"),
    ("false", r"row 1: 'answer' is a bool, expected a number or text"),
    ("[1, 2]", r"row 1: 'answer' is a list, expected a number or text"),
    ('{"value": 1}', r"row 1: 'answer' is a dict, expected a number or text"),
]


@pytest.mark.parametrize(("raw", "message"), REFUSED_ANSWERS)
def test_a_row_without_a_usable_answer_is_refused_naming_the_file_and_row(tmp_path, raw, message):
    source = qa_jsonl(tmp_path / "set.jsonl", '"1"', raw)
    with pytest.raises(DataError, match=rf"^{re.escape(str(source))}: {message}$"):
        convert_qa(source, tmp_path / "out.parquet", data_source="x", split="test")
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize(("raw", "message"), REFUSED_ANSWERS)
def test_the_presets_refuse_the_same_rows_with_the_same_message(tmp_path, raw, message):
    """One reader, one set of rules: convert and the math presets agree on every refusal."""
    source = qa_jsonl(tmp_path / "set.jsonl", '"1"', raw)
    with pytest.raises(DataError) as from_convert:
        convert_qa(source, tmp_path / "a.parquet", data_source="x", split="test")
    with pytest.raises(DataError) as from_preset:
        prepare("aime2025", [source], tmp_path / "b.parquet")
    assert str(from_preset.value) == str(from_convert.value)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("null", r"row 0: 'problem' is empty"),
        ('"  "', r"row 0: 'problem' is empty"),
        ("12", r"row 0: 'problem' is a number, expected text"),
        ('["a"]', r"row 0: 'problem' is a list, expected text"),
    ],
)
def test_a_row_without_a_question_is_refused(tmp_path, question, message):
    source = qa_jsonl(tmp_path / "set.jsonl", "1", question=question)
    with pytest.raises(DataError, match=message):
        convert_qa(source, tmp_path / "out.parquet", data_source="x", split="test")


def test_files_and_columns_that_cannot_be_used(tmp_path):
    source = tmp_path / "set.parquet"
    pd.DataFrame({"question": ["q"], "answer": ["1"]}).to_parquet(source)
    with pytest.raises(DataError, match=r"set.parquet: no column 'problem' \(columns: question, answer\)"):
        convert_qa(source, tmp_path / "o.parquet", data_source="x", split="test")
    convert_qa(source, tmp_path / "o.parquet", data_source="x", split="test", question_key="question")
    assert ground_truths(tmp_path / "o.parquet") == ["1"]
    with pytest.raises(DataError, match=r"set.txt: unknown extension '.txt'"):
        (tmp_path / "set.txt").write_text("x")
        convert_qa(tmp_path / "set.txt", tmp_path / "o.parquet", data_source="x", split="test")
    with pytest.raises(DataError, match=r"nope.jsonl: no such file"):
        convert_qa(tmp_path / "nope.jsonl", tmp_path / "o.parquet", data_source="x", split="test")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DataError, match=r"empty.jsonl: no rows"):
        convert_qa(tmp_path / "empty.jsonl", tmp_path / "o.parquet", data_source="x", split="test")
    assert issubclass(DataError, InputError) and issubclass(DataError, ValueError)  # callers catching either


def cli(tmp_path, source, *extra):
    return main(["convert", str(source), "--output", str(tmp_path / "out.parquet"), "--data-source", "aime2024",
                 "--split", "test", *extra])  # fmt: skip


def test_the_cli_converts_and_prints_one_line(tmp_path, capsys):
    source = qa_jsonl(tmp_path / "set.jsonl", '"033"', DIGITS_30)
    assert cli(tmp_path, source) == 0
    assert capsys.readouterr().out == f"2 rows (aime2024, split='test') -> {tmp_path / 'out.parquet'}\n"
    assert ground_truths(tmp_path / "out.parquet") == ["033", DIGITS_30]


@pytest.mark.parametrize(
    ("raw", "message"),
    [(None, "'answer' is empty"), ("null", "'answer' is empty"), ('""', "'answer' is empty"),
     ("true", "'answer' is a bool, expected a number or text"),
     ("[1]", "'answer' is a list, expected a number or text")],
)  # fmt: skip
def test_the_cli_exits_2_with_one_line_for_a_bad_row(tmp_path, capsys, raw, message):
    source = qa_jsonl(tmp_path / "set.jsonl", '"1"', raw)
    assert cli(tmp_path, source) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"error: {source}: row 1: {message}"]
    assert not (tmp_path / "out.parquet").exists()


def test_the_cli_exits_2_for_missing_input_a_missing_column_and_an_unwritable_output(tmp_path, capsys):
    assert cli(tmp_path, tmp_path / "nope.jsonl") == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.jsonl'}: no such file\n"
    source = qa_jsonl(tmp_path / "set.jsonl", "1")
    assert cli(tmp_path, source, "--answer-key", "final") == 2
    assert capsys.readouterr().err == f"error: {source}: no column 'final' (columns: problem, answer)\n"
    (tmp_path / "a_file").write_text("")
    code = main(["convert", str(source), "--output", str(tmp_path / "a_file" / "o.parquet"), "--data-source", "x",
                 "--split", "test"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1 and "Traceback" not in err


def test_json_numbers_outside_the_answer_stay_text_too(tmp_path):
    """Ids and other numbers are read as written as well (the source id of a preset row is the same text)."""
    source = tmp_path / "set.jsonl"
    source.write_text(json.dumps({"problem_idx": 7, "problem": "Q", "answer": 1}) + "\n")
    prepare("aime2025", [source], tmp_path / "out.parquet")
    assert pd.read_parquet(tmp_path / "out.parquet").extra_info[0]["source_id"] == "7"


def test_a_json_number_too_large_for_a_float_is_an_infinite_answer_and_refused(tmp_path, capsys):
    from arena_verl.data.convert import main

    source = tmp_path / "big.jsonl"
    source.write_text('{"question": "q", "answer": 1e999}\n')
    argv = ["convert", str(source), "--output", str(tmp_path / "o.parquet"), "--data-source", "x", "--split", "test"]
    assert main([*argv, "--question-key", "question"]) == 2
    assert "'answer' is inf" in capsys.readouterr().err and not (tmp_path / "o.parquet").exists()


def test_a_question_asked_twice_with_different_answers_is_refused_naming_both_rows(tmp_path, capsys):
    source = tmp_path / "set.jsonl"
    rows = [("What is 2 + 2?", "4"), ("What is 3 + 3?", "6"), ("What is 2 + 2?", "4"), ("What is 2 + 2?", "5")]
    source.write_text("".join(json.dumps({"problem": q, "answer": a}) + "\n" for q, a in rows))
    assert cli(tmp_path, source) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not (tmp_path / "out.parquet").exists()
    assert captured.err.splitlines() == [
        f"error: 1 question(s) asked twice with different answers: {source}: row 0 ('4') and {source}: row 3 ('5'); "
        "keep one answer per question"
    ]
    with pytest.raises(DataError, match=r"set.jsonl: row 0 \('4'\) and set.jsonl: row 3 \('5'\)"):
        prepare("aime2025", [source], tmp_path / "b.parquet")
    assert not (tmp_path / "b.parquet").exists()
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text("".join(json.dumps({"problem": q, "answer": a}) + "\n" for q, a in rows[:3]))
    assert cli(tmp_path, repeated) == 0  # the same question with the same answer is no contradiction
