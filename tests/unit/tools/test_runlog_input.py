"""``runlog``'s input contract (arena_verl.tools.runlog): corrupt records are skipped and counted, never a
traceback; no metrics, an unreadable file and an unwritable --json are one error line and exit 2, before any table."""

import json

import pytest

from arena_verl.tools import runlog


def record(step, **data) -> str:
    return json.dumps({"step": step, "data": {"training/global_step": step, **data}})


@pytest.mark.parametrize(
    "bad",
    [
        '{"step": null, "data": {"training/global_step": null}}',
        '{"step": 2, "data": {"training/global_step": Infinity}}',
        record(-2),
        record(2.5),
        record("2"),
        '{"step": 3, "da',
    ],
)
def test_a_bad_step_is_skipped_and_counted(tmp_path, capsys, bad):
    run = tmp_path / "run"
    (run / "metrics").mkdir(parents=True)
    (run / "metrics" / "a.jsonl").write_text(record(1, **{"timing_s/step": 4.0}) + "\n" + bad + "\n")
    out = tmp_path / "out.json"
    assert runlog.main([str(run), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "(1 metrics records skipped: " in printed
    report = json.loads(out.read_text())[str(run)]
    assert [row["step"] for row in report["steps"]] == [1.0]
    assert report["records_skipped"] == 1 and sum(report["records_skipped_by_reason"].values()) == 1


def test_a_huge_metric_is_missing_not_a_traceback(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1, **{"timing_s/step": 10**400}) + "\n")
    assert runlog.step_rows(path) == [{c: (1.0 if c == "step" else None) for c, _ in runlog.COLUMNS}]


def test_a_run_without_metrics_is_named(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert runlog.main([str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'empty'}: no metrics") and err.count("\n") == 1


def test_the_metrics_folder_itself_is_a_run(tmp_path):
    (tmp_path / "run" / "metrics").mkdir(parents=True)
    (tmp_path / "run" / "metrics" / "a.jsonl").write_text(record(1) + "\n")
    assert [row["step"] for row in runlog.step_rows(tmp_path / "run" / "metrics")] == [1.0]


@pytest.mark.parametrize("kind", ["folder", "dangling link", "attempt folder"])
def test_an_unreadable_metrics_file_is_one_line(tmp_path, capsys, kind):
    run = tmp_path / "run"
    (run / "metrics").mkdir(parents=True)
    if kind == "folder":
        (run / "metrics.jsonl").mkdir()
        given = run
    elif kind == "attempt folder":
        (run / "metrics" / "2.jsonl").mkdir()
        given = run
    else:
        given = tmp_path / "metrics.jsonl"
        given.symlink_to(tmp_path / "gone")
    assert runlog.main([str(given)]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and err.count("\n") == 1


def test_an_unwritable_json_is_exit_2_before_any_table(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1) + "\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert runlog.main([str(path), "--json", str(blocker / "out.json")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: --json ") and captured.err.count("\n") == 1


def test_json_onto_an_input_is_refused(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1) + "\n")
    assert runlog.main([str(path), "--json", str(path)]) == 2
    assert path.read_text() == record(1) + "\n" and "one of the metrics files" in capsys.readouterr().err


def test_a_step_logged_twice_is_counted_and_named_and_its_last_record_kept(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "metrics").mkdir(parents=True)
    first = [record(1, **{"timing_s/step": 1.0}), record(2, **{"timing_s/step": 2.0})]
    (run / "metrics" / "a.jsonl").write_text("\n".join([*first, record(2, **{"timing_s/step": 3.0})]) + "\n")
    (run / "metrics" / "b.jsonl").write_text(record(2, **{"timing_s/step": 4.0}) + "\n" + record(3) + "\n")
    out = tmp_path / "out.json"
    assert runlog.main([str(run), "--json", str(out)]) == 0
    report = json.loads(out.read_text())[str(run)]
    assert [(row["step"], row["step_s"]) for row in report["steps"]] == [(1.0, 1.0), (2.0, 4.0), (3.0, None)]
    assert report["duplicate_steps"] == [2] and report["duplicate_records"] == 2
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert f"{run}: 1 step(s) logged more than once (step 2; 2 earlier record(s) not used)" in warning


def test_a_run_without_repeated_steps_has_no_warning(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    path.write_text(record(1) + "\n" + record(2) + "\n")
    assert runlog.main([str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
