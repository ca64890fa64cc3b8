"""The arena reward manager inside the real verl 0.9.1 reward loop: Hydra config, Ray actors, RewardLoopManager,
then verl's own GRPO advantage. The judge is the SIMULATED judge (a trace's hidden quality comes from
extra_info.sim_quality); everything else is real."""

import random
import time
import uuid

import numpy as np
import pytest
import ray
import torch
from scipy.stats import kendalltau

from arena_verl.testing.toy import Sample, build_toy_tokenizer, make_batch
from arena_verl.verl_edge.validation_signal import VALIDATE_KEY
from helpers.verl_batch import compose_config


@pytest.fixture(scope="module")
def tokenizer_path(tmp_path_factory):
    return build_toy_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="module")
def tokenizer(tokenizer_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_path))


@pytest.fixture
def manager_factory(ray_cluster, tokenizer_path):
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager

    created = []

    def make(*overrides, workers=1):
        # Each manager gets its own referee name: a referee keeps the settings it was created with.
        name = f"referee_{uuid.uuid4().hex[:8]}"
        # A sharp SIMULATED judge, so that one tournament's order reliably follows the hidden quality. One reward
        # worker unless a test needs a group's samples spread over workers (each worker's start costs seconds).
        base = [
            f"reward.arena.referee_name={name}",
            "reward.arena.judge.sim_sharpness=4",
            f"reward.num_workers={workers}",
        ]
        config = compose_config(tokenizer_path, [*base, *overrides])
        manager = RewardLoopManager(config)
        created.append(manager)
        return manager, config

    yield make
    for manager in created:
        for worker in manager.reward_loop_workers:
            ray.kill(worker)
    time.sleep(0.5)


def group(uid, responses, qualities=None, **kwargs):
    qualities = qualities if qualities is not None else [None] * len(responses)
    return [Sample(uid, r, sim_quality=q, **kwargs) for r, q in zip(responses, qualities)]


def mixed_batch():
    diverse = group("diverse", [f"so \\boxed{{{4 if i % 2 else 5}}}" for i in range(8)], list(range(8)))
    correct_q = [0.3, -1.2, 2.0, 0.0, -0.4, 1.1, -2.2, 0.8]
    correct = group("correct", [f"step {i}: the answer is \\boxed{{4}}" for i in range(8)], correct_q)
    wrong_q = [-0.5, 1.5, 0.2, -1.9, 0.9, -0.1, 2.4, -1.0]
    wrong = group("wrong", [f"attempt {i}: \\boxed{{7}}" for i in range(8)], wrong_q)
    return diverse + correct + wrong, {"correct": correct_q, "wrong": wrong_q}


def test_rm_scores_then_grpo_advantages(manager_factory, tokenizer):
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    manager, config = manager_factory(workers=2)  # the batch split over two workers, groups across both
    samples, qualities = mixed_batch()
    batch = make_batch(tokenizer, samples)
    out = manager.compute_rm_score(batch)

    scores = out.batch["rm_scores"].sum(-1).numpy()
    info = out.non_tensor_batch
    assert out.meta_info["reward_extra_keys"][0] == "arena/verifier_reward"
    np.testing.assert_array_equal(scores[:8], [0, 1, 0, 1, 0, 1, 0, 1])  # diverse: exactly the verifier
    assert set(info["arena/routed"][:8]) == {0.0}
    assert set(info["arena/routed"][8:]) == {1.0} and set(info["arena/judge_calls"][8:]) == {18.0}

    response_mask = batch.batch["attention_mask"][:, batch.batch["prompts"].shape[1] :].float()
    token_rewards = out.batch["rm_scores"]
    advantages, _ = compute_grpo_outcome_advantage(token_rewards, response_mask, batch.non_tensor_batch["uid"])
    per_sample = (advantages * response_mask).sum(-1) / response_mask.sum(-1)
    for name, start in (("correct", 8), ("wrong", 16)):
        adv = per_sample[start : start + 8].numpy()
        assert np.abs(adv).max() > 0.1  # the zero-advantage case is gone
        assert kendalltau(adv, qualities[name]).statistic > 0.4  # ordered like the hidden quality
    # Plain verifier rewards of a uniform group would have given exactly zero.
    flat = torch.zeros_like(token_rewards)
    flat_adv, _ = compute_grpo_outcome_advantage(flat, response_mask, batch.non_tensor_batch["uid"])
    assert float(flat_adv[8:].abs().max()) == 0.0

    # The referee's sample-utilisation figures are verl's own GRPO advantages on this batch, and RLVR's on the
    # verifier rewards (only the diverse group's 8 samples move the policy).
    verifier = torch.zeros_like(token_rewards)
    verifier[torch.arange(len(scores)), response_mask.sum(-1).long() - 1] = torch.as_tensor(
        info["arena/verifier_reward"].astype(np.float32)
    )
    rlvr_adv, _ = compute_grpo_outcome_advantage(verifier, response_mask, batch.non_tensor_batch["uid"])
    rlvr_per_sample = (rlvr_adv * response_mask).sum(-1) / response_mask.sum(-1)
    metrics = ray.get(ray.get_actor(f"{config.reward.arena.referee_name}_0").metrics.remote())
    assert metrics["arena/advantage_samples"] == 24
    assert metrics["arena/mean_abs_advantage"] == pytest.approx(float(per_sample.abs().mean()), rel=1e-4)
    assert metrics["arena/mean_abs_advantage_rlvr"] == pytest.approx(float(rlvr_per_sample.abs().mean()), rel=1e-4)
    assert metrics["arena/nonzero_advantage_share"] == 1.0
    assert metrics["arena/nonzero_advantage_share_rlvr"] == pytest.approx(8 / 24)


