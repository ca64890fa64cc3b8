"""The learning experiment's measures without a trainer: the valid prefix and pass rate of a validation dump (with
standard errors clustered by problem), the per-problem change between two validations, the gate's verdict on its
pilots, and the paired differences by seed that results.json reports."""

import json
import math

import pytest

from arena_verl.data.chain_arithmetic import ChainProblem, solution_text
from arena_verl.tools.experiment.arms import Candidate
from arena_verl.tools.experiment.gate import RISE_SE, gate_record, pilot_figures, registration
from arena_verl.tools.experiment.measures import clustered_mean, paired_change, rollout_prefix, validation_figures
from arena_verl.tools.experiment.results import certainty_default, paired, reach

A = ChainProblem((3, 4, 2), ("+", "-"))  # 3+4=7, 7-2=5
B = ChainProblem((9, 1, 5), ("-", "+"))  # 9-1=8, 8+5=13
HALF_A = "3+4=7\n7-2=9\nAnswer: 9"  # first step right, second wrong


def _dump(path, rows):
    lines = [json.dumps({"input": f"{q.question}\n", "output": o, "score": s}) for q, o, s in rows]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_validation_figures_read_prefix_and_pass_per_split(tmp_path):
    dump = _dump(
        tmp_path / "0.jsonl",
        [(A, solution_text(A), 1.0), (A, HALF_A, "0.0"), (B, "garbage", "nan"), (B, solution_text(B), "1.0")],
    )  # fmt: skip (scores as verl may write them)
    figures = validation_figures(dump, {"test": {A.question, B.question}, "all_wrong": {B.question}})
    assert figures["test"]["pass"]["mean"] == pytest.approx(0.5) and figures["test"]["pass"]["problems"] == 2
    assert figures["test"]["prefix"]["mean"] == pytest.approx((0.75 + 0.5) / 2)
    assert figures["all_wrong"]["prefix"]["mean"] == pytest.approx(0.5) and figures["all_wrong"]["pass"]["samples"] == 2
    assert figures["test"]["per_problem"][A.question] == [0.5, 0.75]


def test_validation_pass_is_the_tasks_own_answer_check_not_the_arms_reward(tmp_path):
    lucky = "3+4=8\n8-2=5\nAnswer: 5"  # right answer through a wrong step: the valid-chain reward scores it 0
    dump = _dump(tmp_path / "0.jsonl", [(A, lucky, 0.0), (A, solution_text(A), 0.0)])
    figures = validation_figures(dump, {"test": {A.question}})
    assert figures["test"]["pass"]["mean"] == 1.0 and figures["test"]["prefix"]["mean"] == pytest.approx(0.5)


def test_a_torn_line_and_a_problem_of_no_split_are_not_counted(tmp_path):
    dump = _dump(tmp_path / "3.jsonl", [(A, solution_text(A), 1.0)])
    with open(dump, "a") as handle:
        handle.write('{"input": "Compute 1+1 step by step.", "output": "1+1=2\\nAnswer: 2", "score": 1.0}\n{"inp')
    figures = validation_figures(dump, {"test": {A.question}})
    assert figures["test"]["pass"]["samples"] == 1
    assert rollout_prefix(dump) == pytest.approx(1.0)


def test_clustered_standard_error_is_over_problems_not_samples():
    figures = clustered_mean({"a": [1.0, 1.0, 1.0, 1.0], "b": [0.0, 0.0, 0.0, 0.0]})
    assert figures["mean"] == 0.5 and figures["se"] == pytest.approx(0.5)  # two problems, not eight samples
    assert clustered_mean({})["mean"] is None


def test_paired_change_is_per_problem():
    before = {q: [0.1, 0.2] for q in "abcd"}
    after = {"a": [0.3, 0.2], "b": [0.2, 0.2], "c": [0.3, 0.2], "d": [0.2, 0.2], "e": [1.0, 1.0]}
    change = paired_change(before, after, 0)
    assert change["problems"] == 4 and change["change"] == pytest.approx(0.15)
    assert change["se"] == pytest.approx(math.sqrt(0.01 / 3 / 4))


