"""``arena-verl audit-judge --judge simulated`` on the bundled real SmolLM2 traces, in a subprocess where vLLM, Ray
and torch cannot be imported: the command starts and runs without them, writes the pinned summary.json, and a rerun
resumes (judges nothing)."""

from __future__ import annotations

import json
import subprocess
import sys

from arena_verl.evaluation.audit import FIGURE_KEYS

# The console script's own entry point, with the heavy SDKs made unimportable first.
_RUN = (
    "import sys\n"
    "for name in ('vllm', 'ray', 'torch'):\n"
    "    sys.modules[name] = None\n"
    "from arena_verl.tools.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
COUNTS = ("pairs_labelled", "pairs_same_outcome", "calls", "calls_without_verdict", "calls_low_mass")


def audit(out, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", _RUN, "audit-judge", "--judge", "simulated", "--out", str(out), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_simulated_audit_of_the_bundled_traces_runs_without_vllm_and_resumes(tmp_path):
    out = tmp_path / "audit_report"
    done = audit(out)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary)[: len(FIGURE_KEYS) + 2] == [*FIGURE_KEYS, "judge", "verdict"]
    assert all(type(summary[key]) is int for key in COUNTS)
    # The bundled traces: 8 diverse groups (74 labelled candidates) and 8 non-diverse groups of 8 (2 triples each).
    assert (summary["pairs_labelled"], summary["pairs_same_outcome"]) == (64, 48)
    assert summary["calls"] == 224 and summary["calls_without_verdict"] == 0
    assert summary["simulated"] is True and "SIMULATED" in done.stderr
    assert summary["tokens_in_per_call"] is None and summary["tokens_out_per_call"] is None
    assert 0.0 <= summary["accuracy"] <= 1.0 and summary["transitivity_violations"] is not None
    assert summary["run"]["verification"].startswith("answer_extraction=lenient")  # the bundled traces' own mode
    (line,) = done.stdout.splitlines()
    assert line.startswith("audit of simulated (SIMULATED judge), verdict generate: 64 labelled + 48 same-outcome")
    again = audit(out)
    assert again.returncode == 0, again.stderr
    assert "112 pairs already judged; 0 to go" in again.stderr
    rerun = json.loads((out / "summary.json").read_text())
    assert {k: rerun[k] for k in FIGURE_KEYS if k != "seconds_per_call"} == {
        k: summary[k] for k in FIGURE_KEYS if k != "seconds_per_call"
    }
