"""Samples that cannot be verified for a reason that is not the model's are unverified, never wrong: a ground truth
the verifier cannot read (every tool: the shared verification of arena_verl.evaluation.verified, here through the
evaluation and through analyze's reader), and code the sandbox could not run (unreachable, an error status, a
malformed reply). A benchmark with such samples gets no number, and says how many and why."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena_verl.data.dumps import read_samples
from arena_verl.evaluation.groups import read_groups
from arena_verl.evaluation.report import StepReport, evaluate, render_table
from arena_verl.evaluation.scoring import UNVERIFIED_REASONS, Scorer, ScoringOptions, readable_truth
from arena_verl.tools.evaluate import main as evaluate_main
from helpers.score_dumps import write_dump

UNREADABLE = ["", "   ", {"answer": 3}, [], [{"a": 1}], None, float("nan"), float("inf"), True]


@pytest.fixture(scope="module")
def scorer():
    with Scorer(ScoringOptions(workers=1)) as shared:
        yield shared


def generations(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("truth", UNREADABLE[:5] + UNREADABLE[6:])
def test_math_with_an_unreadable_ground_truth_is_unverified_not_wrong(tmp_path, scorer, truth):
    rows = [{"data_source": "aime2024", "index": 0, "response": "\\boxed{3}", "ground_truth": truth}] * 2
    rows += [{"data_source": "aime2024", "index": 1, "response": r"\boxed{4}", "ground_truth": "5"}] * 2
    (result,) = evaluate(read_samples(generations(tmp_path / "gen.jsonl", rows), None), scorer)
    assert result.avg_pass_ratio is None and result.pass_at_k == {}  # withheld, not 0
    assert result.unverified_prompts == 1 and result.unverified_samples == 2
    assert result.statuses == {"unreadable_truth": 2, "wrong": 2}
    assert result.not_scored.startswith(UNVERIFIED_REASONS["unreadable_truth"])
    assert "2 sample(s) of 1 of 2 prompt(s)" in result.not_scored
    assert "2 unreadable_truth" in render_table([StepReport(None, "gen.jsonl", [result])])


def test_each_kind_says_which_ground_truths_it_reads():
    assert all(not readable_truth("math", truth) for truth in UNREADABLE)
    assert readable_truth("math", "\\frac{1}{2}") and readable_truth("math", 7) and readable_truth("math", ["2", "3"])
    assert readable_truth("multiple_choice", "b") and not readable_truth("multiple_choice", "A or B")
    assert not readable_truth("multiple_choice", {"A": 1})
    tests = {"inputs": ["1\n"], "outputs": ["1\n"]}
    assert readable_truth("code", json.dumps(tests)) and readable_truth("code", tests)
    assert readable_truth("code", {"assert_case": ["assert f() == 1"]})
    for bad in ["", "not json", "[1, 2]", "5", {"inputs": []}, {"inputs": ["1"], "outputs": []}, {"outputs": ["1"]}]:
        assert not readable_truth("code", bad), bad
    assert not readable_truth("code", "[" * 100_000)  # nested past the recursion limit


def test_analyze_counts_an_unreadable_ground_truth_as_unverified_not_all_incorrect(tmp_path, scorer):
    folder = write_dump(tmp_path / "rollouts", {1: [[0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1]]})
    path = folder / "1.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines[:4]:
        line["gts"] = ""  # empty: no verifier can read it
    for line in lines[4:8]:
        line["gts"] = {"answer": "3"}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = read_groups(folder, scorer)
    outcomes = [group.outcome for group in result.groups]
    assert outcomes == ["unverified", "unverified", "all_correct", "mixed"]  # before: all_incorrect, all_incorrect
    assert all("cannot read" in group.unverified_because for group in result.groups[:2])
    assert any(note.startswith("2 group(s) unverified") and "cannot read" in note for note in result.notes)


# ------------------------------------------------------------------------------------------------- sandbox


class Sandbox(BaseHTTPRequestHandler):
    """sandbox_fusion's run_code API; ``mode`` decides its reply (run locally, an error status, a broken reply)."""

    mode = "run"

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.mode == "not json":
            body, kind = b"<html>502 bad gateway</html>", "text/html"
        elif self.mode == "sandbox error":
            body, kind = json.dumps({"status": "SandboxError", "message": "no worker"}).encode(), "application/json"
        elif self.mode == "a list":
            body, kind = b"[1, 2]", "application/json"
        else:
            try:
                run = subprocess.run(
                    [sys.executable, "-c", request["code"]],
                    input=request["stdin"] or "",
                    capture_output=True,
                    text=True,
                    timeout=2,
                )
                result = {"status": "Finished", "stdout": run.stdout, "return_code": run.returncode}
                status = "Success" if run.returncode == 0 else "Failed"
            except subprocess.TimeoutExpired:
                result, status = {"status": "TimeLimitExceeded", "stdout": ""}, "Failed"
            body, kind = json.dumps({"status": status, "run_result": result}).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