def one_row(tokenizer, sample, **meta):
    data = make_batch(tokenizer, [sample])
    data.meta_info.update(meta)
    return data


def stream(manager, tokenizer, samples, seed=0):
    """What the agent loop does: one compute_score call per finished sample, on a random worker, out of order."""
    rng = random.Random(seed)
    order = list(range(len(samples)))
    rng.shuffle(order)
    refs = {}
    for i in order:
        refs[i] = rng.choice(manager.reward_loop_workers).compute_score.remote(one_row(tokenizer, samples[i]))
    return [ray.get(refs[i], timeout=120) for i in range(len(samples))]


def test_streaming_path_interleaved_groups_out_of_order(manager_factory, tokenizer):
    manager, _ = manager_factory(workers=2)
    samples, qualities = mixed_batch()
    results = stream(manager, tokenizer, samples, seed=3)
    rewards = np.array([r["reward_score"] for r in results])
    np.testing.assert_array_equal(rewards[:8], [0, 1, 0, 1, 0, 1, 0, 1])
    assert kendalltau(rewards[8:16], qualities["correct"]).statistic > 0.4
    assert all(r["reward_extra_info"]["arena/judge_calls"] == 18 for r in results[8:])
    assert len({tuple(r["reward_extra_info"]) for r in results}) == 1  # same keys for every sample


def test_validation_samples_never_reach_the_judge(manager_factory, tokenizer):
    manager, _ = manager_factory()
    marked = [Sample(f"val{i}", "\\boxed{4}", extra={"split": "test"}) for i in range(3)]
    results = [ray.get(manager.reward_loop_workers[0].compute_score.remote(one_row(tokenizer, s))) for s in marked]
    flagged = ray.get(
        manager.reward_loop_workers[0].compute_score.remote(
            one_row(tokenizer, Sample("val-meta", "\\boxed{4}"), validate=True)
        )
    )
    for result in results + [flagged]:
        assert result["reward_score"] == 1.0
        assert result["reward_extra_info"]["arena/validation"] == 1.0
        assert result["reward_extra_info"]["arena/judge_calls"] == 0.0


def with_trainer_flag(data, validating: bool):
    """What arena_verl.verl_edge.validation_signal adds to every reward call made by verl's agent loop."""
    data.non_tensor_batch[VALIDATE_KEY] = np.array([validating] * len(data), dtype=object)
    return data


