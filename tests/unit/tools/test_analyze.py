"""``arena-verl analyze`` on dumps written by verl's own ``_dump_generations`` (V1 with uid, legacy without), a
training parquet and a metrics file written by verl's FileLogger: the numbers of summary.json, the report's files,
and the errors for bad input."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from arena_verl.tools.analyze.command import main
from helpers.verl_dumps import dump_with_verl, write_verl_parquet

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N = 4  # samples per group in the V1 dump

# The training parquet's rows: question -> (data_source, ability, ground truth).
QUESTIONS = {
    "What is 3 + 4?": ("gsm8k", "math", "7"),
    "What is 6 * 7?": ("gsm8k", "math", "42"),
    "What is 10 - 3? Then double it.": ("gsm8k", "math", "14"),
    "Which particle is a lepton?\n(A) proton (B) electron": ("gpqa", "multiple_choice", "B"),
    "Write a program that prints the sum of two numbers.": ("livecodebench", "code", '{"inputs": ["1 2"]}'),
}
T, F = True, False
# step -> [(question, the verifier's verdict per sample (None: code), the dumped reward per sample)]
V1_STEPS = {
    1: [
        ("What is 3 + 4?", [T, T, T, T], [1, 1, 1, 1]),  # all correct, not recovered
        ("What is 6 * 7?", [F, F, F, F], [0.1, 0.4, 0.2, 0.3]),  # all incorrect, recovered by the arena
        ("Which particle is a lepton?\n(A) proton (B) electron", [T, F, T, F], [1, 0, 1, 0]),  # mixed
        ("Write a program that prints the sum of two numbers.", None, [1, 1, 0, 0]),  # code: unverified
    ],
    2: [
        ("What is 3 + 4?", [T, F, T, T], [1, 0, 1, 1]),  # mixed
        ("What is 6 * 7?", [T, T, T, T], [0.9, 0.5, 0.7, 0.6]),  # all correct, recovered
        ("What is 10 - 3? Then double it.", [F, F, F, F], [0, 0, 0, 0]),  # all incorrect, not recovered
        ("Which particle is a lepton?\n(A) proton (B) electron", [F, F, F, F], [0.2, 0.8, 0.5, 0.5]),  # recovered
    ],
    3: [
        ("What is 10 - 3? Then double it.", [T, T, T, T], [1, 1, 1, 1]),  # all correct, not recovered
        ("Which particle is a lepton?\n(A) proton (B) electron", [T, T, T, T], [1, 1, 1, 1]),  # the same
        ("What is 3 + 4?", [F, T, F, F], [0, 1, 0, 0]),  # mixed
    ],
}
JUDGE_CALLS = {1: 12, 2: 30, 3: 0}


def rendered(question: str) -> str:
    """The dump's ``input``: a chat template's text without its special tokens, as verl decodes the prompt."""
    return f"system\nReason step by step.\nuser\n{question}\nassistant\n"


def response(question: str, correct: bool) -> str:
    source, ability, truth = QUESTIONS[question]
    if ability == "code":
        return "```python\nprint(sum(map(int, input().split())))\n```"
    if ability == "multiple_choice":
        return f"Leptons do not feel the strong force, so the answer is \\boxed{{{truth if correct else 'A'}}}."
    return f"Working it out step by step.\nThe answer is \\boxed{{{truth if correct else int(truth) + 1}}}."


def write_v1_dump(folder: Path) -> None:
    """What V1's ``_log_rollout_data`` writes: lines sorted by uid ``{prompt uuid}_{session}_{output}``."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    for step, groups in V1_STEPS.items():
        inputs, outputs, gts, scores, uids = [], [], [], [], []
        for number, (question, verdicts, rewards) in enumerate(groups):
            uuid = f"5f0a7c3b-{step:04d}-4b7a-9d1e-{number:012d}"
            for session in range(N):
                outputs_of_session = [response(question, bool(verdicts and verdicts[session]))]
                if question == "What is 6 * 7?" and session == 0:  # a multi-turn session: its last output counts
                    outputs_of_session.insert(0, response(question, not verdicts[session]))
                for index, output in enumerate(outputs_of_session):
                    inputs.append(rendered(question))
                    outputs.append(output)
                    gts.append(QUESTIONS[question][2])
                    scores.append(float(rewards[session]))
                    uids.append(f"{uuid}_{session}_{index}")
        dump_with_verl(PPOTrainer, folder, step, inputs, outputs, gts, scores, {"uid": uids})


def write_training_parquet(path: Path) -> Path:
    rows = [(source, ability, question, truth) for question, (source, ability, truth) in QUESTIONS.items()]
    return write_verl_parquet(path, rows, split="train")


def write_metrics(path: Path, monkeypatch) -> Path:
    """verl's FileLogger output: a training-step record per step, and a validation record without a step."""
    from verl.utils.tracking import FileLogger

    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    logger = FileLogger("project", "experiment")
    logger.log({"val-core/gsm8k/reward/mean@1": 0.5}, step=0)
    for step, calls in JUDGE_CALLS.items():
        logger.log({"training/global_step": step, "arena/judge_calls": calls, "timing_s/step": 10.0}, step=step)
    logger.finish()
    return path


