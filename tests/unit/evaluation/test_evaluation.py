"""Evaluation of validation dumps: dumps written by verl's own ``_dump_generations``, the join to the parquet rows,
scoring by kind, and avg@n / pass@k against a brute-force count over the correctness matrix."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from arena_verl.data.dump_files import EvaluationInputError, find_dump_files, select_steps
from arena_verl.data.dump_notes import disagreement_note
from arena_verl.data.dumps import read_dump_file, read_samples, read_validation_data
from arena_verl.data.prompt_match import PromptIndex
from arena_verl.evaluation.report import StepReport, evaluate, render_table
from arena_verl.evaluation.scoring import Scorer, ScoringOptions, benchmark_kind
from arena_verl.testing.toy import build_toy_tokenizer
from arena_verl.tools.evaluate import main as evaluate_main
from helpers.verl_dumps import dump_with_verl, send_json, write_verl_parquet

# Special tokens around every turn, as real templates have: the dump's input is decoded without them.
CHAT_TEMPLATE = (
    "<eos>system: Reason step by step.<eos>"
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}<eos>{% endfor %}assistant:"
)


# ------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(str(build_toy_tokenizer(tmp_path_factory.mktemp("tokenizer"))))
    loaded.chat_template = CHAT_TEMPLATE
    return loaded


@pytest.fixture(scope="module")
def scorer():
    with Scorer(ScoringOptions(workers=1)) as shared:
        yield shared


def rendered(tokenizer, question: str) -> str:
    """The dump's ``input``: the prompt's token ids decoded with skip_special_tokens, as verl's _validate does."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids, skip_special_tokens=True)


