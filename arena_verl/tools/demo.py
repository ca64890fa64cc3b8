"""CPU demo: one reward step of a GRPO run through the real verl 0.9.1 reward loop with the arena reward manager.

Real: verl's Hydra config, Ray, verl's ``RewardLoopManager`` and ``RewardLoopWorker`` actors, the registered
``arena`` reward manager, math-verify, the referee actor, the Bradley-Terry fit and verl's GRPO advantage. Not real
by default: the rollouts are synthetic text (``--rollouts sample`` takes the bundled real traces instead) and the
judge is the SIMULATED judge, which ranks synthetic traces by a hidden quality carried in ``extra_info.sim_quality``
(real traces, which have none, by a hash of their text); ``--judge`` takes a real one.

    arena-verl demo                                 # 32 prompts x 8 samples, mode arena, live tournament
    arena-verl demo --mode rlvr                     # the RLVR baseline on the same rollouts
    arena-verl demo --rollouts sample               # the bundled REAL traces (still the simulated judge)
    arena-verl demo --rollouts sample --judge transformers:./smollm2   # a real (small) model as the judge

(``python -m arena_verl.demo`` is the same command.)

Input contract: ``--prompts`` 1..8192, ``--n`` 2..64, ``--prompts x --n`` at most 16384 samples (synthetic
rollouts), ``--workers`` 1..4 per usable CPU, a ``--judge`` or ``--seed`` that cannot be used: one ``error:`` line
naming the flag and its bound, exit 2, before anything is built or Ray starts.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl import sample_traces
from arena_verl.backend_registry import backend_of
from arena_verl.core.errors import InputError, guarded
from arena_verl.core.modes import default_strategy, needs_judge
from arena_verl.core.names import DIVERSITY_TOL, MODES, ROUTE_NAMES
from arena_verl.core.referee.metrics import NONZERO_ADVANTAGE_TOL
from arena_verl.core.routing import is_uniform
from arena_verl.core.strategies import strategy_names
from arena_verl.judge.spec import JUDGE_SPEC_FORMS, judge_settings_from_spec
from arena_verl.testing.toy import Sample, build_toy_tokenizer, make_batch


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


SIMULATED_BANNER = (
    "="
    * 100
    + "\n JUDGE: SIMULATED. No model reads these traces: verdicts are drawn from a hidden quality (synthetic rollouts) "
    "or\n from a hash of each trace's text (the real sample). The figures test the plumbing, not a judge. Give "
    "--judge\n transformers:PATH, vllm:PATH or openai:URL#MODEL for a real one.\n" + "=" * 100
)


# The demo's own judge: the SIMULATED one, sharper than its default and with a first-position bias to show.
DEMO_JUDGE = "simulated?sharpness=2&position_bias=0.53"
# The referee's metrics the report prints (those a step has: rlvr has none).
REPORTED_METRICS = (
    "alpha",
    "alpha_routed",
    "judge_calls_per_routed_group",
    "all_correct_share_of_uniform",
    "judge_failures",
    "first_position_win_share",
    "nonzero_advantage_share",
    "nonzero_advantage_share_rlvr",
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prompts", type=int, default=32, help="prompts (groups); with --rollouts sample, at most this many"
    )
    parser.add_argument("--n", type=int, default=8, help="synthetic rollouts: samples per prompt (rollout.n)")
    parser.add_argument(
        "--rollouts",
        default="synthetic",
        choices=("synthetic", "sample"),
        help="synthetic: generated text with a hidden quality (Kendall tau is measured against it); sample: the "
        "bundled REAL traces (arena_verl/sample_traces, written by a real model through verl's trainer)",
    )
    parser.add_argument("--mode", default="arena", choices=MODES)
    parser.add_argument(
        "--strategy", default=None, choices=strategy_names(),
        help="the tournament's schedule (default: the mode's own, as reward.arena.strategy: null gives it; "
        "round_robin for tournament_all, live otherwise)",
    )  # fmt: skip
    parser.add_argument(
        "--judge",
        default=DEMO_JUDGE,
        help=f"{' | '.join(JUDGE_SPEC_FORMS)} (default: the SIMULATED judge, {DEMO_JUDGE})",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="reward.num_workers")


@dataclasses.dataclass
class StepResult:
    """What one reward step gave: verl's output batch and the referee's metrics."""

    batch: Any  # the DataProto handed to compute_rm_score
    out: Any  # its output (rm_scores, the arena's extra info)
    metrics: dict
    elapsed_s: float


# What one reward step of the demo may ask for: it runs on this machine, in seconds to minutes (4096 samples take
# about 15 s on 2 CPUs). Beyond these the command is refused before anything is built.
MAX_SAMPLES = 16384  # --prompts x --n (synthetic rollouts)
MAX_PROMPTS = MAX_SAMPLES // 2
MAX_N = 64  # samples per prompt: the tournament's judge calls grow with the group
WORKERS_PER_CPU = 4  # reward workers are Ray actor processes: at most this many per CPU the demo may use


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity; the machine's count where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_sizes(args: argparse.Namespace) -> None:
    """Refuse sizes the demo cannot run here (InputError naming the flag and its bound); nothing is built yet."""
    max_workers = WORKERS_PER_CPU * usable_cpus()
    bounds = (("--prompts", args.prompts, 1, MAX_PROMPTS), ("--n", args.n, 2, MAX_N))
    for flag, value, low, high in (*bounds, ("--workers", args.workers, 1, max_workers)):
        if not low <= value <= high:
            where = f" ({WORKERS_PER_CPU} per usable CPU, {usable_cpus()} here)" if flag == "--workers" else ""
            raise InputError(f"demo {flag} {value}: must be between {low} and {high}{where}")
    if args.rollouts == "synthetic" and args.prompts * args.n > MAX_SAMPLES:
        raise InputError(
            f"demo --prompts {args.prompts} x --n {args.n} = {args.prompts * args.n} samples: at most {MAX_SAMPLES}"
        )


def run(args: argparse.Namespace) -> int:
    """Validate (bad input: InputError, exit 2, before anything is built), build the rollouts, run one reward step,
    print what it did."""
    check_sizes(args)
    try:
        judge = judge_settings_from_spec(args.judge)
        samples = synthetic_rollouts(args.prompts, args.n, args.seed) if args.rollouts == "synthetic" else None
        samples = samples if samples is not None else sample_rollouts(args.prompts)
    except ValueError as exc:  # a judge spec or seed the demo cannot use (InputError included)
        raise InputError(f"demo: {exc}") from None
    group_size = len([s for s in samples if s.uid == samples[0].uid])
    result = reward_step(args, judge, samples, group_size)
    print_report(args, judge, samples, group_size, result)
    return 0


def _demo_config(args: argparse.Namespace, judge, tokenizer_path: Path, group_size: int):
    """verl's own ppo_trainer with the arena switched on by overrides, as a user would on the command line."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf, open_dict

    extraction = "boxed" if args.rollouts == "synthetic" else sample_traces.ANSWER_EXTRACTION
    with initialize_config_module("verl.trainer.config", version_base=None):
        config = compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={tokenizer_path}",
                f"actor_rollout_ref.rollout.n={group_size}",
                f"reward.num_workers={args.workers}",
                "reward.reward_manager.name=arena",
                f"+reward.arena.mode={args.mode}",
                *([f"+reward.arena.strategy={args.strategy}"] if args.strategy is not None else []),
                # the bundled traces were scored with the answer extraction of their run
                f"+reward.arena.answer_extraction={extraction}",
            ],
        )
    with open_dict(config):  # the judge as a whole node: no Hydra quoting of paths and URLs
        config.reward.arena.judge = OmegaConf.create(judge.as_keys())
    return config