@pytest.fixture(scope="module")
def v1_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("v1")
    write_v1_dump(folder / "rollout")
    data = write_training_parquet(folder / "train.parquet")
    with pytest.MonkeyPatch.context() as monkeypatch:
        metrics = write_metrics(folder / "metrics.jsonl", monkeypatch)
    out = folder / "report"
    rc = main([str(folder / "rollout"), "--out", str(out), "--data", str(data), "--metrics", str(metrics)])
    assert rc == 0
    return SimpleNamespace(folder=folder, out=out, data=data, summary=json.loads((out / "summary.json").read_text()))


# ------------------------------------------------------------------------------------------------------ numbers


def test_every_step_has_the_groups_the_verifier_says(v1_report):
    steps = [
        {k: s[k] for k in ("step", "groups", "all_correct", "all_incorrect", "mixed", "unverified")}
        for s in v1_report.summary["steps"]
    ]
    assert steps == [
        {"step": 1, "groups": 3, "all_correct": 1, "all_incorrect": 1, "mixed": 1, "unverified": 1},
        {"step": 2, "groups": 4, "all_correct": 1, "all_incorrect": 2, "mixed": 1, "unverified": 0},
        {"step": 3, "groups": 3, "all_correct": 2, "all_incorrect": 0, "mixed": 1, "unverified": 0},
    ]
    assert [s["alpha"] for s in v1_report.summary["steps"]] == pytest.approx([2 / 3, 3 / 4, 2 / 3])


def test_zero_advantage_samples_under_rlvr_and_under_the_dumped_rewards(v1_report):
    steps = v1_report.summary["steps"]
    # A multi-output session counts once, so every group has N samples.
    assert [s["samples"] for s in steps] == [3 * N, 4 * N, 3 * N]
    assert [s["unverified_samples"] for s in steps] == [N, 0, 0]
    assert [s["zero_advantage_samples_rlvr"] for s in steps] == [2 * N, 3 * N, 2 * N]
    assert [s["zero_advantage_samples_dumped"] for s in steps] == [N, N, 2 * N]
    assert [s["recovered_groups"] for s in steps] == [1, 2, 0]
    for step in steps:
        assert step["recovered_samples"] == step["zero_advantage_samples_rlvr"] - step["zero_advantage_samples_dumped"]


def test_totals_add_up_the_whole_run(v1_report):
    totals = v1_report.summary["totals"]
    assert {k: totals[k] for k in ("steps", "groups", "all_correct", "all_incorrect", "mixed", "unverified")} == {
        "steps": 3,
        "groups": 10,
        "all_correct": 4,
        "all_incorrect": 3,
        "mixed": 3,
        "unverified": 1,
    }
    assert totals["alpha"] == pytest.approx(0.7)
    assert totals["samples"] == 40
    assert totals["zero_advantage_share_rlvr"] == pytest.approx(28 / 40)
    assert totals["zero_advantage_share_dumped"] == pytest.approx(16 / 40)
    assert totals["recovered_samples"] == 12
    assert totals["grouped_by"] == "uid"
    assert totals["judge_calls"] == sum(JUDGE_CALLS.values())
    assert totals["judge_calls_per_recovered_group"] == pytest.approx(42 / 3)
    assert [s["judge_calls"] for s in v1_report.summary["steps"]] == [JUDGE_CALLS[s] for s in (1, 2, 3)]
    assert any("livecodebench" in note and "sandbox" in note for note in totals["notes"])


def test_groups_are_counted_per_data_source(v1_report):
    sources = v1_report.summary["totals"]["data_sources"]
    counts = {name: (c["groups"], c["all_correct"], c["all_incorrect"], c["unverified"]) for name, c in sources.items()}
    assert counts == {"gpqa": (3, 1, 1, 0), "gsm8k": (7, 3, 2, 0), "livecodebench": (0, 0, 0, 1)}
    assert sources["gsm8k"]["alpha"] == pytest.approx(5 / 7)
    step_two = v1_report.summary["steps"][1]["data_sources"]
    assert (step_two["gsm8k"]["all_correct"], step_two["gsm8k"]["all_incorrect"]) == (1, 1)
    assert (step_two["gpqa"]["all_incorrect"], step_two["gpqa"]["recovered_samples"]) == (1, N)


def test_rewards_and_lengths_cover_every_sample(v1_report):
    totals = v1_report.summary["totals"]
    final_outputs = [
        (reward, response(q, bool(verdicts and verdicts[i])))
        for groups in V1_STEPS.values()
        for q, verdicts, rewards in groups
        for i, reward in enumerate(rewards)
    ]
    assert totals["reward"]["mean"] == pytest.approx(sum(r for r, _ in final_outputs) / len(final_outputs))
    assert sum(totals["reward"]["histogram"]["counts"]) == len(final_outputs)
    assert totals["response_chars"]["max"] == max(len(text) for _, text in final_outputs)
    assert totals["response_chars"]["mean"] == pytest.approx(
        sum(len(text) for _, text in final_outputs) / len(final_outputs)
    )


