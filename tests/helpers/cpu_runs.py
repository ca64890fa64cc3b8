"""What the CPU training tests share: the toy assets, a recipe run through the real branch (SETTING=cpu), and the
checks of a healthy arena step. Not real: the policies are tiny toy models (RANDOM weights: every answer wrong, every
group routed; or built weights: a fair coin between two answers)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest

from arena_verl.data.convert import make_arithmetic
from arena_verl.data.metrics_log import read_records
from arena_verl.testing.toy import build_coin_flip_model, build_toy_model, make_coin_flip_data

from . import paths

REPO = paths.REPO
RUN_TIMEOUT_S = 900  # the recipes' own limit (TIMEOUT_S); the test waits a little longer for their cleanup
BATCH, N = 2, 4  # configs/arena_setting/cpu.yaml
# A large learning rate, so that the policy visibly changes between steps: a stale rollout engine would then show
# a large rollout-vs-actor probability gap.
LR_OVERRIDE = "actor_rollout_ref.actor.optim.lr=0.05"
JUDGE_KEY = "arena-test-key"


def build_assets(root: Path) -> dict:
    """The toy policies and data of the CPU training tests: a RANDOM-weight toy policy (every answer wrong) with 16
    training and 2 validation arithmetic rows whose rows say split=train, and the coin-flip policy with its data."""
    model = build_toy_model(root / "toy_model")
    train, val = root / "train.parquet", root / "val_says_train.parquet"
    make_arithmetic(train, rows=16, split="train", seed=0)
    # A validation set carved from the training data: its rows say split=train. Only the trainer's own signal can
    # tell the arena that these are validation samples.
    make_arithmetic(val, rows=2, split="train", seed=1)
    coin = build_coin_flip_model(root / "coin_flip_model")
    coin_train, coin_val = root / "coin_train.parquet", root / "coin_val.parquet"
    make_coin_flip_data(coin_train, rows=16, split="train")
    # The first question has an answer the coin never gives: its group is uniform (all wrong) and DAPO discards it.
    frame = pd.read_parquet(coin_train)
    frame.at[0, "reward_model"] = {**frame.at[0, "reward_model"], "ground_truth": "3"}
    frame.to_parquet(coin_train)
    make_coin_flip_data(coin_val, rows=2, split="test")
    return {"root": root, "model": model, "train": train, "val": val, "coin_model": coin, "coin_train": coin_train,
            "coin_val": coin_val}  # fmt: skip


def processes_with_marker(marker: str) -> list[str]:
    """Processes still alive that belong to a run: every process it starts (driver, Ray's head and workers, vLLM
    engines, verifier pools) inherits the run's VERL_FILE_LOGGER_PATH."""
    left = []
    for process in psutil.process_iter(["pid", "name"]):
        try:
            if process.environ().get("VERL_FILE_LOGGER_PATH") == marker and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {process.name()}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return left


