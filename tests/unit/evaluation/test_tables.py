"""The shared formatter: percents and numbers with ``-`` for missing values, and the evaluation's table layout
(byte for byte what ``scripts/eval/evaluate.py`` has printed)."""

from __future__ import annotations

import math

from arena_verl.evaluation.report import BenchmarkResult, StepReport, render_table
from arena_verl.evaluation.tables import number, percent, text_table


def test_percent_and_number_print_missing_values_as_a_dash():
    assert [percent(0.125), percent(0.5, sign=""), percent(None), percent(math.nan)] == ["12.5%", "50.0", "-", "-"]
    assert [number(3), number(2.5, 1), number(12.0, 0), number(None), number(math.inf)] == ["3", "2.5", "12", "-", "-"]


def test_the_evaluation_table_keeps_its_layout():
    reports = [
        StepReport(
            30,
            "30.jsonl",
            [
                BenchmarkResult(
                    "aime2024", "math", 3, 12, 4, 0.5, {1: 0.5, 2: 0.61}, "math-verify", statuses={"timeout": 1}
                ),
                BenchmarkResult("livecodebench", "code", 1, 4, 4, None, {}, None, "not scored: needs --sandbox-url"),
            ],
        ),
        StepReport(
            None, "gen.jsonl", [BenchmarkResult("gpqa", "multiple_choice", 2, 8, 4, 0.25, {1: 0.25}, "multiple-choice")]
        ),
    ]
    assert render_table(reports) == (
        "step  benchmark      kind             prompts  n  avg@n  pass@1  pass@2  scored by / note\n"
        "----  -------------  ---------------  -------  -  -----  ------  ------  ----------------\n"
        "30    aime2024       math             3        4  50.0   50.0    61.0    math-verify (1 timeout)\n"
        "30    livecodebench  code             1        4  -      -       -       not scored: needs --sandbox-url\n"
        "-     gpqa           multiple_choice  2        4  25.0   25.0    -       multiple-choice"
    )


def test_right_aligned_tables_pad_every_column():
    table = text_table(["step", "s"], [["1", "12.5"], ["10", "3"]], align="right")
    assert table == "step     s\n----  ----\n   1  12.5\n  10     3"


def test_a_value_that_is_not_a_finite_number_prints_as_missing():
    from arena_verl.evaluation.tables import finite_or_none, number, percent

    for value in (None, float("nan"), float("inf"), 10**400, "x", [1]):
        assert finite_or_none(value) is None
    assert percent(10**400) == "-" and number(float("-inf")) == "-" and number(3) == "3"


def test_a_data_source_name_with_a_newline_or_a_bar_stays_in_its_row(tmp_path, capsys):
    import json

    from arena_verl.tools.evaluate import main

    rows = [{"data_source": name, "index": 0, "response": "x", "ground_truth": None} for name in ("a\nb|c", "d\u2028e")]
    dumps = tmp_path / "gen.jsonl"
    dumps.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["--dumps", str(dumps), "--workers", "1"]) == 0
    printed = capsys.readouterr()
    table = printed.out.splitlines()
    assert len(table) == 4  # header, rule, one row per benchmark
    assert table[2].split()[1] == "a\\nb\\|c" and table[3].split()[1] == "d\\u2028e"
    (warning,) = [line for line in printed.err.splitlines() if "could not be verified" in line]
    assert "of a\\nb\\|c, d\\u2028e could not be verified" in warning


def test_every_cell_is_one_line():
    assert text_table(["a", "b"], [["x\ny", "z|w\t"], ["1", "2"]]).splitlines() == [
        "a     b",
        "----  -",
        "x\\ny  z\\|w\\t",
        "1     2",
    ]
