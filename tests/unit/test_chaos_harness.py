"""The fault harness (tests/helpers/chaos.py) polls the judge's call log every 0.2 s for the whole run: each poll
reads only what was appended (it re-read the whole log once per logged step, quadratic over a long run)."""

from pathlib import Path

import pytest

from helpers.chaos import JudgeProcess, LineCounter


def test_the_call_count_reads_only_new_lines(tmp_path, monkeypatch):
    judge = JudgeProcess(tmp_path)
    with open(judge.calls_log, "w") as log:
        log.writelines(f'{{"n": {i}}}\n' for i in range(5000))
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("the whole log was read again"))
    assert judge.calls == 5000
    with open(judge.calls_log, "a") as log:
        log.write('{"n": 5000}\n{"n": 50')  # the last line still being written
    assert judge.calls == 5001
    with open(judge.calls_log, "a") as log:
        log.write("01}\n")
    assert judge.calls == 5002 and judge._answered.offset == judge.calls_log.stat().st_size


def test_a_missing_log_counts_nothing(tmp_path):
    assert LineCounter(tmp_path / "none.log").count() == 0
