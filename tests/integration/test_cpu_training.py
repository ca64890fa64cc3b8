"""The real trainer, `python -m verl.trainer.main_ppo`, with the arena on CPU, through the recipes' real branch
(recipes/lib/experiment.sh with SETTING=cpu: readiness probe, pre-flight, run directory, per-attempt metrics file,
resume, supervised exec) and through recipes/cpu_smoke.sh, in four trainer starts:

1. `recipes/arena_paced.sh` (V1 trainer, CISPO, the paced live tournament) for 2 steps with a checkpoint at each,
   its judge SERVED (JUDGE_PLACEMENT=serve) by a loopback OpenAI-compatible server of the tests' own behind an API
   key, whose address the recipe waits for in a URL file, as under Slurm;
2. the same RUN_DIR with TOTAL_STEPS=3: it resumes from the step-2 checkpoint and logs step 3 only;
3. `recipes/cpu_smoke.sh` with the legacy trainer, two reward workers and two referee shards (the SIMULATED judge);
4. `recipes/rlvr_dapo.sh` (DAPO's group filtering) with the coin-flip toy policy, whose groups are mostly mixed, so
   that the replay buffer keeps groups and steps complete.

Real: verl's trainers, vLLM-CPU rollout, the streaming reward loop, the arena manager and its referee, the openai
judge client over HTTP, GRPO/CISPO, the FSDP2 update and the weight sync into vLLM. Not real: the policies are tiny
toy models (RANDOM weights: every answer wrong, every group routed; or built weights: a fair coin between two
answers), and the judges are the loopback server (a seeded coin, not a model) and the SIMULATED judge."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import psutil
import pytest

from arena_verl.data.convert import make_arithmetic
from arena_verl.data.metrics_log import read_records
from arena_verl.testing.toy import build_coin_flip_model, build_toy_model, make_coin_flip_data
from helpers import paths
from helpers.loopback_judge import LoopbackJudge

REPO = paths.REPO
RUN_TIMEOUT_S = 900  # the recipes' own limit (TIMEOUT_S); the test waits a little longer for their cleanup
BATCH, N = 2, 4  # configs/arena_setting/cpu.yaml
# A large learning rate, so that the policy visibly changes between steps: a stale rollout engine would then show
# a large rollout-vs-actor probability gap.
LR_OVERRIDE = "actor_rollout_ref.actor.optim.lr=0.05"
JUDGE_KEY = "arena-test-key"


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    root = tmp_path_factory.mktemp("cpu_training")
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


def recipe_run(experiment: str, run_dir: Path, *overrides: str, **env: str) -> tuple[dict, Path]:
    """``SETTING=cpu bash recipes/<experiment>.sh OVERRIDES`` with ``env``; returns the attempt's summary and its own
    metrics file (``RUN_DIR/metrics/<attempt>.jsonl``)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "SETTING", "RAY_ADDRESS"))}
    environment.update(SETTING="cpu", RUN_DIR=str(run_dir), TIMEOUT_S=str(RUN_TIMEOUT_S), **env)
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


def assert_arena_step(step: dict, calls_per_group: int) -> None:
    # Training-step counters cover the step's training samples only (no validation groups mixed in).
    assert step["arena/samples"] == BATCH * N and step["arena/groups"] == BATCH
    assert step["arena/duplicates"] == 0
    assert step["arena/generations"] == BATCH * N and step["arena/generations_discarded"] == 0
    for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late"):
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


