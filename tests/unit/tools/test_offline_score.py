"""``arena-verl score``: only non-diverse groups are judged, with the schedule's call count; the score file survives
a torn last line; the report and the comparison of two files. Every judge here is the SIMULATED one. The dumps come
from helpers.score_dumps; resuming after a SIGKILL needs a process: tests/integration/test_tool_scripts.py."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest

from arena_verl.core.tournament import group_certainty, live_call_count, round_robin_call_count
from arena_verl.tools.score import ScoreFile, compare_runs, main, read_score_file
from helpers.score_dumps import PATTERNS, N, keys_of, non_diverse_keys, score, uuid, write_dump
from helpers.verl_dumps import send_json


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("rollouts") / "rollout_data", PATTERNS)


# ------------------------------------------------------------------------------------------------ judging


@pytest.mark.parametrize(
    "strategy, budget, calls",
    [
        ("live", None, live_call_count(N)),
        ("round_robin", None, round_robin_call_count(N)),
        ("random", 4, 4),
        ("paced", 5, 5),
    ],
)
def test_only_non_diverse_groups_are_judged_with_the_strategys_calls(dump, tmp_path, capsys, strategy, budget, calls):
    out = tmp_path / "scores.jsonl"
    extra = ["--strategy", strategy] + (["--budget", str(budget)] if budget is not None else [])
    assert score(dump, out, *extra) == 0
    lines = read_score_file(out)
    assert sorted(keys_of(lines)) == sorted(non_diverse_keys(PATTERNS))
    for line in lines:
        assert (line["strategy"], line["budget"], line["samples"]) == (strategy, budget, N)
        assert line["judge_calls"] == calls == len(line["pairs"])
        assert all(first != second and 0 <= first < N and 0 <= second < N for first, second, _ in line["pairs"])
        step, prompt = line["step"], int(line["group"].rsplit("-", 1)[1])
        assert line["verifier_reward"] == PATTERNS[step][prompt][0]
        # The arena's rewards stay within half the reward scale (0.5) of the common verifier reward.
        assert all(abs(r - line["verifier_reward"]) < 0.25 for r in line["rewards"])
        assert len(line["strengths"]) == len(line["rewards"]) == len(line["sample_digests"]) == N
        assert line["first_wins"] == sum(outcome == 1.0 for *_, outcome in line["pairs"])
        # The group's certainty, as training computes it from the same verdicts and fit.
        verdicts = [(first, second, 0.5 if o is None else o) for first, second, o in line["pairs"]]
        assert line["certainty"] == group_certainty(N, verdicts, line["strengths"])
    report = capsys.readouterr().out
    assert "grouped by uid (V1 trainer dump)" in report
    diverse = sum(len(prompts) for prompts in PATTERNS.values()) - len(lines)
    assert f"non-diverse (all verifier outcomes equal; judged): {len(lines)}; diverse (skipped): {diverse}" in report
    assert f"judge calls: {calls * len(lines)} ({calls:.2f} per group)" in report
    assert "SIMULATED" in report


def test_a_judge_that_favours_the_first_trace_shows_in_the_position_bias(dump, tmp_path, capsys):
    out = tmp_path / "biased.jsonl"
    assert score(dump, out, judge="simulated?position_bias=6") == 0
    lines = read_score_file(out)
    decided = sum(line["decided"] for line in lines)
    first_wins = sum(line["first_wins"] for line in lines)
    assert decided == sum(line["judge_calls"] for line in lines)  # no ties, no failures
    assert first_wins / decided > 0.9
    assert (
        f"the trace shown first won {first_wins / decided:.1%} of {decided} decided verdicts" in capsys.readouterr().out
    )


def test_failed_calls_are_counted_and_recorded_as_null(dump, tmp_path):
    out = tmp_path / "failing.jsonl"
    assert score(dump, out, judge="simulated?parse_failure_rate=0.5&seed=1") == 0
    lines = read_score_file(out)
    failures = sum(line["failures"] for line in lines)
    assert failures > 0
    assert failures == sum(outcome is None for line in lines for *_, outcome in line["pairs"])
    assert all(line["decided"] == sum(o is not None for *_, o in line["pairs"]) for line in lines)


def test_legacy_dumps_are_grouped_by_prompt_text(tmp_path, capsys):
    folder = write_dump(tmp_path / "legacy", {5: [[1, 1, 1], [0, 1, 0]]})
    for file in folder.glob("*.jsonl"):  # verl's legacy trainer writes no uid
        records = [json.loads(line) for line in file.read_text().splitlines()]
        file.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "uid"}) + "\n" for r in records))
    out = tmp_path / "legacy.jsonl"
    assert score(folder, out) == 0
    assert keys_of(read_score_file(out)) == [(5, "input of line 1")]
    assert "grouped by prompt text (legacy trainer dump" in capsys.readouterr().out


def test_data_joins_each_prompt_to_its_data_source(tmp_path):
    folder = write_dump(tmp_path / "joined", {2: [[1, 1], [0, 0]]})
    rows = [
        {
            "data_source": source,
            "prompt": [{"role": "user", "content": f"What is {7 * prompt + 2 - 2} + 2?"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(7 * prompt + 2)},
        }
        for prompt, source in enumerate(["aime2024", "numina_olympiads"])
    ]
    parquet = tmp_path / "train.parquet"
    pd.DataFrame.from_records(rows).to_parquet(parquet)
    out = tmp_path / "joined.jsonl"
    assert score(folder, out, "--data", str(parquet)) == 0
    by_group = {line["group"]: line for line in read_score_file(out)}
    assert by_group[f"uid {uuid(2, 0)}"]["data_source"] == "aime2024"
    assert by_group[f"uid {uuid(2, 1)}"]["data_source"] == "numina_olympiads"
    assert {line["task"] for line in by_group.values()} == {"math"}


@pytest.fixture
def judge_server():
    """An OpenAI-compatible chat endpoint on loopback whose judge always prefers the attempt shown first."""
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            requests.append({"path": self.path, **json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
            send_json(self, {"choices": [{"message": {"content": "A is clearer.\n[[A]]"}}]})

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    server.shutdown()
    server.server_close()


def test_a_model_judge_behind_an_openai_endpoint_is_called_as_the_referee_calls_it(
    dump, tmp_path, judge_server, capsys
):
    url, requests = judge_server
    out = tmp_path / "openai.jsonl"
    assert score(dump, out, judge=f"openai:{url}#judge-model") == 0
    lines = read_score_file(out)
    assert sorted(keys_of(lines)) == sorted(non_diverse_keys(PATTERNS))
    assert {(line["judge"], line["judge_backend"], line["simulated"]) for line in lines} == {
        (f"openai:{url}#judge-model", "openai", False)
    }
    assert all(line["first_wins"] == line["decided"] == line["judge_calls"] for line in lines)
    assert len(requests) == sum(line["judge_calls"] for line in lines)
    assert {r["path"] for r in requests} == {"/v1/chat/completions"} and {r["model"] for r in requests} == {
        "judge-model"
    }
    prompt = requests[0]["messages"][-1]["content"]
    assert "What is" in prompt and "Attempt" in prompt  # the dump's problem and two of its traces
    printed = capsys.readouterr().out
    assert "the trace shown first won 100.0%" in printed and "SIMULATED" not in printed


# ------------------------------------------------------------------------------------------------- resuming


def test_a_torn_last_line_is_dropped_and_its_group_scored_again(dump, tmp_path, capsys):
    out = tmp_path / "torn.jsonl"
    assert score(dump, out) == 0
    lines = out.read_bytes().splitlines(keepends=True)
    kept, torn = b"".join(lines[:3]), lines[3][: len(lines[3]) // 2]
    out.write_bytes(kept + torn)
    capsys.readouterr()

    assert score(dump, out) == 0
    printed = capsys.readouterr().out
    assert f"dropped a torn last line ({len(torn)} bytes)" in printed
    assert f"3 groups already scored; {len(lines) - 3} to go" in printed
    assert out.read_bytes().startswith(kept)
    keys = keys_of(read_score_file(out))
    assert sorted(keys) == sorted(non_diverse_keys(PATTERNS))


def test_a_complete_file_is_only_reported(dump, tmp_path, capsys):
    out = tmp_path / "done.jsonl"
    assert score(dump, out) == 0
    content = out.read_bytes()
    capsys.readouterr()
    assert score(dump, out) == 0
    assert out.read_bytes() == content
    printed = capsys.readouterr().out
    groups = len(non_diverse_keys(PATTERNS))
    assert f"{groups} groups already scored; 0 to go" in printed
    assert f"groups scored: {groups} over 2 step(s)" in printed


def test_other_settings_on_the_same_file_are_an_error(dump, tmp_path, capsys):
    out = tmp_path / "live.jsonl"
    assert score(dump, out) == 0
    content = out.read_bytes()
    assert score(dump, out, "--strategy", "round_robin") == 2
    assert score(dump, out, judge="simulated?position_bias=1") == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert "line 1 was scored with judge=simulated, strategy=live" in errors[0]
    assert "this run has judge=simulated, strategy=round_robin" in errors[0]
    assert "judge=simulated?position_bias=1" in errors[1]
    assert out.read_bytes() == content


@pytest.mark.parametrize(
    "args, message",
    [
        (["--judge", "gpt4"], "unknown judge 'gpt4'"),
        (["--judge", "simulated", "--budget", "5"], "--budget applies to random, info_gain, paced and swiss"),
        (["--judge", "simulated", "--strategy", "paced", "--budget", "2"], "--budget 2 cannot connect the 4 traces"),
        (["--judge", "simulated", "--concurrency", "0"], "--concurrency must be >= 1"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(dump, tmp_path, capsys, args, message):
    out = tmp_path / "never.jsonl"
    assert main([str(dump), "--out", str(out), "--workers", "1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_file_that_is_not_a_score_file_is_named(dump, tmp_path, capsys):
    not_scores = tmp_path / "notes.jsonl"
    not_scores.write_text(json.dumps({"group": "g"}) + "\n")
    assert score(dump, not_scores) == 2
    assert score(dump, tmp_path / "o.jsonl", "--compare", str(dump / "3.jsonl")) == 2
    errors = capsys.readouterr().err.splitlines()
    assert f"{not_scores} line 1: not a score line (no step, rewards" in errors[0]
    assert f"{dump / '3.jsonl'} line 1: not a score line" in errors[1]


def test_two_runs_never_write_one_file(dump, tmp_path, capsys):
    out = tmp_path / "shared.jsonl"
    holder = ScoreFile(out)
    holder.open({"judge": "simulated", "strategy": "live", "budget": None, "seed": 0})
    try:
        assert score(dump, out) == 2
    finally:
        holder.close()
    assert "another score run is writing this file" in capsys.readouterr().err
    assert out.read_bytes() == b""


def test_a_missing_dump_is_a_usage_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), "--judge", "simulated", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ comparing


def concordance_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau by counting pairs (no ties in the inputs here)."""
    pairs = list(itertools.combinations(range(len(a)), 2))
    signs = [(a[i] - a[j]) * (b[i] - b[j]) for i, j in pairs]
    return (sum(s > 0 for s in signs) - sum(s < 0 for s in signs)) / len(pairs)