def write_parquet(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """(data_source, ability, question, ground truth) rows in verl's layout, as a validation file."""
    return write_verl_parquet(path, rows, split="test")


def v1_trainer():
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    return PPOTrainer


def legacy_trainer():
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    return RayPPOTrainer


def brute_force(matrix: list[list[bool]], k: int) -> float:
    """pass@k by counting every k-subset of each prompt's samples."""
    per_prompt = []
    for row in matrix:
        subsets = list(itertools.combinations(row, k))
        per_prompt.append(sum(any(subset) for subset in subsets) / len(subsets))
    return float(np.mean(per_prompt))


def answer(kind: str, truth: str, correct: bool) -> str:
    if kind == "math":
        return f"We add things up.\nThe answer is \\boxed{{{truth if correct else int(truth) + 1}}}."
    letter = truth if correct else "ABCD"[("ABCD".index(truth) + 1) % 4]
    return f"Comparing the options, the answer is \\boxed{{{letter}}}."


# Benchmarks of the V1 dump: (data_source, ability, question, truth, correctness of its n = 4 samples).
V1_PROMPTS = [
    ("aime2024", "math", "What is 200 + 4?", "204", [True, False, True, True]),
    ("aime2024", "math", "What is 200 + 4? Then add 1.", "205", [False, False, False, True]),
    ("aime2024", "math", "Compute 6 * 7.", "42", [False, False, False, False]),
    ("gpqa_diamond", "multiple_choice", "Which particle is a lepton?\n(A) proton (B) electron", "B", [True] * 4),
    (
        "gpqa_diamond",
        "multiple_choice",
        "Which gas is noble?\n(A) argon (B) nitrogen",
        "A",
        [False, True, False, False],
    ),
    ("livecodebench", "code", "Write a function that adds two numbers.", '{"inputs": ["1 2"], "outputs": ["3"]}', None),
]
N = 4


@pytest.fixture(scope="module")
def v1_run(tmp_path_factory, tokenizer):
    """A V1-trainer dump of step 30 (and an older one of step 10), and the two validation parquet files."""
    folder = tmp_path_factory.mktemp("v1")
    math_file = write_parquet(folder / "math.parquet", [p[:4] for p in V1_PROMPTS if p[1] == "math"])
    other_file = write_parquet(folder / "other.parquet", [p[:4] for p in V1_PROMPTS if p[1] != "math"])
    inputs, outputs, gts, scores, acc, keys = [], [], [], [], [], []
    for number, (source, ability, question, truth, correct) in enumerate(V1_PROMPTS):
        uid = f"0d5c6f1e-{number:04d}-4b7a-9d1e-5f0a7c3b2e1d"
        for session in range(N):
            ok = bool(correct[session]) if correct is not None else False
            text = (
                answer(ability, truth, ok)
                if ability != "code"
                else "```python\nprint(sum(map(int, input().split())))\n```"
            )
            if source == "aime2024" and session == 0:  # a two-output session: its last output is the one scored
                inputs.append(rendered(tokenizer, question))
                outputs.append("\\boxed{999999}")  # a first output that a wrong pick would score as wrong
                gts.append(truth)
                scores.append(1.0)
                acc.append(float(ok))
                keys.append(f"{uid}_{session}_0")
            inputs.append(rendered(tokenizer, question))
            outputs.append(text)
            gts.append(truth)
            scores.append(1.0 if ability == "math" else float(ok))  # a judge reward of 1 on wrong math traces
            acc.append(float(ok))
            keys.append(f"{uid}_{session}_{1 if source == 'aime2024' and session == 0 else 0}")
    extra = {"reward": scores, "acc": acc, "uid": keys}
    dump_with_verl(v1_trainer(), folder / "validation", 30, inputs, outputs, gts, scores, extra)
    older = {"reward": scores[:N], "acc": acc[:N], "uid": keys[:N]}
    dump_with_verl(v1_trainer(), folder / "validation", 10, inputs[:N], outputs[:N], gts[:N], scores[:N], older)
    return SimpleNamespace(folder=folder, dumps=folder / "validation", data=[math_file, other_file])


# ---------------------------------------------------------------------------------------------- verl's format


def test_verl_dump_lines_have_the_keys_the_reader_relies_on(v1_run):
    lines = [json.loads(line) for line in (v1_run.dumps / "30.jsonl").read_text().splitlines()]
    assert {"input", "output", "gts", "score", "step", "acc", "uid"} <= set(lines[0])
    assert lines[0]["step"] == 30
    question = V1_PROMPTS[0][2]
    assert question in lines[0]["input"] and "<eos>" not in lines[0]["input"]  # the template's text, decoded


def test_samples_are_joined_to_their_parquet_rows(v1_run):
    samples = read_samples(v1_run.dumps / "30.jsonl", read_validation_data(v1_run.data))
    by_prompt = {}
    for sample in samples:
        by_prompt.setdefault(sample.prompt_id, []).append(sample)
    assert len(by_prompt) == len(V1_PROMPTS)
    assert all(len(group) == N for group in by_prompt.values())  # the two-output session counts once
    truths = sorted((group[0].benchmark, group[0].ground_truth) for group in by_prompt.values())
    assert truths == sorted((p[0], p[3]) for p in V1_PROMPTS)
    assert not any(s.response == "\\boxed{999999}" for s in samples)


def test_metrics_match_a_brute_force_count(v1_run, scorer):
    samples = read_samples(v1_run.dumps / "30.jsonl", read_validation_data(v1_run.data))
    results = {r.benchmark: r for r in evaluate(samples, scorer, ks=[1, 2, 4])}
    for source in ("aime2024", "gpqa_diamond"):
        matrix = [p[4] for p in V1_PROMPTS if p[0] == source]
        result = results[source]
        assert result.prompts == len(matrix) and result.samples_per_prompt == N
        assert result.avg_pass_ratio == pytest.approx(np.mean([np.mean(row) for row in matrix]))
        for k in (1, 2, 4):
            assert result.pass_at_k[k] == pytest.approx(brute_force(matrix, k))
    assert results["aime2024"].scored_by == "math-verify"
    assert results["gpqa_diamond"].scored_by == "multiple-choice"


def test_code_without_a_sandbox_gets_no_number(v1_run, scorer):
    samples = read_samples(v1_run.dumps / "30.jsonl", read_validation_data(v1_run.data))
    code = next(r for r in evaluate(samples, scorer) if r.benchmark == "livecodebench")
    assert code.kind == "code"
    assert code.not_scored == "not scored: needs --sandbox-url"
    assert code.avg_pass_ratio is None and code.pass_at_k == {}
    table = render_table([StepReport(30, "30.jsonl", [code])])
    assert "needs --sandbox-url" in table and "livecodebench" in table


class FakeSandbox(BaseHTTPRequestHandler):
    """sandbox_fusion's run_code API, running the Python program locally (verl's client talks to it unchanged)."""

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        run = subprocess.run(
            [sys.executable, "-c", request["code"]], input=request["stdin"] or "", capture_output=True, text=True
        )
        result = {"status": "Finished", "stdout": run.stdout, "stderr": run.stderr, "return_code": run.returncode}
        send_json(self, {"status": "Success" if run.returncode == 0 else "Failed", "run_result": result})

    def log_message(self, *_):
        pass


def test_code_with_a_sandbox_is_correct_only_when_every_test_passes(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSandbox)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tests = json.dumps({"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]})
    programs = {
        "print(sum(map(int, input().split())))": True,
        "a, b = map(int, input().split())\nprint(a + b if a != 5 else 0)": False,  # passes one test of two
        "raise SystemExit(1)": False,
    }
    rows = [
        {"data_source": "livecodebench", "index": 0, "response": f"```python\n{code}\n```", "ground_truth": tests}
        for code in programs
    ]
    samples = read_samples(write_generations(tmp_path / "gen.jsonl", rows), None)
    url = f"http://127.0.0.1:{server.server_address[1]}/run_code"
    try:
        (result,) = evaluate(samples, Scorer(ScoringOptions(sandbox_url=url, workers=2)), ks=[1, 2])
    finally:
        server.shutdown()
    assert result.scored_by == "sandbox"
    matrix = [list(programs.values())]
    assert result.avg_pass_ratio == pytest.approx(1 / 3)
    assert result.pass_at_k == pytest.approx({1: brute_force(matrix, 1), 2: brute_force(matrix, 2)})


def test_dumped_scores_use_acc_not_the_reward(v1_run):
    samples = read_samples(v1_run.dumps / "30.jsonl", read_validation_data(v1_run.data))
    dumped = Scorer(ScoringOptions(use_dumped_scores=True))
    results = {r.benchmark: r for r in evaluate(samples, dumped)}
    matrix = [p[4] for p in V1_PROMPTS if p[0] == "aime2024"]
    # the reward is 1 for every math sample here; acc is the verifier's verdict
    assert results["aime2024"].avg_pass_ratio == pytest.approx(np.mean([np.mean(row) for row in matrix]))
    assert results["livecodebench"].avg_pass_ratio == 0.0  # trusted, so it gets a number


def test_legacy_trainer_dumps_group_by_input(tmp_path, tokenizer, scorer):
    questions = [("math", "Compute 10 + 3.", "13", [True, False, False]), ("math", "Compute 9 + 9.", "18", [True] * 3)]
    data = write_parquet(tmp_path / "val.parquet", [(s, "math", q, t) for s, q, t, _ in questions])
    inputs, outputs, gts = [], [], []
    for _, question, truth, correct in questions:
        for ok in correct:  # verl repeats each prompt n times, interleaved
            inputs.append(rendered(tokenizer, question))
            outputs.append(answer("math", truth, ok))
            gts.append(truth)
    scores = [0.0] * len(inputs)
    path = dump_with_verl(legacy_trainer(), tmp_path / "dumps", 5, inputs, outputs, gts, scores, {"reward": scores})
    (result,) = evaluate(read_samples(path, read_validation_data([data])), scorer, ks=[2])
    matrix = [q[3] for q in questions]
    assert result.samples_per_prompt == 3
    assert result.avg_pass_ratio == pytest.approx(np.mean([np.mean(row) for row in matrix]))
    assert result.pass_at_k[2] == pytest.approx(brute_force(matrix, 2))


# --------------------------------------------------------------------------------------------------- the join


def small_dump(folder: Path, tokenizer, prompts: list[tuple[str, str]], n: int = 2) -> Path:
    """A V1 dump of ``n`` correct MC answers per (question, gts)."""
    inputs, outputs, gts, keys = [], [], [], []
    for number, (question, truth) in enumerate(prompts):
        for session in range(n):
            inputs.append(rendered(tokenizer, question))
            outputs.append(f"\\boxed{{{truth}}}")
            gts.append(truth)
            keys.append(f"uid{number}_{session}_0")
    scores = [1.0] * len(inputs)
    return dump_with_verl(v1_trainer(), folder, 1, inputs, outputs, gts, scores, {"reward": scores, "uid": keys})


def test_a_prompt_missing_from_the_data_is_an_error(tmp_path, tokenizer):
    data = write_parquet(tmp_path / "v.parquet", [("gpqa_diamond", "multiple_choice", "Pick A.", "A")])
    dump = small_dump(tmp_path / "d", tokenizer, [("Pick A.", "A"), ("Not in the data.", "B"), ("Nor this.", "C")])
    with pytest.raises(EvaluationInputError, match=r"2 prompt\(s\) match no row of --data.*Not in the data"):
        read_samples(dump, read_validation_data([data]))


def test_rows_that_differ_but_match_the_same_prompt_are_ambiguous(tmp_path, tokenizer):
    first = write_parquet(tmp_path / "a.parquet", [("gpqa_diamond", "multiple_choice", "Pick A.", "A")])
    second = write_parquet(tmp_path / "b.parquet", [("gpqa_main", "multiple_choice", "Pick A.", "A")])
    dump = small_dump(tmp_path / "d", tokenizer, [("Pick A.", "A")])
    with pytest.raises(EvaluationInputError, match=r"1 prompt\(s\) match several.*a\.parquet row 0.*b\.parquet row 0"):
        read_samples(dump, read_validation_data([first, second]))


def test_the_dumped_ground_truth_tells_identical_questions_apart(tmp_path, tokenizer):
    rows = [("gpqa_a", "multiple_choice", "Pick one.", "A"), ("gpqa_b", "multiple_choice", "Pick one.", "C")]
    data = write_parquet(tmp_path / "v.parquet", rows)
    dump = small_dump(tmp_path / "d", tokenizer, [("Pick one.", "C"), ("Pick one.", "A")])
    samples = read_samples(dump, read_validation_data([data]))
    assert sorted({(s.benchmark, s.ground_truth) for s in samples}) == [("gpqa_a", "A"), ("gpqa_b", "C")]


def test_a_question_inside_a_longer_one_gives_way_to_it(tmp_path, tokenizer):
    rows = [("gpqa_a", "multiple_choice", "Pick A.", "A"), ("gpqa_b", "multiple_choice", "Pick A. Then stop.", "A")]
    data = write_parquet(tmp_path / "v.parquet", rows)  # the same truth: gts cannot tell them apart
    dump = small_dump(tmp_path / "d", tokenizer, [("Pick A. Then stop.", "A"), ("Pick A.", "A")])
    samples = read_samples(dump, read_validation_data([data]))
    assert sorted({(s.prompt_id, s.benchmark) for s in samples}) == [("uid uid0", "gpqa_b"), ("uid uid1", "gpqa_a")]


def test_a_ground_truth_that_disagrees_with_the_dump_is_counted_and_the_dumps_is_used(tmp_path, tokenizer):
    data = write_parquet(tmp_path / "v.parquet", [("gpqa_diamond", "multiple_choice", "Pick A.", "A")])
    dump = small_dump(tmp_path / "d", tokenizer, [("Pick A.", "D")])
    file = read_dump_file(dump, PromptIndex(read_validation_data([data])))
    assert {(s.benchmark, s.ground_truth) for s in file.samples} == {("gpqa_diamond", "D")}
    (disagreement,) = file.disagreements
    assert (disagreement.dumped, disagreement.parquet, disagreement.line) == ("D", "A", 1)
    assert "1 prompt(s) have another ground truth in --data" in disagreement_note(file.disagreements)


def test_parquet_without_verl_columns_is_named(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"question": ["q"], "answer": ["a"]}).to_parquet(path)
    with pytest.raises(EvaluationInputError, match=r"bad\.parquet: no column prompt, data_source, reward_model"):
        read_validation_data([path])


# ------------------------------------------------------------------------------------- n, k and plain files


def write_generations(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def mc_rows(matrix: list[list[bool]], source: str = "gpqa_diamond") -> list[dict]:
    return [
        {"data_source": source, "index": i, "response": f"\\boxed{{{'A' if ok else 'B'}}}", "ground_truth": "A"}
        for i, row in enumerate(matrix)
        for ok in row
    ]


def test_plain_generation_files_need_no_parquet(tmp_path, scorer):
    matrix = [[True, False, True], [False, False, True], [True, True, True]]
    path = write_generations(tmp_path / "gen.jsonl", mc_rows(matrix))
    (result,) = evaluate(read_samples(path, None), scorer, ks=[2, 3])
    assert result.prompts == 3 and result.samples_per_prompt == 3
    assert result.avg_pass_ratio == pytest.approx(np.mean([np.mean(row) for row in matrix]))
    assert result.pass_at_k == pytest.approx({2: brute_force(matrix, 2), 3: brute_force(matrix, 3)})


def test_unequal_sample_counts_are_an_error_unless_allowed(tmp_path, scorer):
    matrix = [[True, False, True, False], [False, True]]
    samples = read_samples(write_generations(tmp_path / "gen.jsonl", mc_rows(matrix)), None)
    with pytest.raises(EvaluationInputError, match="between 2 and 4 samples"):
        evaluate(samples, scorer)
    (result,) = evaluate(samples, scorer, ks=[2], allow_unequal_n=True)
    assert result.samples_per_prompt == 2 and result.notes
    assert result.avg_pass_ratio == pytest.approx(np.mean([np.mean(row) for row in matrix]))  # each its own n
    assert result.pass_at_k[2] == pytest.approx(brute_force(matrix, 2))


def test_k_above_n_is_an_error(tmp_path, scorer):
    samples = read_samples(write_generations(tmp_path / "gen.jsonl", mc_rows([[True, False]])), None)
    with pytest.raises(EvaluationInputError, match=r"pass@5 needs k <= n, but n = 2"):
        evaluate(samples, scorer, ks=[1, 5])


def test_a_bad_multiple_choice_ground_truth_is_unverified_not_wrong(tmp_path, scorer):
    rows = [{"data_source": "gpqa_diamond", "index": 0, "response": "\\boxed{A}", "ground_truth": "A or B"}]
    samples = read_samples(write_generations(tmp_path / "gen.jsonl", rows), None)
    (result,) = evaluate(samples, scorer)
    assert result.avg_pass_ratio is None and result.unverified_prompts == 1
    assert result.statuses == {"unreadable_truth": 1} and "cannot read" in result.not_scored


def test_generation_lines_without_required_keys_are_named(tmp_path):
    path = write_generations(tmp_path / "gen.jsonl", [{"data_source": "aime", "response": "x", "ground_truth": "1"}])
    with pytest.raises(EvaluationInputError, match=r"gen\.jsonl line 1: no index or prompt"):
        read_samples(path, None)


@pytest.mark.parametrize(
    "source, ability, kind",
    [
        ("aime2025", None, "math"),
        ("HuggingFaceH4/MATH-500", None, "math"),
        ("gpqa_diamond", "math", "multiple_choice"),
        ("anything", "multiple_choice", "multiple_choice"),
        ("livecodebench_v6", None, "code"),
        ("codeforces", None, "code"),
        ("codecontests", "code", "code"),  # the LiveCodeBench preset's
        ("beyond", "math", "math"),
        ("trivia", None, "unknown"),
    ],
)
def test_benchmark_kinds(source, ability, kind):
    assert benchmark_kind(source, ability) == kind


def test_steps_latest_all_and_one(v1_run):
    files = find_dump_files(v1_run.dumps)
    assert [step for step, _ in select_steps(files)] == [30]
    assert [step for step, _ in select_steps(files, "all")] == [10, 30]
    assert [step for step, _ in select_steps(files, "10")] == [10]
    with pytest.raises(EvaluationInputError, match="no dump for step 20"):
        select_steps(files, "20")


# ---------------------------------------------------------------------------------------------------- the CLI
# In this process: scripts/eval/evaluate.py as a real process is checked in tests/integration/test_tool_scripts.py.


def run_cli(capsys, *args: str) -> SimpleNamespace:
    """``arena_verl.tools.evaluate.main(args)``: its exit status (argparse's SystemExit included) and what it
    printed, as returncode, stdout and stderr."""
    capsys.readouterr()  # only this call's output
    try:
        returncode = evaluate_main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        returncode = exc.code
    printed = capsys.readouterr()
    return SimpleNamespace(returncode=returncode, stdout=printed.out, stderr=printed.err)


def test_cli_writes_the_table_and_json(v1_run, tmp_path, capsys):
    out = tmp_path / "report.json"
    data = [str(path) for path in v1_run.data]
    args = ["--dumps", str(v1_run.dumps), "--data", *data, "--step", "all", "--k", "1", "--json", str(out)]
    done = run_cli(capsys, *args)
    assert done.returncode == 0, done.stderr
    assert "gpqa_diamond" in done.stdout and "needs --sandbox-url" in done.stdout
    report = json.loads(out.read_text())
    assert [entry["step"] for entry in report["steps"]] == [10, 30]
    benchmarks = {b["benchmark"]: b for b in report["steps"][1]["benchmarks"]}
    matrix = [p[4] for p in V1_PROMPTS if p[0] == "gpqa_diamond"]
    assert benchmarks["gpqa_diamond"]["pass_at_k"]["1"] == pytest.approx(brute_force(matrix, 1))
    assert benchmarks["livecodebench"]["avg_pass_ratio"] is None


def test_cli_exit_codes(v1_run, tmp_path, capsys):
    # The math rows are missing from this --data.
    unmatched = run_cli(capsys, "--dumps", str(v1_run.dumps), "--data", str(v1_run.data[1]))
    assert unmatched.returncode == 2 and "match no row of --data" in unmatched.stderr
    assert unmatched.stderr.count("\n") == 1 and "Traceback" not in unmatched.stderr
    assert run_cli(capsys, "--dumps", str(tmp_path / "nowhere")).returncode == 2
    assert run_cli(capsys, "--dumps", str(v1_run.dumps), "--k", "0").returncode == 2
    no_data = run_cli(capsys, "--dumps", str(v1_run.dumps))
    assert no_data.returncode == 2 and "--data" in no_data.stderr


def test_json_never_replaces_a_file_the_report_is_read_from(v1_run, capsys):
    data = [str(path) for path in v1_run.data]
    step_file = sorted(v1_run.dumps.glob("*.jsonl"))[0]
    for target in (step_file, v1_run.data[0]):
        before = target.read_bytes()
        done = run_cli(capsys, "--dumps", str(v1_run.dumps), "--data", *data, "--json", str(target))
        assert done.returncode == 2 and "is one of the files read" in done.stderr and done.stdout == ""
        assert target.read_bytes() == before


def test_a_dump_that_is_not_utf8_is_a_clear_error(tmp_path):
    from arena_verl.data.dump_files import EvaluationInputError, read_jsonl

    path = tmp_path / "1.jsonl"
    path.write_bytes(b'{"input": "a", "output": "b"}\n{"input": "\xff\xfe"}\n')
    with pytest.raises(EvaluationInputError, match="line 2: not UTF-8"):
        read_jsonl(path)


def test_a_dump_mixing_uid_and_uidless_lines_is_a_clear_error(tmp_path):
    from arena_verl.data.dump_files import EvaluationInputError, read_jsonl
    from arena_verl.data.dumps import prompt_groups

    path = tmp_path / "1.jsonl"
    path.write_text('{"input": "q", "output": "a", "uid": "abc_0_0"}\n{"input": "q", "output": "b", "uid": "broken"}\n')
    with pytest.raises(EvaluationInputError, match="some lines have a uid"):
        prompt_groups(path, read_jsonl(path))