@pytest.fixture(scope="module")
def judge_server():
    with LoopbackJudge(api_key=JUDGE_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def paced_run(assets, judge_server):
    """Two steps of arena_paced against the served judge; the judge's address appears in its URL file only after the
    recipe has started waiting (the recipe then puts the address into its command)."""
    run_dir = assets["root"] / "paced"
    url_file = assets["root"] / "judge_url"
    publish = threading.Timer(12.0, lambda: url_file.write_text(judge_server.url + "\n"))
    publish.start()
    try:
        summary, attempt = recipe_run(
            "arena_paced", run_dir, LR_OVERRIDE,
            TOTAL_STEPS="2", SAVE_FREQ="1", MODEL_PATH=str(assets["model"]), TRAIN_FILES=str(assets["train"]),
            VAL_FILES=str(assets["val"]), JUDGE_PLACEMENT="serve", JUDGE_URL_FILE=str(url_file),
            JUDGE_API_KEY=JUDGE_KEY, JUDGE_TOKENIZER=str(assets["model"]),
        )  # fmt: skip
    finally:
        publish.cancel()
    return run_dir, summary, attempt, judge_server.calls


def test_arena_paced_recipe_trains_two_steps_against_a_served_judge(paced_run, judge_server):
    run_dir, summary, attempt, served_calls = paced_run
    # The attempt's own metrics file under RUN_DIR/metrics/ (verl's file logger does not create the folder).
    assert attempt.parent == run_dir / "metrics" and training_steps(attempt) == [1, 2]
    assert summary["steps_completed"] == 2
    for step in summary["steps"]:
        assert_arena_step(step, calls_per_group=6)  # paced at live's budget, N=4: 1 + 2 + 3(N-3)
        assert_rollout_in_sync(step)
        assert {"actor/entropy", "timing_s/step", "critic/rewards/mean"} <= set(step)
        assert step["actor/pg_loss"] == step["actor/pg_loss"]  # CISPO's loss, finite
    assert abs(summary["steps"][1]["actor/entropy"] - summary["steps"][0]["actor/entropy"]) > 1e-3
    # Every judge call went over HTTP with the run's key: the server answered each, but for those paced's
    # completion grace cancelled in flight (counted as dropped; a cancelled request may still have been answered).
    assert_served(served_calls, summary["steps"])
    assert judge_server.refused == 0 and judge_server.coin_flips == 0  # every prompt showed two attempts
    # The judge counted its trace budget in tokens (JUDGE_TOKENIZER), not in bytes.
    log = (run_dir / "train.log").read_text(errors="replace")
    assert "UTF-8 bytes" not in log
    # Validation before training and after the last step, with val rows that say split=train and a group deadline
    # of 300 s: a validation sample that reached the referee would have held the run for minutes.
    assert [h["step"] for h in summary["val_history"]] == [0, 2]
    assert_validation_by_verifier_only(summary)
    assert summary["wall_s"] < 600
    assert {p.name for p in (run_dir / "checkpoints").glob("global_step_*")} == {"global_step_1", "global_step_2"}
    assert "arena_paced" in (run_dir / "commands.log").read_text()


def test_evaluation_reads_the_v1_trainers_validation_dumps(assets, paced_run, tmp_path):
    run_dir = paced_run[0]
    assert_evaluated(evaluate_dumps(run_dir, assets["val"], tmp_path), steps=[0, 2])


def test_the_recipe_resumes_from_its_last_checkpoint_and_logs_only_the_new_step(assets, paced_run, judge_server):
    run_dir, first, first_attempt, _ = paced_run
    first_records = first_attempt.read_text()
    calls_before = judge_server.calls
    summary, attempt = recipe_run(
        "arena_paced", run_dir, LR_OVERRIDE,
        TOTAL_STEPS="3", SAVE_FREQ="1", MODEL_PATH=str(assets["model"]), TRAIN_FILES=str(assets["train"]),
        VAL_FILES=str(assets["val"]), JUDGE_PLACEMENT="serve", JUDGE_URL=judge_server.url, JUDGE_API_KEY=JUDGE_KEY,
        JUDGE_TOKENIZER=str(assets["model"]),
    )  # fmt: skip
    # A new attempt file; the first attempt's file is untouched; only step 3 was trained, its counters hold step 3's
    # samples only (no double counting across the restart).
    assert attempt != first_attempt and first_attempt.read_text() == first_records
    assert training_steps(attempt) == [3]
    (step,) = summary["steps"]
    assert_arena_step(step, calls_per_group=6)
    assert_served(judge_server.calls - calls_before, [step])
    # The policy changed (large learning rate), and the rollout engine got the new weights after the resume.
    assert abs(step["actor/entropy"] - first["steps"][-1]["actor/entropy"]) > 1e-3
    assert_rollout_in_sync(step)
    assert_validation_by_verifier_only(summary)
    assert (run_dir / "checkpoints" / "global_step_3").is_dir()


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
        assert_arena_step(step, calls_per_group=6)  # summed over both shards; round robin at N=4 is 6 calls too
        assert_rollout_in_sync(step)
    assert abs(second["actor/entropy"] - first["actor/entropy"]) > 1e-3  # the policy changed in between
    assert_validation_by_verifier_only(summary)
    # The recipe also marked a copy of the validation file (its rows said split=train); the override above used the
    # original.
    marked = pd.read_parquet(tmp_path / "legacy" / "data" / "val_marked.parquet")
    assert {info["split"] for info in marked["extra_info"]} == {"test"}
    assert_evaluated(evaluate_dumps(tmp_path / "legacy", assets["val"], tmp_path), steps=[0, 2])


def test_rlvr_dapo_recipe_keeps_mixed_groups_and_completes_its_steps(assets, tmp_path):
    """DAPO's replay buffer keeps only groups whose verifier outcomes differ. The coin-flip policy gives mixed groups
    (probability 7/8 at N=4), so steps complete; uniform groups are discarded, regenerated and counted. The data are
    read in order and their first question is one the coin never answers: step 1 discards at least that group."""
    summary, attempt = recipe_run(
        "rlvr_dapo", tmp_path / "dapo", "trainer.val_before_train=False", "data.shuffle=False",
        TOTAL_STEPS="2", SAVE_FREQ="-1", TEST_FREQ="-1", MODEL_PATH=str(assets["coin_model"]),
        TRAIN_FILES=str(assets["coin_train"]), VAL_FILES=str(assets["coin_val"]),
    )  # fmt: skip
    assert training_steps(attempt) == [1, 2] and summary["val_history"] == []  # TEST_FREQ=-1: never
    for step in summary["steps"]:
        # rlvr: verifier rewards only, no judge; the referee only counted the groups.
        assert step["arena/judge_calls"] == 0 and step["arena/groups_routed"] == 0
        # Every kept group is mixed: the batch's mean reward lies strictly between all wrong and all right, and
        # some samples have a gradient.
        assert 0.0 < step["critic/rewards/mean"] < 1.0
        assert step["critic/advantages/max"] > 0.0 > step["critic/advantages/min"]
        # The generations the step cost: the kept batch plus every discarded group, N rollouts each.
        discarded = step["arena/generations_discarded"]
        assert discarded % N == 0 and step["arena/generations"] == BATCH * N + discarded
        for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late"):
            assert step[f"arena/fallback_{reason}"] == 0, reason
    # verl's replay buffer discarded and regenerated: the unanswerable question's group at least, in step 1.
    assert summary["steps"][0]["arena/generations_discarded"] >= N