def _pilot(arm, seed, rate, pass_after, prefix_after, lengths=(40.0,) * 10):
    problems = [f"q{i}" for i in range(40)]
    start = {q: [0.1, 0.3] for q in problems}
    end = {q: [pass_after, prefix_after + (0.05 if i % 2 else -0.05)] for i, q in enumerate(problems)}
    return {
        "arm": arm,
        "seed": seed,
        "learning_rate": rate,
        "prompts_per_step": 32,
        "steps_logged": [1, 2],
        "steps": [{"response_length": v} for v in lengths],
        "start": {"pilot": {"per_problem": start}},
        "end": {"pilot": {"per_problem": end}},
    }


SEEDS = (11, 12, 13)


def _registered():
    candidates = (Candidate(1e-4, 32, 300), Candidate(5e-5, 32, 300), Candidate(2e-4, 32, 300, 10))
    return registration(candidates, SEEDS, ("valid_chain", "rlvr"))


def test_the_gate_passes_where_the_reference_moved_in_every_seed_and_picks_what_serves_rlvr_best():
    registered = _registered()
    mid, low, high = (c["label"] for c in registered["candidates"])  # 1e-4, 5e-5, 2e-4
    results = {
        # the reference moves in every seed at 1e-4 and 2e-4; at 5e-5 one seed stays put
        mid: [_pilot("valid_chain", s, 1e-4, 0.1, 0.4) for s in SEEDS]
        + [_pilot("rlvr", s, 1e-4, 0.1, 0.35) for s in SEEDS],
        low: [_pilot("valid_chain", s, 5e-5, 0.1, 0.4 if s != 12 else 0.3) for s in SEEDS]
        + [_pilot("rlvr", s, 5e-5, 0.1, 0.5) for s in SEEDS],
        high: [_pilot("valid_chain", s, 2e-4, 0.1, 0.5) for s in SEEDS]
        + [_pilot("rlvr", s, 2e-4, 0.1, 0.3) for s in SEEDS],
    }  # fmt: skip
    gate = gate_record(registered, results)
    by_label = {row["label"]: row for row in gate["candidates"]}
    assert by_label[mid]["passed"] and by_label[high]["passed"] and not by_label[low]["passed"]
    assert by_label[low]["reference_moved_seeds"] == [11, 13]
    # RLVR served best at 1e-4 (its prefix rose 0.05; at 2e-4 it stayed): 5e-5 is better for RLVR but did not pass
    assert gate["passed"] and gate["complete"] and gate["chosen"]["learning_rate"] == 1e-4
    assert by_label[mid]["rlvr_prefix_change"] == pytest.approx(0.05)


def test_the_gate_does_not_pass_on_too_few_seeds_or_unfinished_pilots():
    registered = _registered()
    label = registered["candidates"][0]["label"]
    two = {label: [_pilot("valid_chain", s, 1e-4, 0.1, 0.5) for s in SEEDS[:2]]}
    gate = gate_record(registered, two)
    assert not gate["passed"] and not gate["complete"] and gate["chosen"] is None
    assert gate_record(registered, {})["candidates"][0]["reference_seeds"] == 0


def test_the_gate_chooses_only_once_every_candidate_is_in():
    registered = _registered()
    first, second, third = (c["label"] for c in registered["candidates"])
    done = {first: [_pilot(arm, s, 1e-4, 0.1, 0.5) for s in SEEDS for arm in ("valid_chain", "rlvr")]}
    partial = {**done, second: [_pilot(arm, s, 5e-5, 0.1, 0.5) for s in SEEDS[:2] for arm in ("valid_chain", "rlvr")]}
    gate = gate_record(registered, partial)
    assert [row["passed"] for row in gate["candidates"]][0] and not gate["complete"]
    assert not gate["passed"] and gate["chosen"] is None  # the other candidates may still serve RLVR better