# ------------------------------------------------------------------------------------------------------ report


def test_the_page_shows_every_plot_and_the_plots_are_pngs(v1_report):
    page = (v1_report.out / "index.html").read_text()
    referenced = re.findall(r"<img src='([^']+)'", page)
    pngs = sorted(path.name for path in v1_report.out.glob("*.png"))
    assert sorted(referenced) == pngs
    assert {"alpha.png", "zero_advantage.png", "judge_calls.png", "data_sources.png"} <= set(pngs)
    for name in pngs:
        assert (v1_report.out / name).read_bytes()[:8] == PNG_MAGIC
    assert "http" not in page  # self-contained: nothing to fetch
    assert "70.0%" in page  # the run's alpha and zero-advantage share


def test_without_metrics_there_is_no_judge_cost(v1_report, tmp_path):
    out = tmp_path / "report"
    assert main([str(v1_report.folder / "rollout"), "--out", str(out), "--data", str(v1_report.data)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"]["judge_calls"] is None
    assert not (out / "judge_calls.png").exists()
    assert summary["totals"]["alpha"] == v1_report.summary["totals"]["alpha"]


# ------------------------------------------------------------------------------------------------- legacy dumps

# step -> [(question, ground truth, verdict per sample, dumped reward per sample)]
LEGACY_STEPS = {
    1: [("Compute 2 + 2.", "4", [T, T, T], [0.2, 0.9, 0.5]), ("Compute 5 + 5.", "10", [T, F, F], [1, 0, 0])],
    2: [("Compute 2 + 2.", "4", [F, F, F], [0, 0, 0]), ("Compute 5 + 5.", "10", [T, T, T], [1, 1, 1])],
}


def test_legacy_dumps_are_grouped_by_prompt_and_say_so(tmp_path):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    shuffle = random.Random(0)
    for step, groups in LEGACY_STEPS.items():
        lines = [
            (rendered(q), f"So the answer is \\boxed{{{truth if ok else 0}}}.", truth, float(reward), float(ok))
            for q, truth, verdicts, rewards in groups
            for ok, reward in zip(verdicts, rewards)
        ]
        shuffle.shuffle(lines)  # grouping must not rely on the order
        inputs, outputs, gts, scores, acc = map(list, zip(*lines))
        extra = {"acc": acc, "arena/verifier_reward": acc, "arena/route": [1] * len(acc)}
        dump_with_verl(RayPPOTrainer, tmp_path / "rollout", step, inputs, outputs, gts, scores, extra)
    assert main([str(tmp_path / "rollout"), "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    steps = [(s["groups"], s["all_correct"], s["all_incorrect"], s["recovered_samples"]) for s in summary["steps"]]
    assert steps == [(2, 1, 0, 3), (2, 1, 1, 0)]
    assert [s["alpha"] for s in summary["steps"]] == [0.5, 1.0]
    assert summary["totals"]["grouped_by"] == "prompt"
    assert any("legacy dump" in note for note in summary["totals"]["notes"])
    assert list(summary["totals"]["data_sources"]) == ["(no --data)"]


# -------------------------------------------------------------------------------------------------- bad input


def test_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_line_that_is_not_json_is_named(tmp_path, capsys):
    dump = tmp_path / "rollout"
    dump.mkdir()
    good = {"input": rendered("What is 3 + 4?"), "output": "\\boxed{7}", "gts": "7", "score": 1.0, "step": 1}
    (dump / "1.jsonl").write_text(json.dumps(good) + "\n" + '{"input": "cut off' + "\n")
    assert main([str(dump), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{dump / '1.jsonl'} line 2: not JSON" in err
    assert "Traceback" not in err


def test_data_that_matches_no_prompt_is_an_error(v1_report, tmp_path, capsys):
    other = tmp_path / "other.parquet"
    pd.DataFrame.from_records(
        [
            {
                "data_source": "gsm8k",
                "prompt": [{"role": "user", "content": "Unrelated?"}],
                "reward_model": {"ground_truth": "1"},
            }
        ]
    ).to_parquet(other)
    assert main([str(v1_report.folder / "rollout"), "--out", str(tmp_path / "out"), "--data", str(other)]) == 2
    err = capsys.readouterr().err
    assert "prompt(s) match no row of --data" in err and "1.jsonl" in err


def test_a_missing_metrics_file_is_an_error(v1_report, tmp_path, capsys):
    missing = tmp_path / "metrics.jsonl"
    assert main([str(v1_report.folder / "rollout"), "--out", str(tmp_path / "out"), "--metrics", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


def test_single_sample_groups_are_neither_diverse_nor_non_diverse():
    from arena_verl.evaluation.groups import Group
    from arena_verl.tools.analyze.summary import count_groups

    single = Group(1, "math", "math", (True,), (1.0,), (10,))
    pair = Group(1, "math", "math", (False, False), (0.0, 0.0), (10, 12))
    counts = count_groups([single, single, pair])
    assert counts["groups"] == 1 and counts["single_sample_groups"] == 2 and counts["alpha"] == 1.0
    assert counts["samples"] == 2 and counts["zero_advantage_samples_rlvr"] == 2