def test_the_trainers_flag_overrides_the_datas_split(manager_factory, tokenizer):
    manager, _ = manager_factory()
    worker = manager.reward_loop_workers[0]
    # Validation rows carved from training data (split=train): validation, without a referee wait.
    val = ray.get(
        worker.compute_score.remote(
            with_trainer_flag(one_row(tokenizer, Sample("v", "\\boxed{4}", extra={"split": "train"})), True)
        ),
        timeout=60,
    )
    assert val["reward_extra_info"]["arena/validation"] == 1.0 and val["reward_extra_info"]["arena/judge_calls"] == 0
    # Training rows that say split=test (a quick run on a test file): training, judged with their group.
    rows = [Sample("t", f"attempt {i} \\boxed{{4}}", extra={"split": "test"}, session_id=i) for i in range(8)]
    refs = [worker.compute_score.remote(with_trainer_flag(one_row(tokenizer, r), False)) for r in rows]
    results = ray.get(refs, timeout=120)
    assert all(r["reward_extra_info"]["arena/validation"] == 0.0 for r in results)
    assert all(r["reward_extra_info"]["arena/judge_calls"] == 18 for r in results)


@pytest.mark.parametrize("mode", ["rlvr", "tournament_all", "pointwise", "adaptive_pointwise"])
def test_modes_through_the_real_reward_loop(manager_factory, tokenizer, mode):
    manager, config = manager_factory(f"reward.arena.mode={mode}")
    samples, _ = mixed_batch()
    out = manager.compute_rm_score(make_batch(tokenizer, samples))
    routed = out.non_tensor_batch["arena/routed"]
    scores = out.batch["rm_scores"].sum(-1).numpy()
    expected_routed = {"rlvr": [0, 0], "tournament_all": [1, 1], "pointwise": [1, 1], "adaptive_pointwise": [0, 1]}
    assert set(routed[:8]) == {float(expected_routed[mode][0])}
    assert set(routed[8:]) == {float(expected_routed[mode][1])}
    assert set(out.non_tensor_batch["arena/fallback"]) == {0.0}
    if mode == "rlvr":
        np.testing.assert_array_equal(scores, out.non_tensor_batch["arena/verifier_reward"])
        # Every sample was also sent to the referee without waiting: it counts what the arena would have routed.
        referee = ray.get_actor(f"{config.reward.arena.referee_name}_0")
        deadline = time.monotonic() + 60
        while (metrics := ray.get(referee.metrics.remote()))["arena/groups"] < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert metrics["arena/groups"] == 3 and metrics["arena/alpha"] == pytest.approx(2 / 3)
        assert metrics["arena/groups_all_correct"] == 1 and metrics["arena/groups_all_incorrect"] == 1
        assert metrics["arena/judge_calls"] == 0 and metrics["arena/groups_routed"] == 0
        assert ray.get(referee.judge_backend.remote()) == "none"


def test_incomplete_group_gets_verifier_rewards_at_the_deadline(manager_factory, tokenizer):
    manager, _ = manager_factory("reward.arena.group_deadline_s=2")
    samples = group("partial", [f"t{i} \\boxed{{4}}" for i in range(5)], [0.0] * 5)
    started = time.perf_counter()
    results = stream(manager, tokenizer, samples)
    # Answered at the 2 s deadline (plus actor start-up on a possibly loaded machine), not at the 900 s default.
    assert time.perf_counter() - started < 120
    assert all(r["reward_score"] == 1.0 and r["reward_extra_info"]["arena/fallback"] == 1 for r in results)


def test_a_referee_killed_mid_group_is_restarted_and_the_group_rebuilt(manager_factory, tokenizer):
    manager, config = manager_factory("reward.arena.group_deadline_s=60", workers=2)
    name = f"{config.reward.arena.referee_name}_0"
    samples = group("victim", [f"t{i} \\boxed{{4}}" for i in range(8)], list(range(8)))
    workers = manager.reward_loop_workers
    first = [workers[i % 2].compute_score.remote(one_row(tokenizer, s)) for i, s in enumerate(samples[:6])]
    referee = wait_for_referee(name, samples=6)
    ray.kill(referee, no_restart=False)
    wait_for_referee(name)  # Ray restarted it (the six waiting samples are already submitting again)
    rest = [workers[0].compute_score.remote(one_row(tokenizer, s)) for s in samples[6:]]
    results = ray.get(first + rest, timeout=120)
    # What is lost: the judge calls made before the crash and the referee's counters. What is not: the six
    # waiting samples submit again to the restarted referee, the group completes there and is judged.
    assert all(r["reward_extra_info"]["arena/fallback"] == 0 for r in results)
    assert all(r["reward_extra_info"]["arena/judge_calls"] == 18 for r in results)
    assert ray.get(referee.metrics.remote())["arena/groups_routed"] == 1


