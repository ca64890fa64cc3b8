"""``arena-verl experiment`` without a trainer: a run's curves from a metrics file, the figures across seeds, the cost
columns, the report, and the grid's bookkeeping (order, overrides, one experiment per folder, bad flags)."""

import argparse
import dataclasses
import json
import math

import pytest
from scipy import stats

from arena_verl.core.errors import InputError
from arena_verl.evaluation.costs import cost_columns, cost_rows
from arena_verl.tools.experiment import command, gate_runs
from arena_verl.tools.experiment.arms import ARMS, FULL, QUICK, Candidate
from arena_verl.tools.experiment.curves import run_curves
from arena_verl.tools.experiment.grid import Run, grid_runs, run_overrides
from arena_verl.tools.experiment.report import PLOTS, result_rows, write_report
from arena_verl.tools.experiment.results import aggregate, t_interval

SOURCES = ("chain_math", "chain_math_heldout")


def _record(step, **data):
    return json.dumps({"step": step, "data": {"training/global_step": step, **data}})


def _metrics(folder, steps, val_every=2, generations=lambda s: 32.0, acc=lambda s: 0.1 * s, duplicate=None):
    (folder / "metrics").mkdir(parents=True)
    lines = [json.dumps({"step": 0, "data": {f"val-core/{s}/acc/mean@2": 0.05 for s in SOURCES}})]
    for step in range(1, steps + 1):
        data = {
            "timing_s/step": 2.0 + step,
            "arena/generations": generations(step),
            "arena/all_correct_share": 0.25,
            "arena/all_incorrect_share": 0.25,
            "arena/nonzero_advantage_share_rlvr": 0.5,
            "arena/mean_abs_advantage_rlvr": 0.4,
            "response_length/mean": 40.0,
            "arena/judge_calls": 0,
            "arena/tail_after_last_sample_s": 0.0,
        }
        if step % val_every == 0 or step == steps:
            data.update({f"val-core/{s}/acc/mean@2": acc(step) for s in SOURCES})
        lines.append(_record(step, **data))
        if step == duplicate:
            lines.append(_record(step, **data))
    lines.append("{torn")
    (folder / "metrics" / "a.jsonl").write_text("\n".join(lines) + "\n")


def test_curves_of_a_run(tmp_path):
    _metrics(tmp_path, 5, duplicate=3)
    curves = run_curves(tmp_path)
    assert curves["steps_logged"] == [1, 2, 3, 4, 5]
    assert curves["duplicate_steps"] == [3]
    assert [row["step"] for row in curves["val"]] == [0, 2, 4, 5]
    assert curves["val"][0]["generations_cumulative"] == 0.0
    assert curves["val"][2]["generations_cumulative"] == 4 * 32.0
    assert curves["val"][-1]["chain_math_heldout"] == pytest.approx(0.5)
    # rlvr logs only the verifier's figure: the run trained on it
    assert curves["steps"][0]["nonzero_advantage_share"] == 0.5
    assert curves["final"]["val/chain_math"] == pytest.approx(0.5) and curves["final"]["step"] == 5


def test_t_interval_is_students():
    values = [0.2, 0.3, 0.55]
    got = t_interval(values)
    mean = sum(values) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
    half = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert got["mean"] == pytest.approx(mean) and got["high"] - got["mean"] == pytest.approx(half)
    assert t_interval([0.4]) == {"mean": 0.4, "low": None, "high": None, "n": 1}
    assert t_interval([None, float("nan")])["n"] == 0


def _runs(tmp_path, arm, seeds, **kwargs):
    out = []
    for seed in range(seeds):
        folder = tmp_path / arm / str(seed)
        _metrics(folder, 4, **kwargs)
        out.append({"arm": arm, "seed": seed, "wall_s": 1.0, **run_curves(folder)})
    return out