def score_line(step: int, group: str, rewards: list[float], digests: list[str] | None = None) -> dict:
    return {
        "step": step,
        "group": group,
        "rewards": rewards,
        "sample_digests": digests or [f"s{i}" for i in range(len(rewards))],
        "judge_calls": 6,
        "failures": 0,
        "first_wins": 3,
        "decided": 6,
    }


def test_comparison_of_two_files_with_known_rankings():
    same, reversed_, swapped = [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.1, 0.3, 0.2, 0.4]
    mine = [
        score_line(1, "a", same),
        score_line(1, "b", same),
        score_line(1, "c", same),
        score_line(1, "flat", [0.5] * 4),
        score_line(2, "only here", same),
        score_line(2, "other samples", same),
    ]
    theirs = [
        score_line(1, "a", same),
        score_line(1, "b", reversed_),
        score_line(1, "c", swapped),
        score_line(1, "flat", [0.9, 0.1, 0.2, 0.3]),
        score_line(3, "only there", same),
        score_line(2, "other samples", same, digests=["x0", "x1", "x2", "x3"]),
    ]
    result = compare_runs(mine, theirs)
    expected_taus = [concordance_tau(same, other) for other in (same, reversed_, swapped)]
    assert result["common"] == 4 and result["mismatched"] == 1
    assert result["tau_groups"] == 3 and result["no_tau"] == 1
    assert result["kendall_tau"] == pytest.approx(sum(expected_taus) / 3)
    # best trace: a same (3 = 3), b differs (3 vs 0), c same (3 = 3), flat: first of equals (0) = 0
    assert result["top1_agreement"] == pytest.approx(3 / 4)