def test_a_pilot_that_shrank_is_marked_collapsed():
    figures = pilot_figures(_pilot("rlvr", 1, 1e-4, 0.1, 0.3, lengths=(40.0,) * 5 + (10.0,) * 5))
    assert figures["collapsed"] and not figures["moved"]
    assert figures["prefix_change"]["z"] is not None and abs(figures["prefix_change"]["z"]) < RISE_SE


def _run(seed, pass_hard):
    return {"seed": seed, "end": {"test": {"pass": {"mean": pass_hard}, "prefix": {"mean": 2 * pass_hard}}}}


def test_paired_differences_are_by_seed_with_a_t_interval():
    arm = [_run(0, 0.30), _run(1, 0.25), _run(2, 0.40), _run(3, 0.5)]
    baseline = [_run(0, 0.20), _run(1, 0.25), _run(2, 0.30)]  # seed 3 missing: not paired
    result = paired(arm, baseline)["pass_hard"]
    assert result["seeds"] == [0, 1, 2] and result["mean"] == pytest.approx(0.2 / 3)
    low, high = result["ci95"]
    assert low < result["mean"] < high
    assert paired(arm, baseline)["prefix_hard"]["mean"] == pytest.approx(0.4 / 3)
    assert paired(arm, baseline)["prefix_all_wrong"] == {"mean": None, "ci95": None, "seeds": []}


def _curve_run(seed, prefixes, se=0.01, step_every=25):
    curve = [
        {"step": i * step_every, "generations_cumulative": i * step_every * 256.0,
         "test": {"prefix": {"mean": value, "se": se}, "pass": {"mean": value / 2, "se": se}}}
        for i, value in enumerate(prefixes)
    ]  # fmt: skip
    return {"seed": seed, "val_curve": curve}


def test_reach_is_the_first_step_an_arms_mean_curve_meets_rlvrs_final_value():
    results = {
        "rlvr": [_curve_run(0, [0.30, 0.33, 0.36]), _curve_run(1, [0.30, 0.34, 0.38])],  # moved: final 0.37
        "arena_live": [_curve_run(0, [0.30, 0.38, 0.40]), _curve_run(1, [0.30, 0.36, 0.40])],
        "arena_live_random": [_curve_run(0, [0.30, 0.30, 0.31]), _curve_run(1, [0.30, 0.31, 0.30])],
    }
    out = reach(results)
    assert out["rlvr_moved"] and out["target"] == pytest.approx(0.37)
    assert out["arms"]["arena_live"] == {"step": 25, "generations": 25 * 256.0}
    assert out["arms"]["rlvr"]["step"] == 50 and out["arms"]["arena_live_random"] == "not reached"
    # RLVR that did not move: the target is its start plus three of its standard errors
    still = {"rlvr": [_curve_run(0, [0.30, 0.30, 0.31], se=0.02)], "arena_live": [_curve_run(0, [0.30, 0.35, 0.37])]}
    out = reach(still)
    assert not out["rlvr_moved"] and out["target"] == pytest.approx(0.36) and out["arms"]["arena_live"]["step"] == 50


def test_certainty_default_follows_the_preregistered_rule():
    def pair(mean, low):
        return {"prefix_hard": {"mean": mean, "ci95": [low, mean + 0.02], "seeds": list(range(8))}}

    good = {"arena_live_random_certain": pair(0.01, -0.02), "arena_live_certain": pair(0.0, -0.02),
            "arena_live_noisy_certain": pair(0.01, -0.01)}  # fmt: skip
    assert certainty_default(good)["on"] is True
    assert certainty_default({**good, "arena_live_random_certain": pair(-0.01, -0.03)})["on"] is False
    assert certainty_default({**good, "arena_live_noisy_certain": pair(0.0, -0.05)})["on"] is False
    assert certainty_default({k: v for k, v in good.items() if k != "arena_live_certain"})["on"] is None
    early = {k: {"prefix_hard": {**v["prefix_hard"], "seeds": [0, 1]}} for k, v in good.items()}
    verdict = certainty_default(early)  # fewer seeds than pre-registered: a provisional verdict, no decision
    assert verdict["on"] is None and verdict["provisional"] is True