def reward_step(args: argparse.Namespace, judge, samples: list[Sample], group_size: int) -> StepResult:
    """One ``compute_rm_score`` through verl's RewardLoopManager on a local Ray cluster (always shut down)."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import ray
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager

    with tempfile.TemporaryDirectory() as folder:
        tokenizer_path = build_toy_tokenizer(Path(folder))
        config = _demo_config(args, judge, tokenizer_path, group_size)
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path))
        longest = max(len(tokenizer.encode(s.response)) for s in samples) + 1
        batch = make_batch(tokenizer, samples, response_length=max(64, longest))

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            manager = RewardLoopManager(config)
            started = time.perf_counter()
            out = manager.compute_rm_score(batch)
            elapsed = time.perf_counter() - started
            referee = ray.get_actor("arena_referee_0") if needs_judge(args.mode) else None
            metrics = ray.get(referee.metrics.remote()) if referee is not None else {}
        finally:
            ray.shutdown()
    return StepResult(batch, out, metrics, elapsed)


def print_report(args: argparse.Namespace, judge, samples: list[Sample], group_size: int, result: StepResult) -> None:
    """The step as a verl user reads it: routes, rewards and GRPO advantages per group, then the arena's figures."""
    from scipy.stats import kendalltau
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    batch, info, num_groups = result.batch, result.out.non_tensor_batch, len(samples) // group_size
    token_rewards = result.out.batch["rm_scores"]
    response_mask = batch.batch["attention_mask"][:, batch.batch["prompts"].shape[1] :].float()
    advantages, _ = compute_grpo_outcome_advantage(token_rewards, response_mask, batch.non_tensor_batch["uid"])
    sample_adv = ((advantages * response_mask).sum(-1) / response_mask.sum(-1)).numpy()
    verifier = info["arena/verifier_reward"]
    quality = np.array([np.nan if s.sim_quality is None else s.sim_quality for s in samples])

    simulated = backend_of(judge).simulated
    if simulated:
        print(SIMULATED_BANNER)
    strategy = args.strategy or default_strategy(args.mode)
    print(f"arena-verl demo: mode={args.mode} strategy={strategy}, {num_groups} prompts x {group_size} samples")
    judge_line = "SIMULATED" if simulated else f"{judge.backend} ({judge.options.model_path})"
    rollout_line = "synthetic text" if args.rollouts == "synthetic" else f"REAL traces by {sample_traces.MODEL}"
    print(f"judge: {judge_line}; rollouts: {rollout_line}")
    print(
        f"reward step (compute_rm_score): {result.elapsed_s:.2f} s on {os.cpu_count()} CPUs, "
        f"{args.workers} reward workers"
    )
    print()
    print("| group | verifier rewards | route | judge calls | rewards | GRPO advantages |")
    print("| --- | --- | --- | ---: | --- | --- |")
    taus, uniform = [], []
    for g in range(num_groups):
        rows = slice(g * group_size, (g + 1) * group_size)
        rewards = token_rewards[rows].sum(-1).numpy()
        route = ROUTE_NAMES[int(info["arena/route"][rows][0])]
        uniform.append(is_uniform(verifier[rows], DIVERSITY_TOL))
        if route == "tournament" and uniform[-1] and not np.isnan(quality[rows]).any():
            taus.append(kendalltau(rewards, quality[rows]).statistic)
        if g < 8:
            print(
                f"| {g} | {fmt(verifier[rows], 0)} | {route} | {int(info['arena/judge_calls'][rows][0])} "
                f"| {fmt(rewards, 2)} | {fmt(sample_adv[rows], 2)} |"
            )
    print(f"(first {min(8, num_groups)} of {num_groups} groups)\n")
    zero_adv = np.abs(sample_adv) <= NONZERO_ADVANTAGE_TOL  # the referee's nonzero_advantage threshold
    print(f"non-diverse groups (zero advantage under RLVR): {sum(uniform)} of {num_groups}")
    rlvr_zero = np.repeat(uniform, group_size).mean()
    print(f"samples with zero GRPO advantage: {zero_adv.mean():.0%} (RLVR: {rlvr_zero:.0%})")
    if taus:
        print(f"routed non-diverse groups: mean Kendall tau(reward, hidden quality) = {np.mean(taus):.3f}")
    for key in REPORTED_METRICS:
        if f"arena/{key}" in result.metrics:
            print(f"arena/{key}: {result.metrics[f'arena/{key}']:.3f}")
    if simulated:
        print("\n(judge: SIMULATED; see the banner above)")


