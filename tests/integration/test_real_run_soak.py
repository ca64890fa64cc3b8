"""The real-run soak's quick form (scripts/bench/soak_run.py): verl's real trainer through the recipes' real branch for
13 minutes, the judge hanging from the run's first call, then every fault kind once. Marker ``soak``: by hand, alone
on the machine (``pytest -q -m soak``), not in CI; the hour-long run is the benchmark (docs/benchmarks/soak_run.md)."""

import json
import subprocess
import sys

import pytest

from helpers import paths

pytestmark = pytest.mark.soak


def test_a_short_soak_loses_nothing_and_leaves_nothing(tmp_path):
    out = tmp_path / "soak"
    command = [sys.executable, str(paths.REPO / "scripts" / "bench" / "soak_run.py"), "--out", str(out),
               "--minutes", "13", "--each", "1", "--min-gap-s", "30", "--hang-s", "45", "--garbage-s", "45",
               "--judge-down-s", "30"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=13 * 60 + 900)
    report = json.loads((out / "soak.json").read_text())
    assert result.returncode == 0, (report["findings"], result.stdout[-3000:], result.stderr[-3000:])
    assert report["steps"]["lost"] == [] and report["steps"]["twice"] == [] and report["samples_unrewarded"] == {}
    kinds = {fault["kind"] for fault in report["faults"]}
    assert kinds >= {"judge_hang_first", *report["resumes"]} and all(report["resumes"].values())
    assert report["breaker"]["openings"] >= 1 and report["breaker"]["closings"] >= 1
    hangs = [fault for fault in report["faults"] if "hang_extra_s" in fault]
    assert hangs and all(fault["hang_extra_s"] <= fault["hang_bound_s"] for fault in hangs)
    assert report["left_processes"] == [] and report["left_ray_temp"] == []