@pytest.fixture()
def sandbox():
    """``start(mode)``: the URL of a sandbox replying so (stopped after the test)."""
    servers = []

    def start(mode: str) -> str:
        handler = type("Handler", (Sandbox,), {"mode": mode})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/run_code"

    yield start
    for server in servers:
        server.shutdown()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/run_code"  # nothing listens: connection refused


TESTS = json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]})
PROGRAMS = ["print(sum(map(int, input().split())))", "print(0)", "while True: pass", "no code block"]


def code_rows() -> list[dict]:
    return [
        {
            "data_source": "livecodebench",
            "index": i,
            "response": code if code == "no code block" else f"```python\n{code}\n```",
            "ground_truth": TESTS,
        }
        for i, code in enumerate(PROGRAMS)
    ]


def test_a_working_sandbox_still_counts_the_models_failures_as_wrong(tmp_path, sandbox):
    samples = read_samples(generations(tmp_path / "gen.jsonl", code_rows()), None)
    (result,) = evaluate(samples, Scorer(ScoringOptions(sandbox_url=sandbox("run"), workers=2)), ks=[1])
    assert result.unverified_prompts == 0 and result.avg_pass_ratio == pytest.approx(1 / 4)
    assert result.statuses == {"correct": 1, "no_answer": 1, "wrong": 2}  # a wrong answer and a time-out


@pytest.mark.parametrize(
    "mode, status",
    [
        ("unreachable", "sandbox_unavailable"),
        ("not json", "sandbox_unavailable"),
        ("a list", "sandbox_unavailable"),
        ("sandbox error", "sandbox_error"),
    ],
)
def test_code_the_sandbox_could_not_run_is_unverified_not_wrong(tmp_path, sandbox, mode, status):
    url = closed_port_url() if mode == "unreachable" else sandbox(mode)
    samples = read_samples(generations(tmp_path / "gen.jsonl", code_rows()[:3]), None)
    (result,) = evaluate(samples, Scorer(ScoringOptions(sandbox_url=url, workers=2)), ks=[1])
    assert result.avg_pass_ratio is None and result.pass_at_k == {}  # before: avg 0, pass@1 0
    assert result.statuses == {status: 3}
    assert result.unverified_prompts == 3 and result.unverified_samples == 3
    assert result.unverified_reasons == {UNVERIFIED_REASONS[status]: 3}


def run_cli(capsys, *args: str) -> SimpleNamespace:
    capsys.readouterr()
    try:
        returncode = evaluate_main(list(args))
    except SystemExit as exc:
        returncode = exc.code
    printed = capsys.readouterr()
    return SimpleNamespace(returncode=returncode, stdout=printed.out, stderr=printed.err)


def test_evaluate_with_an_unreachable_sandbox_reports_unverified_samples(tmp_path, capsys):
    dumps = generations(tmp_path / "gen.jsonl", code_rows())
    out = tmp_path / "report.json"
    done = run_cli(
        capsys, "--dumps", str(dumps), "--sandbox-url", closed_port_url(), "--json", str(out), "--workers", "2"
    )
    assert done.returncode == 0, done.stderr
    assert "3 sandbox_unavailable" in done.stdout and "could not be reached" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "3 sample(s) of livecodebench could not be verified" in warnings[0]
    (benchmark,) = json.loads(out.read_text())["steps"][0]["benchmarks"]
    assert benchmark["avg_pass_ratio"] is None and benchmark["pass_at_k"] == {}
    assert benchmark["unverified_prompts"] == 3 and benchmark["unverified_samples"] == 3
    assert benchmark["statuses"] == {"no_answer": 1, "sandbox_unavailable": 3}


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_an_unwritable_json_is_refused_before_scoring(tmp_path, capsys, where):
    dumps = generations(
        tmp_path / "gen.jsonl", [{"data_source": "a", "index": 0, "response": "x", "ground_truth": "1"}]
    )
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    target = blocker / "report.json" if where == "under a file" else tmp_path
    done = run_cli(capsys, "--dumps", str(dumps), "--json", str(target))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: --json {target}")
    assert done.stdout == ""  # nothing printed as if the report were done


def test_a_ground_truth_longer_than_the_verifier_reads_is_unverified(tmp_path, scorer):
    rows = [{"data_source": "aime2024", "index": 0, "response": "\\boxed{1}", "ground_truth": "1" * 5000}]
    (result,) = evaluate(read_samples(generations(tmp_path / "gen.jsonl", rows), None), scorer)
    assert result.statuses == {"unreadable_truth": 1} and result.avg_pass_ratio is None