def recipe_env(run_dir: Path, **env: str) -> dict:
    """The environment of ``SETTING=cpu bash recipes/<experiment>.sh``: the caller's, less its judge and Ray
    settings."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "SETTING", "RAY_ADDRESS"))}
    environment.update(SETTING="cpu", RUN_DIR=str(run_dir), TIMEOUT_S=str(RUN_TIMEOUT_S), **env)
    return environment


def recipe_run(experiment: str, run_dir: Path, *overrides: str, **env: str) -> tuple[dict, Path]:
    """``SETTING=cpu bash recipes/<experiment>.sh OVERRIDES`` with ``env``; returns the attempt's summary and its own
    metrics file (``RUN_DIR/metrics/<attempt>.jsonl``)."""
    environment = recipe_env(run_dir, **env)
    before = set((run_dir / "metrics").glob("*.jsonl"))
    result = subprocess.run(
        ["bash", str(REPO / "recipes" / f"{experiment}.sh"), *overrides],
        env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S + 120,
    )  # fmt: skip
    log_tail = result.stdout[-3000:] + result.stderr[-3000:]
    new_files = set((run_dir / "metrics").glob("*.jsonl")) - before
    assert len(new_files) == 1, log_tail  # one metrics file per attempt
    (attempt,) = new_files
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rc"] == 0 and result.returncode == 0, (run_dir / "train.log").read_text(errors="replace")[-6000:]
    assert result.stdout.splitlines()[-1].startswith(f"{experiment}: rc=0 steps=")
    assert not processes_with_marker(str(attempt)), "the run left processes behind"
    return summary, attempt


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
        "LR": "0.05",
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
    assert not processes_with_marker(str(out_dir / "metrics.jsonl")), "the run left processes behind"
    return summary


def checkpoint_weights(run_dir: Path, step: int) -> dict:
    """The actor's weights in verl's checkpoint of ``step`` (one FSDP rank), as plain float tensors."""
    import torch

    path = run_dir / "checkpoints" / f"global_step_{step}" / "actor" / "model_world_size_1_rank_0.pt"
    state = torch.load(path, map_location="cpu", weights_only=False)  # FSDP2 saves DTensors: not weights-only
    return {name: (t.to_local() if hasattr(t, "to_local") else t).float() for name, t in state.items()}


def model_weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return {name: t.float() for name, t in load_file(folder / "model.safetensors").items()}


def weight_distance(a: dict, b: dict) -> float:
    """The L2 distance between two sets of weights over the tensors both hold (a tied head is saved once by one)."""
    shared = sorted(set(a) & set(b))
    assert len(shared) >= 0.9 * max(len(a), len(b)), sorted(set(a) ^ set(b))
    return sum(float(((a[name] - b[name]) ** 2).sum()) for name in shared) ** 0.5


def training_steps(metrics_file: Path) -> list[int]:
    return [
        int(r["data"]["training/global_step"])
        for r in read_records(metrics_file)
        if "training/global_step" in r["data"]
    ]


def val_mean(summary: dict, key: str) -> float:
    (value,) = [v for k, v in summary["val"].items() if k.endswith(f"/{key}/mean@2")]
    return value


def assert_validation_by_verifier_only(summary: dict) -> None:
    assert val_mean(summary, "arena/validation") == 1.0  # every validation sample recognised as such
    assert val_mean(summary, "arena/routed") == 0.0 and val_mean(summary, "arena/judge_calls") == 0.0
    assert val_mean(summary, "arena/fallback") == 0.0  # no deadline fallback: nothing waited for a group


def assert_arena_step(step: dict, calls_per_group: int, simulated: bool) -> None:
    # Training-step counters cover the step's training samples only (no validation groups mixed in).
    # Whether a SIMULATED judge answered the step's calls reaches the tracker (a counter, like every figure).
    assert step["arena/simulated_judge"] == (1.0 if simulated else 0.0)
    assert step["arena/judge_calls_simulated"] == (step["arena/judge_calls"] if simulated else 0.0)
    assert step["arena/samples"] == BATCH * N and step["arena/groups"] == BATCH
    assert step["arena/duplicates"] == 0
    assert step["arena/generations"] == BATCH * N and step["arena/generations_discarded"] == 0
    for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late", "thin", "judge_down"):
        assert step[f"arena/fallback_{reason}"] == 0, reason
    # The toy policy is always wrong: every group is non-diverse and routed, so a non-zero advantage can only come
    # from the tournament's rewards.
    assert step["arena/groups_routed"] == BATCH and step["arena/alpha_routed"] == 1.0
    assert step["arena/judge_calls_per_routed_group"] == calls_per_group
    # Sample utilisation: RLVR would have given every sample a zero advantage; the arena gave none a zero one.
    assert step["arena/nonzero_advantage_share_rlvr"] == 0.0
    assert step["arena/alpha"] == 1.0 and 0.0 <= step["arena/first_position_win_share"] <= 1.0
    # The loopback judge orders traces transitively, the simulated one by hidden qualities: every group's strengths
    # differ, unless paced's completion grace cancelled calls and left too few verdicts to tell its traces apart.
    if step["arena/judge_calls_dropped"] == 0:
        assert step["arena/nonzero_advantage_share"] == 1.0 and step["arena/mean_abs_advantage"] > 0.45
    # GRPO's std-normalised advantage of a non-constant group of 4 reaches at least 0.5 on both sides ([1, 1, 1, 0] has
    # max exactly 0.5 minus the epsilon), so 0.45 separates "the tournament spread a group" from all-zero advantages.
    assert step["arena/nonzero_advantage_share"] > 0.0
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


def assert_served(served_calls: int, steps: list[dict]) -> None:
    """Every judge call the fit used was answered by the server (a retried call may be answered twice)."""
    calls = sum(s["arena/judge_calls"] for s in steps)
    dropped = sum(s["arena/judge_calls_dropped"] for s in steps)
    assert 0 < calls - dropped <= served_calls
    assert sum(s["arena/judge_failures"] for s in steps) == 0
