"""Issue 18: every field of a LiveCodeBench row of the wrong type or shape is one DataError naming the file, row and
field (deep JSON used to raise RecursionError, a list ``testtype`` TypeError, ``--since`` with a zone TypeError);
``--since`` compares in UTC. The private tests' restricted unpickler and decompression cap are unchanged."""

import base64
import json
import pickle
import zlib

import pandas as pd
import pytest

from arena_verl.data.benchmarks import DataError, Options, prepare
from arena_verl.data.benchmarks.livecodebench import utc_time

DEEP = "[" * 100_000 + "]" * 100_000


def compressed(payload) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(payload))).decode()


def stdin_row(**changes):
    row = {
        "question_id": "abc400_a",
        "question_content": "Read n and print 2n.",
        "contest_date": "2025-04-05T00:00:00",
        "starter_code": "",
        "metadata": "{}",
        "public_test_cases": json.dumps([{"input": "3\n", "output": "6\n", "testtype": "stdin"}]),
        "private_test_cases": compressed(json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}])),
    }
    row.update(changes)
    return row


def functional_row(**changes):
    row = stdin_row(
        starter_code="class Solution:\n    def addUp(self, a, b):\n        ",
        metadata=json.dumps({"func_name": "addUp"}),
        public_test_cases=json.dumps([{"input": "1\n2", "output": "3", "testtype": "functional"}]),
        private_test_cases="",
    )
    row.update(changes)
    return row


def run(tmp_path, *rows, since=None, public_tests_only=False):
    source = tmp_path / "lcb.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    options = Options(since=since, public_tests_only=public_tests_only)
    output = tmp_path / "lcb.parquet"
    return prepare("livecodebench_v6", [source], output, options), output


def cases(*items):
    return json.dumps(list(items))


BAD_ROWS = [
    # (row changes, the message after "row 0: ")
    ({"public_test_cases": DEEP}, "'public_test_cases': JSON nested too deeply to read"),
    ({"private_test_cases": compressed(DEEP)}, "'private_test_cases': JSON nested too deeply to read"),
    ({"private_test_cases": compressed("not json")}, "'private_test_cases': the unpickled test cases are not JSON"),
    ({"public_test_cases": json.dumps({"input": "1", "output": "2"})},
     "'public_test_cases': a JSON dict, expected a list of test cases"),
    ({"public_test_cases": cases("1\n")}, "'public_test_cases': test case 0 is a str, expected an object"),
    ({"public_test_cases": cases({"input": 3, "output": "6"})},
     "'public_test_cases': test case 0: 'input' is a number, expected text"),
    ({"public_test_cases": cases({"input": "3", "output": ["6"]})},
     "'public_test_cases': test case 0: 'output' is a list, expected text"),
    ({"public_test_cases": cases({"output": "6"})}, "'public_test_cases': test case 0: 'input' is missing"),
    ({"public_test_cases": '[{"input": "1", "output": ' + "9" * 5000 + "}]"},
     "'public_test_cases': test case 0: 'output' is a number, expected text"),
    ({"public_test_cases": cases({"input": "3", "output": "6", "testtype": ["stdin"]})},
     "'public_test_cases': test case 0: 'testtype' is a list, expected text"),
    ({"public_test_cases": cases({"input": "3", "output": "6", "testtype": {"a": 1}})},
     "'public_test_cases': test case 0: 'testtype' is a dict, expected text"),
    ({"public_test_cases": [{"input": "3", "output": "6"}]},
     "'public_test_cases': a list, expected JSON text of a list of test cases"),
    ({"public_test_cases": 7}, "'public_test_cases': a number, expected JSON text"),
    ({"public_test_cases": None}, "'public_test_cases': empty"),
    ({"public_test_cases": "[]", "private_test_cases": ""}, "no test cases"),
    ({"public_test_cases": cases({"input": "3", "output": "6", "testtype": "weird"})}, "test types ['stdin', 'weird']"),
    ({"starter_code": 12}, "'starter_code' is a number, expected text"),
    ({"starter_code": ["def f(): pass"]}, "'starter_code' is a list, expected text"),
    ({"question_content": {"text": "x"}}, "'question_content' is a dict, expected text"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "message"), BAD_ROWS)
def test_a_row_of_the_wrong_shape_is_one_error_naming_the_row_and_field(tmp_path, changes, message):
    with pytest.raises(DataError) as raised:
        run(tmp_path, stdin_row(), stdin_row(**changes))
    assert str(raised.value).startswith(f"{tmp_path / 'lcb.jsonl'}: row 1: {message}"), str(raised.value)
    assert not (tmp_path / "lcb.parquet").exists()