def test_a_dead_sandbox_is_not_asked_again_after_a_run_of_failures(tmp_path, monkeypatch):
    from verl.utils.reward_score import sandbox_fusion

    from arena_verl.evaluation.scoring import SANDBOX_GIVE_UP

    calls = []

    def unreachable(*args, **kwargs):
        calls.append(1)
        return 0.0, [{"status": "api_error", "api_request_error": "Connection refused"}]

    monkeypatch.setattr(sandbox_fusion, "compute_score", unreachable)
    rows = [dict(row, index=i) for i, row in enumerate(code_rows()[:1] * (SANDBOX_GIVE_UP + 10))]
    samples = read_samples(generations(tmp_path / "gen.jsonl", rows), None)
    (result,) = evaluate(samples, Scorer(ScoringOptions(sandbox_url="http://sandbox/run_code", workers=1)), ks=[1])
    assert len(calls) == SANDBOX_GIVE_UP
    assert result.statuses == {"sandbox_unavailable": SANDBOX_GIVE_UP + 10} and result.avg_pass_ratio is None


# ----------------------------------------------------------------------------- every sample has one status


def test_the_statuses_count_every_sample_and_the_warning_and_the_row_agree(tmp_path, capsys):
    rows = [  # four samples: two prompts without a ground truth, one with one the verifier cannot read
        {"data_source": "aime2024", "index": 0, "response": "\\boxed{3}", "ground_truth": None},
        {"data_source": "aime2024", "index": 1, "response": "\\boxed{3}", "ground_truth": True},
        {"data_source": "aime2024", "index": 2, "response": "\\boxed{4}", "ground_truth": "4"},
        {"data_source": "aime2024", "index": 3, "response": "\\boxed{3}", "ground_truth": None},
    ]
    out = tmp_path / "report.json"
    done = run_cli(capsys, "--dumps", str(generations(tmp_path / "gen.jsonl", rows)), "--json", str(out))
    assert done.returncode == 0, done.stderr
    (benchmark,) = json.loads(out.read_text())["steps"][0]["benchmarks"]
    assert benchmark["statuses"] == {"correct": 1, "no_ground_truth": 2, "unreadable_truth": 1}  # before: 2 in all
    assert sum(benchmark["statuses"].values()) == benchmark["samples"] == 4
    assert benchmark["unverified_samples"] == 3
    (warning,) = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert "3 sample(s) of aime2024 could not be verified (2 no_ground_truth, 1 unreadable_truth)" in warning
    (row,) = [line for line in done.stdout.splitlines() if " aime2024 " in line]
    assert "(3 sample(s) of 3 of 4 prompt(s)) (2 no_ground_truth, 1 unreadable_truth)" in row


def test_a_benchmark_not_scored_at_all_counts_each_sample(tmp_path, scorer):
    rows = [dict(row, index=i) for i, row in enumerate(code_rows()[:2])]
    (result,) = evaluate(read_samples(generations(tmp_path / "gen.jsonl", rows), None), scorer, ks=[1])
    assert result.not_scored == "not scored: needs --sandbox-url" and result.statuses == {"not_scored": 2}


@pytest.mark.parametrize("second", ["5", None])
def test_a_prompt_whose_samples_carry_different_ground_truths_is_unverified_and_named(tmp_path, capsys, second):
    rows = [
        {"data_source": "aime2024", "index": 7, "response": "\\boxed{4}", "ground_truth": "4"},
        {"data_source": "aime2024", "index": 7, "response": "\\boxed{5}", "ground_truth": second},
        {"data_source": "aime2024", "index": 8, "response": "\\boxed{6}", "ground_truth": "6"},
        {"data_source": "aime2024", "index": 8, "response": "\\boxed{6}", "ground_truth": "6"},
    ]
    path = generations(tmp_path / "gen.jsonl", rows)
    out = tmp_path / "report.json"
    done = run_cli(capsys, "--dumps", str(path), "--json", str(out))
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text())
    (benchmark,) = payload["steps"][0]["benchmarks"]
    assert benchmark["avg_pass_ratio"] is None  # before: 1.0, each sample scored against its own truth
    assert benchmark["statuses"] == {"correct": 2, "differing_truths": 2} and benchmark["unverified_prompts"] == 1
    assert payload["differing_truth_prompts"] == 1
    (warning,) = [line for line in done.stderr.splitlines() if "different ground truths" in line]
    assert f"{path} line 1 (aime2024, aime2024 index 7): '4', {'5' if second else 'null'!r}" in warning
    assert "left unverified" in warning