def test_compare_option_prints_the_agreement(dump, tmp_path, capsys):
    first, second = tmp_path / "live.jsonl", tmp_path / "round_robin.jsonl"
    assert score(dump, first) == 0
    assert score(dump, second, "--strategy", "round_robin", "--compare", str(first)) == 0
    expected = compare_runs(read_score_file(second), read_score_file(first))
    printed = capsys.readouterr().out
    assert f"{expected['common']} groups in both" in printed
    assert expected["common"] == len(non_diverse_keys(PATTERNS))
    assert f"top-1 agreement: {expected['top1_agreement']:.1%}" in printed


def test_a_wrong_out_file_loses_no_byte(dump, tmp_path, capsys):
    notes = tmp_path / "my notes.txt"
    notes.write_bytes(b"first line\nlast line without a newline")
    before = notes.read_bytes()
    assert score(dump, notes) == 2
    assert notes.read_bytes() == before  # checked before anything was cut
    assert "not JSON" in capsys.readouterr().err


def test_resuming_on_another_dump_or_other_verification_is_an_error(dump, tmp_path, capsys):
    out = tmp_path / "scores.jsonl"
    assert score(dump, out, "--step", "3") == 0
    other = write_dump(tmp_path / "other_run", PATTERNS)  # same uids (same layout), other responses
    for path in other.glob("*.jsonl"):
        path.write_text(path.read_text().replace("Attempt", "Try"))
    capsys.readouterr()
    assert score(other, out, "--step", "3") == 2
    assert "was scored on another dump's step file" in capsys.readouterr().err
    assert score(dump, out, "--step", "3", "--answer-extraction", "lenient") == 2
    assert "answer_extraction=boxed" in capsys.readouterr().err


def test_groups_without_a_ground_truth_are_not_judged(tmp_path, capsys):
    folder = write_dump(tmp_path / "no_gts", {1: [[0, 0, 0, 0], [1, 1, 1, 1]]})
    lines = [json.loads(line) for line in (folder / "1.jsonl").read_text().splitlines()]
    for line in lines[:4]:
        line["gts"] = None
    (folder / "1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "o.jsonl"
    assert score(folder, out) == 0
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["group"] for line in scored] == [f"uid {uuid(1, 1)}"]
    assert "no ground truth" in capsys.readouterr().out
