"""``arena-verl experiment --quick`` from nothing (CI's form of the learning experiment), with each trainer: the
warmed policy built (once, shared), the splits written, the rlvr arm and the arena_live arm (the step judge, a Python
judge in the real referee) run, with verl's real trainer on CPU through the recipes (``--trainer verl``) and with the
fast trainer (``--trainer fast``: the recipe's config, the arena's reward manager, referee and estimator, verl's loss,
in one process); every arm's steps logged once, results.json and the plots written; then the same command again
resumes: nothing is run twice. The figures of three steps mean nothing; the full grid is a benchmark
(docs/benchmarks/learning.md)."""

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import paths

QUICK_TIMEOUT_S = 1200  # both arms one after the other: 265 s here from nothing (docs/tools.md); a run: 600 at most


@pytest.fixture(scope="module")
def policy_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", params=["verl", "fast"])
def quick_grid(request, tmp_path_factory, policy_cache):
    root = tmp_path_factory.mktemp(f"experiment_{request.param}")
    command = [sys.executable, "-m", "arena_verl.tools.cli", "experiment", "--out", str(root / "grid"), "--quick",
               "--cache", str(policy_cache), "--trainer", request.param]  # fmt: skip
    first = _bounded(command, QUICK_TIMEOUT_S)
    second = _bounded(command, 120)
    return root / "grid", first, second, request.param


def _bounded(command: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Run the grid command; past ``timeout_s`` it gets SIGTERM (it stops its run, and the run's supervisor all it
    started), then SIGKILL: nothing outlives the test."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(command, cwd=paths.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGTERM)
        try:
            out, err = child.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
        err += f"\n[test] stopped after {timeout_s} s"
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def test_every_arm_ran_its_steps_once_and_the_report_is_written(quick_grid):
    out, first, _, trainer = quick_grid
    assert first.returncode == 0, first.stderr[-4000:]
    assert "run 1 of 2: rlvr seed 0" in first.stderr and "run 2 of 2: arena_live seed 0" in first.stderr
    results = json.loads((out / "results.json").read_text())
    assert set(results["arms"]) == {"rlvr", "arena_live"}
    for arm, record in results["arms"].items():
        (run,) = record["runs"]
        assert json.loads((out / "runs" / arm / "seed0" / "result.json").read_text())["trainer"] == trainer, arm
        assert run["seed"] == 0 and run["steps_logged"] == [1, 2, 3] and run["duplicate_steps"] == [], arm
        assert set(run["final"]) >= {"step_s", "generations", "val/chain_hard", "val/chain_all_wrong"}, arm
        assert [row["step"] for row in run["val"]] == [0, 3], arm  # before training and at the last step
        # Before and after training, per split, from verl's validation dumps: pass rate and valid prefix.
        for ends in (run["start"], run["end"]):
            assert set(ends) == {"test", "all_wrong"}, arm
            assert ends["test"]["pass"]["samples"] == 8 and 0 <= ends["test"]["prefix"]["mean"] <= 1, arm
        per_step = [json.loads(line) for line in (out / run["per_step"]).read_text().splitlines()]
        assert [row["step"] for row in per_step] == [1, 2, 3], arm
        for row in per_step:  # the update's own figures, logged by verl, and the batch's prefix from its dump
            assert all(row[k] is not None for k in ("entropy", "grad_norm", "pg_loss", "prefix", "score_mean")), row
        for row in run["steps"]:
            assert row["generations"] == 2 * 8 and row["fallbacks"] == 0, arm
            if arm == "rlvr":  # the verifier-only control routes nothing and never calls a judge
                assert row["judge_calls"] == 0 and row["groups_routed"] == 0, row
    assert results["val_sources"] == ["chain_all_wrong", "chain_hard"]
    assert set(results["paired"]) == {"arena_live"} and results["paired"]["arena_live"]["pass_hard"]["seeds"] == [0]
    for name in ("val_by_step.png", "val_by_generations.png", "non_diverse.png", "advantage.png", "report.html"):
        assert (out / name).stat().st_size > 0, name
    built = json.loads(next(out.parents[1].glob("cache*/step_policy-*/built.json")).read_text())
    assert built["group_kinds"]["prompts"] == 8


def test_the_python_judge_judged_in_the_real_referee(quick_grid):
    out, first, _, _ = quick_grid
    assert first.returncode == 0
    steps = json.loads((out / "runs" / "arena_live" / "seed0" / "result.json").read_text())["steps"]
    routed = [row for row in steps if row["groups_routed"]]
    # A barely warmed policy: most groups are non-diverse (all wrong), so the step judge is called.
    assert routed, steps
    for row in routed:
        assert row["judge_calls"] > 0 and row["nonzero_advantage_share"] >= row["nonzero_advantage_share_rlvr"]
    command = json.loads((out / "runs" / "arena_live" / "seed0" / "command.json").read_text())
    assert command["env"]["JUDGE"] == "python" and command["env"]["SETTING"] == "cpu"
    assert (out / "runs" / "arena_live" / "seed0" / "rollout").is_dir()  # dumps kept for analyze / audit-judge


def test_a_second_call_resumes_and_runs_nothing_again(quick_grid):
    out, first, second, _ = quick_grid
    assert first.returncode == 0 and second.returncode == 0, second.stderr[-2000:]
    assert "2 runs (2 arms x 1 seed), 2 finished, 0 to run" in second.stderr
    assert "run 1 of 2" not in second.stderr and "run 2 of 2" not in second.stderr
