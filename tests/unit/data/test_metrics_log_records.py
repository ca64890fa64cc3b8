"""verl's file-logger output as the summary reads it (arena_verl.data.metrics_log): a line that is no usable record
is skipped and counted by reason, never a traceback; an unreadable file is an InputError naming it."""

import json
import math

import pytest

from arena_verl.core.errors import InputError
from arena_verl.data.metrics_log import logged_step, one_line, scan_records, summarise


def line(step, **data) -> str:
    return json.dumps({"step": step, "data": {"training/global_step": step, **data}})


@pytest.mark.parametrize(
    "value, expected",
    [(0, 0), (3, 3), (3.0, 3), (None, None), (math.inf, None), (math.nan, None), (-1, None), (2.5, None),
     ("3", None), ("abc", None), (True, None), ([1], None), (2**53, None), (10**400, None)],
)  # fmt: skip
def test_a_step_is_a_whole_number_at_least_zero(value, expected):
    assert logged_step(value) == expected


BAD_LINES = {
    "null step": ('{"step": null, "data": {"training/global_step": null}}', "bad step"),
    "infinite step": ('{"step": 2, "data": {"training/global_step": Infinity}}', "bad step"),
    "negative step": (line(-3), "bad step"),
    "float step": (line(2.5), "bad step"),
    "string step": (line("two"), "bad step"),
    "bad outer step": ('{"step": NaN, "data": {"val-core/math/reward/mean@2": 0.5}}', "bad step"),
    "not an object": ("[1, 2, 3]", "not a record"),
    "data not an object": ('{"step": 1, "data": 5}', "not a record"),
    "not JSON": ("garbage", "not JSON"),
    "too deep": ('{"data": {"a": ' + "[" * 100000 + "]" * 100000 + "}}", "not JSON"),
    "too long an int": ('{"data": {"a": ' + "9" * 5000 + "}}", "not JSON"),
}


@pytest.mark.parametrize("name", BAD_LINES)
def test_a_corrupt_record_is_skipped_and_counted(tmp_path, name):
    bad, reason = BAD_LINES[name]
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join([line(1, **{"timing_s/step": 2.0}), bad, line(3), ""]))
    summary = summarise(path, rc=0, wall_s=1.0)
    assert [s["training/global_step"] for s in summary["steps"]] == [1, 3]
    assert summary["records_skipped"] == 1 and summary["records_skipped_by_reason"] == {reason: 1}
    assert summary["metrics_error"] is None
    assert f"records_skipped=1({reason.replace(' ', '_')}:1)" in one_line(summary)
    json.dumps(summary, default=float)  # what the supervisor writes


def test_non_utf8_and_a_torn_last_line_are_counted_and_blank_lines_are_not(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(line(1).encode() + b"\n\n" + b'{"step": 2, "data": {"x\xff": 1}}\n' + b'{"step": 3, "da')
    scan = scan_records(path)
    assert len(scan.records) == 1 and dict(scan.skipped) == {"not UTF-8": 1, "not JSON": 1}
    assert summarise(path, rc=0, wall_s=0)["records_skipped"] == 2


def test_a_clean_file_keeps_its_summary_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(line(1, **{"timing_s/step": 2.0}) + "\n")
    summary = summarise(path, rc=0, wall_s=3.0)
    assert summary["records_skipped"] == 0 and summary["records_skipped_by_reason"] == {}
    assert one_line(summary) == "rc=0 steps=1 wall=3s step_s=2 reward_mean=- arena_routed=0/0 judge_calls=0 tail_s=-"


def test_a_huge_metric_value_is_shown_as_missing_not_a_traceback(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(line(1, **{"timing_s/step": 10**400, "arena/judge_calls": 10**400}) + "\n")
    assert "step_s=- " in one_line(summarise(path, rc=0, wall_s=0))


@pytest.mark.parametrize("kind", ["folder", "dangling link", "link loop"])
def test_an_unreadable_file_is_named_and_the_summary_still_comes(tmp_path, kind):
    path = tmp_path / "metrics.jsonl"
    if kind == "folder":
        path.mkdir()
    elif kind == "dangling link":
        path.symlink_to(tmp_path / "gone")
    else:
        path.symlink_to(path)
    with pytest.raises(InputError, match="metrics.jsonl: cannot be read"):
        scan_records(path)
    summary = summarise(path, rc=3, wall_s=0)
    assert summary["rc"] == 3 and summary["steps"] == [] and "cannot be read" in summary["metrics_error"]
    assert one_line(summary).endswith("metrics=unreadable")


def test_a_missing_file_is_no_records(tmp_path):
    summary = summarise(tmp_path / "missing.jsonl", rc=1, wall_s=0)
    assert summary["steps"] == [] and summary["records_skipped"] == 0 and summary["metrics_error"] is None
