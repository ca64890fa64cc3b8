"""One dump reader for ``arena-verl analyze``, ``arena-verl score`` and the evaluation: the same dump, with a parquet
whose ground truth disagrees with the dump's for one prompt, is verified against the same ground truth (the dump's)
with the same outcome per prompt by all three, and each reports the disagreement (stderr and its JSON output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena_verl.data.dumps import read_dump_file, read_validation_data
from arena_verl.data.prompt_match import PromptIndex
from arena_verl.tools.analyze.command import main as analyze
from arena_verl.tools.evaluate import main as evaluate
from arena_verl.tools.score import main as score
from arena_verl.tools.score import read_score_file
from helpers.verl_dumps import write_v1_lines, write_verl_parquet

N = 4
# data source -> (question, the dump's gts, the parquet's ground truth, the answers of the N samples)
PROMPTS = {
    "aime_disagreeing": ("What is 4 + 5?", "9", "10", ["9", "9", "9", "9"]),  # right by the dump, wrong by --data
    "aime_wrong": ("What is 6 * 7?", "42", "42", ["41", "40", "43", "44"]),
    "aime_mixed": ("What is 2 + 2?", "4", "4", ["4", "5", "4", "3"]),
}
# The outcome per data source under the dump's ground truth (under the parquet's, aime_disagreeing is all wrong).
EXPECTED = {"aime_disagreeing": "all_correct", "aime_wrong": "all_incorrect", "aime_mixed": "mixed"}
NOTE = "1 prompt(s) have another ground truth in --data than in the dump: verified against the dump's gts"


@pytest.fixture
def run(tmp_path) -> tuple[Path, Path]:
    prompts = [
        (question, gts, [f"Adding up, the answer is \\boxed{{{a}}}." for a in answers], [0.5] * N)
        for question, gts, _, answers in PROMPTS.values()
    ]
    dump = write_v1_lines(tmp_path / "validation", 7, prompts).parent
    rows = [(source, "math", question, truth) for source, (question, _, truth, _) in PROMPTS.items()]
    return dump, write_verl_parquet(tmp_path / "val.parquet", rows, split="test")


def outcome(correct: list[bool]) -> str:
    return "all_correct" if all(correct) else "all_incorrect" if not any(correct) else "mixed"


def test_the_reader_keeps_the_dumps_ground_truth_and_counts_the_disagreement(run):
    dump, data = run
    file = read_dump_file(dump / "7.jsonl", PromptIndex(read_validation_data([data])))
    truths = {prompt.samples[0].benchmark: prompt.samples[0].ground_truth for prompt in file.prompts}
    assert truths == {source: gts for source, (_, gts, _, _) in PROMPTS.items()}
    (disagreement,) = file.disagreements
    assert (disagreement.dumped, disagreement.parquet) == ("9", "10")


def test_analyze_score_and_evaluate_verify_against_the_same_truth_and_report_it(run, tmp_path, capsys):
    dump, data = run
    # analyze: summary.json per data source
    assert analyze([str(dump), "--out", str(tmp_path / "report"), "--data", str(data), "--workers", "1"]) == 0
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    analyzed = {
        source: next(key for key in ("all_correct", "all_incorrect", "mixed") if counts[key])
        for source, counts in summary["totals"]["data_sources"].items()
    }
    assert summary["totals"]["ground_truth_disagreements"] == 1
    assert NOTE in capsys.readouterr().err

    # score: the non-diverse groups it judges, with their common verifier reward
    out = tmp_path / "scores.jsonl"
    assert score([str(dump), "--judge", "simulated", "--out", str(out), "--data", str(data), "--workers", "1"]) == 0
    lines = {line["data_source"]: line for line in read_score_file(out)}
    scored = {
        source: "all_correct" if line["verifier_reward"] == 1.0 else "all_incorrect" for source, line in lines.items()
    }
    assert {source: line["ground_truth_disagrees"] for source, line in lines.items()} == {
        "aime_disagreeing": True,
        "aime_wrong": False,
    }
    assert NOTE in capsys.readouterr().err

    # evaluate: avg@n per benchmark (1: every sample correct, 0: none)
    report = tmp_path / "eval.json"
    assert evaluate(["--dumps", str(dump), "--data", str(data), "--workers", "1", "--json", str(report)]) == 0
    payload = json.loads(report.read_text())
    ratios = {b["benchmark"]: b["avg_pass_ratio"] for b in payload["steps"][0]["benchmarks"]}
    evaluated = {s: "all_correct" if r == 1.0 else "all_incorrect" if r == 0.0 else "mixed" for s, r in ratios.items()}
    assert payload["ground_truth_disagreements"] == 1
    assert NOTE in capsys.readouterr().err

    assert analyzed == evaluated == EXPECTED
    assert scored == {source: EXPECTED[source] for source in ("aime_disagreeing", "aime_wrong")}  # non-diverse only


def test_without_a_disagreement_nothing_is_reported(run, tmp_path, capsys):
    dump, _ = run
    rows = [(source, "math", question, gts) for source, (question, gts, _, _) in PROMPTS.items()]
    data = write_verl_parquet(tmp_path / "agreeing.parquet", rows, split="test")
    report = tmp_path / "eval.json"
    assert evaluate(["--dumps", str(dump), "--data", str(data), "--workers", "1", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["ground_truth_disagreements"] == 0
    assert "another ground truth" not in capsys.readouterr().err


def test_blank_lines_in_a_dump_are_counted_and_said_by_every_tool(run, tmp_path, capsys):
    from arena_verl.tools.audit.command import main as audit

    dump, data = run
    step_file = dump / "7.jsonl"
    lines = step_file.read_text().splitlines()
    step_file.write_text("\n".join([lines[0], "", *lines[1:3], "   ", *lines[3:]]) + "\n\n")
    blank = [2, 5, len(lines) + 3]
    assert read_dump_file(step_file, PromptIndex(read_validation_data([data]))).blank_lines == tuple(blank)
    said = f"3 blank line(s) in the dump skipped (no sample): {step_file} lines 2, 5, {blank[2]}"
    common = ["--data", str(data), "--workers", "1"]
    runs = {
        "evaluate": lambda: evaluate(["--dumps", str(dump), *common]),
        "analyze": lambda: analyze([str(dump), "--out", str(tmp_path / "report"), *common]),
        "score": lambda: score([str(dump), "--judge", "simulated", "--out", str(tmp_path / "s.jsonl"), *common]),
        "audit-judge": lambda: audit([str(dump), "--judge", "simulated", "--out", str(tmp_path / "audit"), *common]),
    }
    for tool, main in runs.items():
        capsys.readouterr()
        assert main() == 0, tool
        warnings = [line for line in capsys.readouterr().err.splitlines() if "blank line" in line]
        assert warnings == [f"warning: {said}"], tool


def test_a_uid_whose_lines_carry_different_gts_is_left_unverified_by_the_reader(run, tmp_path):
    from arena_verl.evaluation.scoring import Scorer, ScoringOptions
    from arena_verl.evaluation.verified import DIFFERING_TRUTHS, verify_prompts

    dump, data = run
    step_file = dump / "7.jsonl"
    lines = [json.loads(line) for line in step_file.read_text().splitlines()]
    lines[1]["gts"] = "8"  # the first prompt's second sample: another truth than its first's "9"
    step_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    file = read_dump_file(step_file, PromptIndex(read_validation_data([data])))
    assert [p.differing_truths for p in file.prompts] == [("9", "8"), (), ()]
    with Scorer(ScoringOptions(workers=1)) as scorer:
        groups = verify_prompts(file.prompts, scorer)
    assert groups[0].correct is None and groups[0].unverified_because == DIFFERING_TRUTHS  # before: all correct
    assert groups[0].sample_statuses == ("differing_truths",) * N
    assert all(group.correct is not None for group in groups[1:])