def test_aggregate_budget_and_costs(tmp_path):
    results = {
        "rlvr": _runs(tmp_path, "rlvr", 3),
        # DAPO regenerates: 64 generations a step, so it reaches the budget (rlvr's 128) at step 2
        "rlvr_dapo": _runs(tmp_path, "rlvr_dapo", 3, generations=lambda s: 64.0, val_every=1),
    }
    summary = aggregate(results, {"rlvr": "RLVR"}, dataclasses.asdict(QUICK), {})
    assert summary["generation_budget"] == 128.0
    dapo = summary["arms"]["rlvr_dapo"]["across_seeds"]
    assert dapo["val_at_budget/chain_math"]["mean"] == pytest.approx(0.2)  # step 2, 128 generations
    assert dapo["val_last/chain_math"]["mean"] == pytest.approx(0.4)
    assert summary["arms"]["rlvr"]["across_seeds"]["val_at_budget/chain_math"]["mean"] == pytest.approx(0.4)
    assert [run["steps_logged"] for run in summary["arms"]["rlvr"]["runs"]] == [[1, 2, 3, 4]] * 3
    costs = summary["costs"]
    assert costs["rlvr_dapo"]["generations_per_step"] == 64.0
    assert costs["rlvr_dapo"]["vs_rlvr"]["generations_per_step"] == pytest.approx(2.0)
    assert costs["rlvr"]["step_s"] == pytest.approx(5.0)  # steps 2..4 (the first carries the warm-up)
    assert costs["rlvr"]["generations_per_useful_sample"] == pytest.approx(2.0)
    header, rows = result_rows(summary)
    assert len(rows) == 2 and header[0] == "arm"
    files = write_report(summary, tmp_path)
    assert (tmp_path / "report.html").read_text().count("<img") == len(files) - 1 == len(PLOTS)
    assert "| rlvr_dapo |" in (tmp_path / "results.md").read_text()


def test_cost_rows_without_a_baseline():
    table = cost_columns({"arena_live": [[{"step_s": 3.0, "generations": 32.0, "nonzero_advantage_share": 0.0}]]})
    assert table["arena_live"]["generations_per_useful_sample"] is None  # nothing useful: no ratio, no crash
    header, rows = cost_rows(table)
    assert rows[0][0] == "arena_live" and rows[0][-1] == "-"
    assert rows[0][header.index("judge computed tokens/step")] == "-"  # a run that did not log it: no figure


def test_the_judges_computed_tokens_per_step_are_a_cost_column():
    steps = [{"step_s": 2.0, "generations": 16.0, "judge_computed_tokens": tokens} for tokens in (900.0, 1100.0)]
    table = cost_columns({"arena_live": [steps, [{"step_s": 2.0, "judge_computed_tokens": 1600.0}]]})
    assert table["arena_live"]["judge_computed_tokens_per_step"] == pytest.approx(1200.0)
    header, rows = cost_rows(table)
    assert rows[0][header.index("judge computed tokens/step")] == "1200"


def test_grid_order_and_cost_arm_at_one_seed():
    arms = [ARMS["rlvr"], ARMS["arena_live"], ARMS["arena_live_slow"]]
    runs = grid_runs(arms, 2)
    assert [(r.arm.name, r.seed) for r in runs] == [
        ("rlvr", 0),
        ("arena_live", 0),
        ("arena_live_slow", 0),
        ("rlvr", 1),
        ("arena_live", 1),
    ]


def test_run_overrides_carry_the_judge_knobs_and_seed(tmp_path):
    overrides = run_overrides(Run(ARMS["arena_live"], 2), FULL, tmp_path)
    assert "reward.arena.judge.callable_kwargs={seed:2}" in overrides  # the exact step judge: no noise knobs
    assert f"trainer.rollout_data_dir='{tmp_path / 'rollout'}'" in overrides
    assert f"trainer.validation_data_dir='{tmp_path / 'validation'}'" in overrides
    assert not any("certainty_weighting" in o for o in overrides)
    certain = run_overrides(Run(ARMS["arena_live_random_certain"], 1), FULL, tmp_path)
    assert "reward.arena.certainty_weighting=true" in certain
    assert ARMS["arena_live_random_certain"].judge.endswith("random_judge:judge")
    assert not any("callable_kwargs" in o for o in run_overrides(Run(ARMS["rlvr"], 0), QUICK, tmp_path))
    assert "data.train_batch_size=8" in overrides and "actor_rollout_ref.rollout.n=8" in overrides


def _args(tmp_path, **kwargs):
    defaults = dict(out=tmp_path / "grid", seeds=None, arms=None, quick=True, cache=tmp_path, report_only=False,
                    jobs=1, gate=False, candidates=None, trainer="fast")  # fmt: skip
    return argparse.Namespace(**{**defaults, "policy": None, **kwargs})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"arms": "rlvr,nope"}, "unknown"),
        ({"arms": "rlvr,rlvr"}, "repeated"),
        ({"arms": ","}, "empty"),
        ({"seeds": 0}, "--seeds"),
        ({"seeds": 21}, "--seeds"),
        ({"jobs": 0}, "--jobs"),
        ({"jobs": 9}, "--jobs"),
        ({"jobs": True}, "--jobs"),
        ({"candidates": "1e-4:32:300"}, "--candidates"),
        ({"candidates": "x:32:300:0"}, "--candidates"),
        ({"candidates": "0:32:300:0"}, "--candidates"),
        ({"candidates": "1e-4:0:300:0"}, "prompts"),
        ({"candidates": "1e-4:32:0:0"}, "steps"),
        ({"candidates": "1e-4:32:300:300"}, "warm-up"),
        ({"candidates": "1e-4:32:300:0,1e-4:32:300:0"}, "twice"),
    ],
)
def test_bad_flags_are_refused_before_anything_runs(tmp_path, kwargs, message):
    with pytest.raises(InputError, match=message):
        command.run(_args(tmp_path, **kwargs))
    assert not (tmp_path / "grid").exists()