FUNCTIONAL_BAD = [
    ({"metadata": "[" * 100_000}, "'metadata': JSON nested too deeply to read"),
    ({"metadata": 5}, "'metadata' is a number, expected a JSON object"),
    ({"metadata": ["func_name"]}, "'metadata' is a list, expected a JSON object"),
    ({"metadata": "not json"}, "'metadata' is not a JSON object"),
    ({"metadata": json.dumps({"func_name": ["addUp"]})}, "functional tests but no 'func_name'"),
    ({"metadata": {"func_name": 5}}, "functional tests but no 'func_name'"),
    ({"public_test_cases": cases({"input": "1", "output": DEEP, "testtype": "functional"})},
     "test case 0: the expected output is JSON nested too deeply to read"),
    ({"public_test_cases": cases({"input": "1", "output": "9" * 5000, "testtype": "functional"})},
     "test case 0: the expected output cannot be printed by the sandbox"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "message"), FUNCTIONAL_BAD)
def test_functional_rows_of_the_wrong_shape(tmp_path, changes, message):
    with pytest.raises(DataError) as raised:
        run(tmp_path, functional_row(**changes))
    assert str(raised.value).startswith(f"{tmp_path / 'lcb.jsonl'}: row 0: {message}"), str(raised.value)


def test_a_functional_expected_output_of_ordinary_size_is_printed_as_before(tmp_path):
    row = functional_row(public_test_cases=cases({"input": "1", "output": "9" * 400, "testtype": "functional"}))
    _, output = run(tmp_path, row)
    truth = json.loads(pd.read_parquet(output).reward_model[0]["ground_truth"])
    assert truth["outputs"] == ["9" * 400] and truth["fn_name"] == "addUp"


def test_the_private_tests_unpickler_still_refuses_every_global(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    blob = base64.b64encode(zlib.compress(pickle.dumps(Payload()))).decode()
    with pytest.raises(DataError, match=r"row 0: 'private_test_cases': neither JSON nor .*refusing to load"):
        run(tmp_path, stdin_row(private_test_cases=blob))
    _, output = run(tmp_path, stdin_row(private_test_cases=blob), public_tests_only=True)
    assert len(pd.read_parquet(output)) == 1


@pytest.mark.parametrize(
    ("since", "kept"),
    [
        ("2025-03-01", ["late", "noon"]),  # a date: midnight UTC
        ("2025-03-01T00:00:00", ["late", "noon"]),  # naive: UTC
        ("2025-03-01T00:00:00Z", ["late", "noon"]),
        ("2025-03-01T09:00:00+09:00", ["late", "noon"]),  # the same instant as midnight UTC
        ("2025-03-01T12:00:00+00:00", ["noon"]),
        ("2025-02-28T14:00:00-01:00", ["tokyo", "late", "noon"]),  # 15:00 UTC on the 28th
    ],
)
def test_since_with_or_without_a_zone_compares_in_utc(tmp_path, since, kept):
    rows = [
        stdin_row(question_id="tokyo", question_content="A", contest_date="2025-03-01T00:00:00+09:00"),  # 28th 15:00Z
        stdin_row(question_id="late", question_content="B", contest_date="2025-03-01T00:00:00"),  # naive = UTC
        stdin_row(question_id="noon", question_content="C", contest_date="2025-03-01T12:00:00Z"),
        stdin_row(question_id="old", question_content="D", contest_date="2024-01-01"),
    ]
    report, output = run(tmp_path, *rows, since=since)
    assert [info["source_id"] for info in pd.read_parquet(output).extra_info] == kept
    assert report.notes == [f"{4 - len(kept)} rows before --since {since}"]


@pytest.mark.parametrize("since", ["", "yesterday", "NaT", "2025-13-45", "99999-01-01"])
def test_a_since_that_is_not_a_date_is_refused(tmp_path, since):
    with pytest.raises(DataError, match=r"^--since"):
        run(tmp_path, stdin_row(), since=since)


@pytest.mark.parametrize(
    ("date", "message"),
    [(None, "no 'contest_date'"), ("soon", "'contest_date' 'soon' is not a date"),
     (1700000000, "'contest_date' is a number, expected a date"), (["2025"], "'contest_date' is a list"),
     ("NaT", "'contest_date' 'NaT' is not a date")],
)  # fmt: skip
def test_a_contest_date_of_the_wrong_type_is_refused_when_since_needs_it(tmp_path, date, message):
    with pytest.raises(DataError, match=rf"row 0: {message}"):
        run(tmp_path, stdin_row(contest_date=date), since="2025-01-01")


def test_utc_time_accepts_dates_and_timestamps():
    import datetime

    assert utc_time(datetime.date(2025, 3, 1), "x") == pd.Timestamp("2025-03-01", tz="UTC")
    aware = datetime.datetime(2025, 3, 1, 9, tzinfo=datetime.timezone(datetime.timedelta(hours=9)))
    assert utc_time(aware, "x") == pd.Timestamp("2025-03-01", tz="UTC")
    assert utc_time(pd.Timestamp("2025-03-01").to_datetime64(), "x") == pd.Timestamp("2025-03-01", tz="UTC")