def sample_rollouts(max_groups: int) -> list[Sample]:
    """The bundled real traces (verl rollout dump lines), grouped by uid, as demo samples (no hidden quality): the
    first ``max_groups`` groups in step order."""
    from arena_verl.data.dump_files import find_dump_files, read_jsonl
    from arena_verl.data.dumps import prompt_groups

    samples = []
    for path in find_dump_files(sample_traces.SAMPLE_DIR).values():
        for group_id, records in prompt_groups(path, read_jsonl(path)).items():
            uid = f"{path.stem}/{group_id}"
            for k, record in enumerate(records):
                samples.append(
                    Sample(
                        uid=uid,
                        problem=record["input"],
                        ground_truth=str(record.get("gts")),
                        response=record["output"],
                        data_source="math",
                        session_id=k,
                    )
                )
    sizes_by_uid = collections.Counter(s.uid for s in samples)  # in first-seen order: step, then group
    kept = set(list(sizes_by_uid)[:max_groups])
    samples = [s for s in samples if s.uid in kept]
    sizes = {sizes_by_uid[uid] for uid in kept}
    if len(sizes) != 1:
        raise ValueError(f"{sample_traces.SAMPLE_DIR}: groups of different sizes {sorted(sizes)}")
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


def fmt(values, digits: int) -> str:
    return " ".join(f"{v:.{digits}f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
