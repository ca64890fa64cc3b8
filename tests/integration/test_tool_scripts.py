"""The tools as real processes: the documented script entry points (scripts/eval/evaluate.py, scripts/data/prepare.py,
``python -m arena_verl.data``) run as their shims, and ``arena-verl score`` resuming after a SIGKILL. What the
commands compute is checked in-process by the unit tier (tests/unit/evaluation, tests/unit/data, tests/unit/tools)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from arena_verl.data.benchmarks import PRESETS
from arena_verl.tools.score import read_score_file
from helpers import paths
from helpers.score_dumps import PATTERNS, keys_of, non_diverse_keys, score, write_dump

REPO = paths.REPO


def python(*args: str | Path) -> subprocess.CompletedProcess:
    """``python <args>`` from the repository root, its output captured."""
    return subprocess.run(
        [sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


# ---------------------------------------------------------------------------------------- the script entry points


def test_evaluate_script_exits_2_with_one_error_line(tmp_path):
    done = python("scripts/eval/evaluate.py", "--dumps", tmp_path / "nowhere")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ")


def test_prepare_script_lists_the_presets():
    done = python("scripts/data/prepare.py", "list")
    assert done.returncode == 0, done.stderr
    for preset in PRESETS.values():
        assert preset.name in done.stdout and preset.source in done.stdout


def test_data_module_marks_the_split_of_a_file_without_extra_info(tmp_path):
    source, target = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pd.DataFrame({"data_source": ["x"]}).to_parquet(source)
    done = python("-m", "arena_verl.data", "mark-split", source, "--split", "val", "--output", target)
    assert done.returncode == 0, done.stderr
    assert pd.read_parquet(target).extra_info[0] == {"split": "val"}
    assert "extra_info" not in pd.read_parquet(source).columns


# ------------------------------------------------------------------------------------------- arena-verl score


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("rollouts") / "rollout_data", PATTERNS)


def test_score_resumes_after_sigkill_without_losing_or_repeating_a_group(dump, tmp_path):
    out = tmp_path / "killed.jsonl"
    log = (tmp_path / "killed.log").open("w")
    command = [sys.executable, "-m", "arena_verl.tools.score", str(dump), "--judge", "simulated?latency=0.3"]
    command += ["--concurrency", "1", "--workers", "1", "--out", str(out)]
    # Its own session, so the kill reaches the run and its verifier processes, nothing else.
    run = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while (not out.exists() or out.read_bytes().count(b"\n") < 2) and run.poll() is None:
            assert time.monotonic() < deadline, "no score lines written"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):  # already gone: the return code below says why
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        log.close()
    assert run.returncode == -signal.SIGKILL, (tmp_path / "killed.log").read_text()
    before = out.read_bytes()
    complete = before[: before.rfind(b"\n") + 1]
    assert 2 <= complete.count(b"\n") < len(non_diverse_keys(PATTERNS))

    assert score(dump, out) == 0  # the same judge, without the latency (not part of its identity)
    after = out.read_bytes()
    assert after.startswith(complete)
    keys = keys_of(read_score_file(out))
    assert len(keys) == len(set(keys))
    assert set(keys) == non_diverse_keys(PATTERNS)
