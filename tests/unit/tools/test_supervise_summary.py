"""The supervisor's summary (arena_verl.tools.supervise), in-process with the trainer run stubbed: summary.json is
always written and the status is always the trainer's, whatever its metrics file holds; bad flags and an unwritable
--out are exit 2 before anything starts."""

import json
import os

import pytest

from arena_verl.tools import supervise


class Calls(list):
    status = 0


@pytest.fixture
def calls(monkeypatch):
    calls = Calls()

    def fake(command, timeout_s, log_path, grace_s=10.0, *, copy_to_stdout, env=None):
        assert copy_to_stdout  # the trainer's output goes to the terminal too
        assert env is not None and env.get("PATH") == os.environ.get("PATH")  # this process's, with Ray's folder
        calls.append(command)
        return calls.status, 4.2, 1

    monkeypatch.setattr(supervise, "run_supervised", fake)
    return calls


CORRUPT = {
    "null step": '{"step": null, "data": {"training/global_step": null}}',
    "infinite step": '{"step": 2, "data": {"training/global_step": Infinity}}',
    "not an object": "[1]",
    "torn last line": '{"step": 3, "da',
}


@pytest.mark.parametrize("name", CORRUPT)
@pytest.mark.parametrize("status", [0, 1])
def test_a_corrupt_record_keeps_the_summary_and_the_status(tmp_path, calls, capsys, name, status):
    calls.status = status
    metrics = tmp_path / "metrics.jsonl"
    good = json.dumps({"step": 1, "data": {"training/global_step": 1, "timing_s/step": 2.0}})
    metrics.write_text(good + "\n" + CORRUPT[name] + "\n")
    rc = supervise.main(["--timeout", "60", "--out", str(tmp_path), "--metrics", str(metrics), "--", "train"])
    assert rc == status and calls == [["train"]]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rc"] == status and summary["steps_completed"] == 1 and summary["records_skipped"] == 1
    assert summary["processes_reaped"] == 1
    out = capsys.readouterr().out
    assert out.startswith(f"cpu_smoke: rc={status} steps=1 ") and "records_skipped=1" in out


def test_non_utf8_metrics_keep_the_summary(tmp_path, calls):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_bytes(b'{"step": 1, "data": {"training/global_step": 1}}\n\xff\xfe\n')
    assert supervise.main(["--timeout", "60", "--out", str(tmp_path), "--metrics", str(metrics), "--", "x"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["records_skipped_by_reason"] == {"not UTF-8": 1}


def test_an_unreadable_metrics_file_keeps_the_summary(tmp_path, calls):
    (tmp_path / "metrics.jsonl").mkdir()
    calls.status = 7
    argv = ["--timeout", "60", "--out", str(tmp_path / "o"), "--metrics", str(tmp_path / "metrics.jsonl"), "--", "x"]
    assert supervise.main(argv) == 7
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["rc"] == 7 and "cannot be read" in summary["metrics_error"]


@pytest.mark.parametrize("timeout", ["nan", "inf", "0", "-5"])
def test_a_bad_timeout_is_refused_before_the_run(tmp_path, calls, capsys, timeout):
    rc = supervise.main(["--timeout", timeout, "--out", str(tmp_path), "--metrics", str(tmp_path / "m"), "--", "x"])
    assert rc == 2 and calls == []
    assert capsys.readouterr().err.startswith("error: --timeout")


def test_no_command_is_refused(tmp_path, calls, capsys):
    assert supervise.main(["--timeout", "5", "--out", str(tmp_path), "--metrics", str(tmp_path / "m")]) == 2
    assert calls == [] and "no command" in capsys.readouterr().err


def test_an_unwritable_out_is_refused_before_the_run(tmp_path, calls, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc = supervise.main(["--timeout", "5", "--out", str(blocker / "out"), "--metrics", str(tmp_path / "m"), "--", "x"])
    assert rc == 2 and calls == []
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and err.count("\n") == 1


def test_a_summary_that_cannot_be_written_is_said_and_the_status_kept(tmp_path, calls, capsys, monkeypatch):
    def full_disk(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    args = ["--timeout", "5", "--out", str(tmp_path), "--metrics", str(tmp_path / "m"), "--", "x"]
    calls.status = 1
    assert supervise.main(args) == 1
    calls.status = 0
    assert supervise.main(args) == 2  # a clean run whose summary is missing is not a success
    captured = capsys.readouterr()
    assert "summary" in captured.err and "No space left on device" in captured.err
    assert "cpu_smoke: rc=0 steps=0" in captured.out and not (tmp_path / "summary.json").exists()


def test_a_command_that_cannot_start_still_gets_its_summary(tmp_path, capsys):
    out = tmp_path / "run"
    rc = supervise.main(["--timeout", "5", "--out", str(out), "--metrics", str(tmp_path / "m.jsonl"), "--", "/no/such"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err == "error: /no/such: cannot be started (No such file or directory)\n"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rc"] == supervise.COMMAND_NOT_STARTED_RC and summary["steps"] == []


def test_metric_values_that_are_no_finite_number_are_null_and_counted(tmp_path, calls, capsys):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(
        '{"step": 1, "data": {"training/global_step": 1, "timing_s/step": NaN, "critic/rewards/mean": Infinity, '
        '"arena/groups": "eight", "arena/judge_calls": 3, "arena/flag": true, "actor/lr": null}}\n'
        '{"step": 1, "data": {"val-core/math/reward/mean@2": -Infinity}}\n'
    )
    assert supervise.main(["--timeout", "60", "--out", str(tmp_path), "--metrics", str(metrics), "--", "x"]) == 0
    text = (tmp_path / "summary.json").read_text()
    summary = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in summary.json"))
    json.dumps(summary, allow_nan=False)
    (step,) = summary["steps"]
    assert step["timing_s/step"] is None and step["critic/rewards/mean"] is None and step["arena/groups"] is None
    assert step["arena/flag"] is None and step["arena/judge_calls"] == 3 and step["actor/lr"] is None
    assert summary["val"] == {"val-core/math/reward/mean@2": None}
    assert summary["metrics_nulled"] == 5  # the null was null already
    captured = capsys.readouterr()
    (warning,) = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert "5 metric value(s)" in warning and "step 1 'timing_s/step': NaN" in warning
    assert "validation at step 1 'val-core/math/reward/mean@2': -Infinity" in warning
    assert "metrics_nulled=5" in captured.out