def test_out_with_a_quote_is_refused(tmp_path):
    with pytest.raises(InputError, match="quotes"):
        command.run(_args(tmp_path, out=tmp_path / "it's"))


def test_one_experiment_per_folder(tmp_path):
    out = tmp_path / "grid"
    command._claim(out, {"plan": 1, "levels": ((4, 9),)})
    command._claim(out, {"plan": 1, "levels": ((4, 9),)})  # the same settings: resumed (tuples read back as lists)
    with pytest.raises(InputError, match="other settings"):
        command._claim(out, {"plan": 2, "levels": ((4, 9),)})


def test_runs_in_threads_all_run_and_one_error_stops_the_others():
    import threading
    import time

    done = []

    def attempt(index, item):
        time.sleep(0.01)
        done.append(item)

    command._in_threads(attempt, list("abcde"), 2, threading.Event())
    assert sorted(done) == list("abcde")  # every run, each once

    stop, seen_stop = threading.Event(), []

    def failing(index, item):
        if item == "bad":
            raise OSError("disk full")
        for _ in range(500):  # a run in progress: it ends when stop is set (run_one stops its recipe then)
            if stop.is_set():
                seen_stop.append(item)
                return
            time.sleep(0.01)

    started = time.monotonic()
    with pytest.raises(OSError, match="disk full"):
        command._in_threads(failing, ["long", "bad", "never"], 2, stop)
    # The run in progress stopped (a queued one may have started before the cancel: it stops as soon as it looks).
    assert "long" in seen_stop and time.monotonic() - started < 4


def test_a_pilots_plan_and_label_carry_its_candidate():
    candidate = Candidate(1e-5, 32, 90, 5)
    plan = gate_runs.gate_plan(FULL, candidate)
    assert (plan.learning_rate, plan.prompts_per_step, plan.steps, plan.test_freq) == (1e-5, 32, 90, 90)
    assert plan.val_splits == ("pilot",) and plan.warmup_steps == 5
    assert "actor_rollout_ref.actor.optim.lr_warmup_steps=5" in plan.overrides()
    # its bound grows with the samples it trains on (12 times the plan's here) and never falls below the plan's
    assert plan.timeout_s == 12 * FULL.timeout_s
    assert gate_runs.gate_plan(FULL, Candidate(1e-5, 2, 10)).timeout_s == FULL.timeout_s
    assert gate_runs.gate_label(candidate, "rlvr") == "gate_lr1e-05_p32_s90_w5_rlvr"


@pytest.mark.parametrize("passed, grid", [(False, "not run: no candidate"), (True, "not run yet")])
def test_results_hold_the_gate_and_say_why_the_grid_has_not_run(tmp_path, passed, grid):
    assets = {"policy": tmp_path / "policy"}
    arms = [ARMS[name] for name in ("rlvr", "arena_live")]
    assert command.write_results(tmp_path, arms, FULL, assets) is None  # neither runs nor a gate: nothing to write
    gate = {"passed": passed, "complete": True, "candidates": [{"label": "x", "passed": passed}]}
    (tmp_path / "gate.json").write_text(json.dumps(gate))
    command.write_results(tmp_path, arms, FULL, assets)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["gate"] == gate and written["grid"].startswith(grid)
    assert written["arms"] == written["paired"] == written["paired_control"] == {}
    assert not (tmp_path / "report.html").exists()  # no report of a grid that has not run


def test_an_arm_may_have_more_seeds_than_the_grid():
    arms = [ARMS["rlvr"], ARMS["arena_live_noisy"]]
    runs = grid_runs(arms, 2, {"arena_live_noisy": 3})
    assert [(r.name, r.seed) for r in runs] == [
        ("rlvr", 0), ("arena_live_noisy", 0), ("rlvr", 1), ("arena_live_noisy", 1), ("arena_live_noisy", 2)
    ]  # fmt: skip