def wait_for_referee(name, samples=None):
    for _ in range(600):
        try:
            referee = ray.get_actor(name)
            seen = ray.get(referee.metrics.remote(), timeout=10)["arena/samples"]
            if samples is None or seen == samples:
                return referee
        except (ValueError, ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass  # not created yet, or restarting
        time.sleep(0.1)
    raise AssertionError(f"referee {name} unreachable, or never saw {samples} samples")


def test_bad_input_still_gets_a_reward(manager_factory, tokenizer):
    manager, _ = manager_factory("reward.arena.group_deadline_s=60")
    samples = [Sample("bad", "", session_id=0), Sample("bad", "\\boxed{4}", ground_truth=None, session_id=1)]
    samples += [Sample("bad", f"x{i} \\boxed{{4}}", session_id=i) for i in range(2, 8)]
    samples += [Sample("bad", "overflow \\boxed{4}", session_id=8), Sample("bad", "x3 \\boxed{4}", session_id=3)]
    results = stream(manager, tokenizer, samples, seed=1)
    info = [r["reward_extra_info"] for r in results]
    from arena_verl.verify.math_verifier import STATUSES

    assert info[0]["arena/verify_status"] == STATUSES.index("empty") and info[0]["arena/verifier_reward"] == 0
    assert info[1]["arena/verify_status"] == STATUSES.index("error") and info[1]["arena/verifier_reward"] == 0
    # Nine distinct samples for a group of eight: whichever arrives last overflows and keeps its verifier reward
    # (when that is session 3, both of its copies get that answer).
    overflowed = {samples[k].session_id for k, i in enumerate(info) if i["arena/fallback"] == 4}
    assert len(overflowed) == 1
    assert results[9] == results[3]  # the same sample twice gets the same answer
    assert all(np.isfinite(r["reward_score"]) for r in results)


def test_plugin_registers_arena_in_a_fresh_process():
    import subprocess
    import sys

    code = (
        "import verl\n"
        "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
        "print(get_reward_manager_cls('arena').__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("ArenaRewardManager"), out.stderr


class Recorder:
    def __init__(self):
        self.logged = []

    def log(self, data, step):
        self.logged.append((step, dict(data)))


def test_step_metrics_reach_the_trainers_tracker(manager_factory, tokenizer):
    from omegaconf import OmegaConf
    from verl.utils.tracking import Tracking

    import arena_verl.verl_plugin  # noqa: F401  (what `import verl` does through the entry point)

    manager, config = manager_factory()
    tracker = Tracking("arena-test", "metrics", default_backend="console", config=OmegaConf.to_container(config))
    recorder = Recorder()
    tracker.logger = {"console": recorder}
    samples, _ = mixed_batch()
    manager.compute_rm_score(make_batch(tokenizer, samples))
    tracker.log({"training/global_step": 1}, step=1)
    tracker.log({"val-core/acc": 0.5}, step=1)  # validation logs are left alone
    tracker.log({"training/global_step": 2}, step=2)  # nothing happened since step 1
    (_, step1), (_, val), (_, step2) = recorder.logged
    assert step1["arena/groups"] == 3 and step1["arena/alpha_routed"] == pytest.approx(2 / 3)
    assert step1["arena/judge_calls_per_routed_group"] == 18
    assert step1["arena/all_correct_share_of_uniform"] == 0.5
    assert not any(key.startswith("arena/") for key in val)
    assert step2["arena/groups"] == 0


def test_importlib_fallback_resolves_the_manager_without_the_registry(tokenizer_path):
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    from arena_verl.reward_manager import ArenaRewardManager

    config = compose_config(
        tokenizer_path,
        [
            "reward.reward_manager.source=importlib",
            "reward.reward_manager.name=ArenaRewardManager",
            "reward.reward_manager.module.path=pkg://arena_verl.reward_manager",
        ],
    )
    assert resolve_reward_manager_cls(config) is ArenaRewardManager
