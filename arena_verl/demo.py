"""CPU demo: one reward step of a GRPO run through the real verl 0.9.1 reward loop with the arena reward manager.

Real: verl's Hydra config, Ray, verl's ``RewardLoopManager`` and ``RewardLoopWorker`` actors, the registered
``arena`` reward manager, math-verify, the referee actor, the Bradley-Terry fit and verl's GRPO advantage. Not real:
the rollouts are synthetic text (no policy model runs on CPU here) and the judge is the SIMULATED judge, which ranks
traces by a hidden quality carried in ``extra_info.sim_quality``.

    python -m arena_verl.demo                       # 32 prompts x 8 samples, mode arena, live tournament
    python -m arena_verl.demo --mode rlvr           # the RLVR baseline on the same rollouts
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .settings import MODES
from .tournament import STRATEGIES
from .toy import Sample, build_toy_tokenizer, make_batch


def synthetic_rollouts(num_prompts: int, n: int, seed: int) -> list[Sample]:
    """Prompts of mixed difficulty; easy ones tend to be all correct, hard ones all wrong (non-diverse groups).
    Each trace gets a hidden quality: correct traces are better on average, and traces vary within a group."""
    rng = np.random.default_rng(seed)
    samples = []
    for p in range(num_prompts):
        a, b = (int(x) for x in rng.integers(2, 50, size=2))
        truth = a + b
        solve_rate = float(rng.choice([0.0, 0.05, 0.5, 0.95, 1.0], p=[0.25, 0.1, 0.3, 0.1, 0.25]))
        for k in range(n):
            correct = rng.random() < solve_rate
            answer = truth if correct else truth + int(rng.integers(1, 9))
            quality = float(rng.normal(loc=1.0 if correct else -1.0))
            samples.append(
                Sample(
                    uid=f"prompt-{p}",
                    problem=f"What is {a} + {b}?",
                    ground_truth=str(truth),
                    response=f"Attempt {k}: {a} plus {b}, carry the tens. The answer is \\boxed{{{answer}}}",
                    sim_quality=quality,
                    session_id=k,
                )
            )
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--n", type=int, default=8, help="samples per prompt (actor_rollout_ref.rollout.n)")
    parser.add_argument("--mode", default="arena", choices=MODES)
    parser.add_argument("--strategy", default="live", choices=STRATEGIES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="reward.num_workers")
    args = parser.parse_args()

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import ray
    from hydra import compose, initialize_config_module
    from scipy.stats import kendalltau
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    with tempfile.TemporaryDirectory() as folder:
        tokenizer_path = build_toy_tokenizer(Path(folder))
        # verl's own ppo_trainer with the arena switched on by overrides, as a user would on the command line.
        with initialize_config_module("verl.trainer.config", version_base=None):
            config = compose(
                "ppo_trainer",
                overrides=[
                    f"actor_rollout_ref.model.path={tokenizer_path}",
                    f"actor_rollout_ref.rollout.n={args.n}",
                    f"reward.num_workers={args.workers}",
                    "reward.reward_manager.name=arena",
                    f"+reward.arena.mode={args.mode}",
                    f"+reward.arena.strategy={args.strategy}",
                    "+reward.arena.judge.backend=simulated",
                    "+reward.arena.judge.sim_sharpness=2.0",
                    "+reward.arena.judge.sim_position_bias=0.53",
                ],
            )
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path))
        samples = synthetic_rollouts(args.prompts, args.n, args.seed)
        batch = make_batch(tokenizer, samples)

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            manager = RewardLoopManager(config)
            started = time.perf_counter()
            out = manager.compute_rm_score(batch)
            elapsed = time.perf_counter() - started
            referee = ray.get_actor("arena_referee_0") if args.mode != "rlvr" else None
            metrics = ray.get(referee.metrics.remote()) if referee is not None else {}
        finally:
            ray.shutdown()

    info = out.non_tensor_batch
    token_rewards = out.batch["rm_scores"]
    response_mask = batch.batch["attention_mask"][:, batch.batch["prompts"].shape[1] :].float()
    uids = batch.non_tensor_batch["uid"]
    advantages, _ = compute_grpo_outcome_advantage(token_rewards, response_mask, uids)
    sample_adv = ((advantages * response_mask).sum(-1) / response_mask.sum(-1)).numpy()
    verifier = info["arena/verifier_reward"]
    quality = np.array([s.sim_quality for s in samples])

    print(f"arena-verl CPU demo: mode={args.mode} strategy={args.strategy}, {args.prompts} prompts x {args.n} samples")
    print("judge: SIMULATED (hidden quality from extra_info.sim_quality); rollouts: synthetic text")
    print(f"reward step (compute_rm_score): {elapsed:.2f} s on {os.cpu_count()} CPUs, {args.workers} reward workers")
    print()
    print("| group | verifier rewards | route | judge calls | rewards | GRPO advantages |")
    print("| --- | --- | --- | ---: | --- | --- |")
    route_names = {0.0: "verifier", 1.0: "tournament", 2.0: "pointwise"}
    taus = []
    for g in range(args.prompts):
        rows = slice(g * args.n, (g + 1) * args.n)
        rewards = token_rewards[rows].sum(-1).numpy()
        route = route_names[float(info["arena/route"][rows][0])]
        if route == "tournament" and np.ptp(verifier[rows]) == 0:
            taus.append(kendalltau(rewards, quality[rows]).statistic)
        if g < 8:
            print(
                f"| {g} | {fmt(verifier[rows], 0)} | {route} | {int(info['arena/judge_calls'][rows][0])} "
                f"| {fmt(rewards, 2)} | {fmt(sample_adv[rows], 2)} |"
            )
    print(f"(first 8 of {args.prompts} groups)\n")
    uniform = np.array([np.ptp(verifier[g * args.n : (g + 1) * args.n]) == 0 for g in range(args.prompts)])
    zero_adv = np.abs(sample_adv) < 1e-6
    print(f"non-diverse groups (zero advantage under RLVR): {uniform.sum()} of {args.prompts}")
    print(f"samples with zero GRPO advantage: {zero_adv.mean():.0%} (RLVR: {np.repeat(uniform, args.n).mean():.0%})")
    if taus:
        print(f"routed non-diverse groups: mean Kendall tau(reward, hidden quality) = {np.mean(taus):.3f}")
    for key in ("alpha_routed", "judge_calls_per_routed_group", "all_correct_share_of_uniform", "judge_failures"):
        if f"arena/{key}" in metrics:
            print(f"arena/{key}: {metrics[f'arena/{key}']:.3f}")


def fmt(values, digits: int) -> str:
    return " ".join(f"{v:.{digits}f}" for v in values)


if __name__ == "__main__":
    main()
