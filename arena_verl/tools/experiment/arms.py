"""The learning experiment's arms and sizes: which recipe each arm runs, with which judge, and the shapes every arm
shares (the CPU setting's small defaults overridden after the recipe, as a user overrides them).

=====================  ===================================  ====================================================
arm                    recipe                               non-diverse groups get
=====================  ===================================  ====================================================
``rlvr``               ``recipes/rlvr.sh``                  the verifier's reward (zero advantage)
``rlvr_dapo``          ``recipes/rlvr_dapo.sh``             discarded and regenerated (DAPO dynamic sampling)
``arena_live``         ``recipes/arena_live.sh``            the live tournament, judged by the step judge
``arena_live_random``  ``recipes/arena_live.sh``            the live tournament, judged by the random judge
``arena_live_certain`` ``recipes/arena_live.sh``            as ``arena_live``, certainty weighting on
``arena_live_random_certain``                               as ``arena_live_random``, certainty weighting on
``arenarl``            ``recipes/arenarl.sh``               every group (diverse too) in a round robin, step judge
``arena_live_slow``    ``recipes/arena_live.sh``            as ``arena_live`` with a judge latency (cost only)
``arena_live_noisy``   ``recipes/arena_live.sh``            as ``arena_live``, the step judge right 75% of the time
                                                            with a position bias of 0.1 (a small real judge)
``arena_live_noisy_certain``                                as ``arena_live_noisy``, certainty weighting on
``arena_live_half_lr`` ``recipes/arena_live.sh``            as ``arena_live`` at half the learning rate
``arena_live_ensemble`` ``recipes/arena_live.sh``           an ensemble judges: the step judge and a noisy,
                                                            first-biased copy of it (70% right, position bias 0.3)
``arena_live_ensemble_certain``                             as ``arena_live_ensemble``, certainty weighting on
``valid_chain``        ``recipes/rlvr.sh``                  reference: a right answer counts only through a fully
                                                            valid chain (:mod:`.valid_chain`, a scorer the config
                                                            names); no arena
=====================  ===================================  ====================================================

The step and random judges are programs (:mod:`arena_verl.judge.programs`), standing in for an LLM judge: the step
judge reads each trace's steps and prefers the longer valid prefix (it never sees the reference answer); the random
judge is the control, the arena's plumbing with no signal. The step judge here is exact (no noise, no position
bias): the experiment asks whether a judge that tells the traces apart helps at all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

__all__ = [
    "ARMS",
    "FAST",
    "FAST_QUICK",
    "GATE_CANDIDATES",
    "GATE_REFERENCE_ARM",
    "GATE_SEEDS",
    "GRID_ARMS",
    "Candidate",
    "DEFAULT_ARMS",
    "GATE_ARM",
    "Arm",
    "Plan",
    "FULL",
    "QUICK",
    "STEP_JUDGE",
    "RANDOM_JUDGE",
]

STEP_JUDGE = "arena_verl.judge.programs.step_judge:judge"
RANDOM_JUDGE = "arena_verl.judge.programs.random_judge:judge"
# The step judge without noise (accuracy 1, no position bias). The first grid (docs/benchmarks/learning_first) used
# 0.9 and 0.1; its judge's signal was thin, so this grid asks first whether an exact one helps.
STEP_JUDGE_KNOBS: dict = {}
# What a small real judge is like: right three times in four, and a tenth more likely to prefer the first trace.
NOISY_STEP_JUDGE_KNOBS: dict = {"accuracy": 0.75, "position_bias": 0.1}
CERTAINTY_ON = ("reward.arena.certainty_weighting=true",)
# A judge ensemble (reward.arena.judge.ensemble): the arm's step judge and a copy of it that is right 70% of the time
# and prefers the first trace 30% of the time, with noise of its own (seed 1), their verdicts averaged.
NOISY_COPY_MEMBER = (
    "reward.arena.judge.ensemble.members=[{name:noisy,callable_kwargs:{accuracy:0.7,position_bias:0.3,seed:1}}]",
)
# The valid-chain reference: verl's custom reward function, so the reward manager scores with it (a scorer the config
# names, not a second verifier).
VALID_CHAIN_REWARD = (
    "reward.custom_reward_function.path=pkg://arena_verl.tools.experiment.valid_chain",
    "reward.custom_reward_function.name=compute_score",
)
SLOW_JUDGE_LATENCY_S = 0.25  # seconds per call of arena_live_slow's judge: what a small served judge takes


@dataclass(frozen=True)
class Arm:
    name: str
    recipe: str  # recipes/<recipe>.sh
    judge: str | None = None  # a Python judge callable, module:function
    judge_kwargs: dict = field(default_factory=dict)
    cost_only: bool = False  # run at the first seed only: its figure is the cost, not the learning
    summary: str = ""
    overrides: tuple[str, ...] = ()  # Hydra overrides of this arm only (after the plan's)
    lr_scale: float = 1.0  # the arm's learning rate: the plan's times this


ARMS = {
    arm.name: arm
    for arm in (
        Arm("rlvr", "rlvr", summary="RLVR: verifier rewards only"),
        Arm("rlvr_dapo", "rlvr_dapo", summary="RLVR + DAPO dynamic sampling (non-diverse groups regenerated)"),
        Arm("arena_live", "arena_live", STEP_JUDGE, STEP_JUDGE_KNOBS, summary="Arena-Live, step judge"),
        Arm("arena_live_random", "arena_live", RANDOM_JUDGE, summary="Arena-Live, random judge (control)"),
        Arm(
            "arena_live_certain",
            "arena_live",
            STEP_JUDGE,
            STEP_JUDGE_KNOBS,
            summary="Arena-Live, step judge, certainty weighting",
            overrides=CERTAINTY_ON,
        ),
        Arm(
            "arena_live_random_certain",
            "arena_live",
            RANDOM_JUDGE,
            summary="Arena-Live, random judge, certainty weighting (control)",
            overrides=CERTAINTY_ON,
        ),
        Arm(
            "arena_live_noisy",
            "arena_live",
            STEP_JUDGE,
            NOISY_STEP_JUDGE_KNOBS,
            summary="Arena-Live, noisy step judge (75% right, position bias 0.1)",
        ),
        Arm(
            "arena_live_noisy_certain",
            "arena_live",
            STEP_JUDGE,
            NOISY_STEP_JUDGE_KNOBS,
            summary="Arena-Live, noisy step judge, certainty weighting",
            overrides=CERTAINTY_ON,
        ),
        Arm(
            "arena_live_half_lr",
            "arena_live",
            STEP_JUDGE,
            STEP_JUDGE_KNOBS,
            summary="Arena-Live, step judge, at half the learning rate",
            lr_scale=0.5,
        ),
        Arm(
            "valid_chain",
            "rlvr",
            summary="reference: a right answer counts only through a fully valid chain (no arena)",
            overrides=VALID_CHAIN_REWARD,
        ),
        Arm(
            "arena_live_ensemble",
            "arena_live",
            STEP_JUDGE,
            STEP_JUDGE_KNOBS,
            summary="Arena-Live, an ensemble of the step judge and a noisy, first-biased copy",
            overrides=NOISY_COPY_MEMBER,
        ),
        Arm(
            "arena_live_ensemble_certain",
            "arena_live",
            STEP_JUDGE,
            STEP_JUDGE_KNOBS,
            summary="Arena-Live, the ensemble of the step judge and its noisy copy, certainty weighting",
            overrides=NOISY_COPY_MEMBER + CERTAINTY_ON,
        ),
        Arm("arenarl", "arenarl", STEP_JUDGE, STEP_JUDGE_KNOBS, summary="ArenaRL: round robin on every group"),
        Arm(
            "arena_live_slow",
            "arena_live",
            STEP_JUDGE,
            {**STEP_JUDGE_KNOBS, "latency_s": SLOW_JUDGE_LATENCY_S},
            cost_only=True,
            summary=f"Arena-Live, step judge taking {SLOW_JUDGE_LATENCY_S} s a call (cost)",
        ),
    )
}
DEFAULT_ARMS = ("rlvr", "arena_live", "arena_live_random", "arena_live_certain", "arena_live_random_certain")
GATE_ARM = "rlvr"  # the gate's pilots: RLVR, and the reference that must move the policy (GATE_REFERENCE_ARM)
GATE_REFERENCE_ARM = "valid_chain"
# The grid of the fast trainer (issue 41): seeds 0.. are the grid's; the gate's pilots use GATE_SEEDS, never these.
GRID_ARMS = (
    "rlvr",
    "arena_live",
    "arena_live_certain",
    "arena_live_noisy",
    "arena_live_noisy_certain",
    "arena_live_random",
    "arena_live_random_certain",
    "valid_chain",
    "arena_live_half_lr",
)
GATE_SEEDS = (1001, 1002, 1003)


@dataclass(frozen=True)
class Plan:
    """The sizes every arm shares."""

    steps: int
    prompts_per_step: int  # data.train_batch_size
    group_size: int  # rollout.n
    response_tokens: int  # data.max_response_length
    test_freq: int  # validation every this many steps (and at the last)
    val_rows: int  # problems in the hard test split (and in the gate's own hard draw)
    val_n: int  # samples per validation problem
    train_rows: int
    learning_rate: float
    timeout_s: int  # one run's bound (the recipe's TIMEOUT_S)
    all_wrong_rows: int  # problems in the fixed all-wrong set (the starting policy wrong on every sample)
    val_splits: tuple[str, ...] = ("test", "all_wrong")  # the assets each run validates on
    # verl's use_remove_padding (its default, on) packs a micro-batch into one row whose dense block-diagonal causal
    # mask makes attention quadratic in the micro-batch: a 32-prompt x 8 step of verl's CPU trainer took 56.5 s packed
    # against 14.4 s padded, its actor update 34.7 s against 3.7 s (scripts/bench/verl_step_packing.py, on a loaded
    # machine). Off here; cpu.yaml keeps verl's default (every CPU test's timing depends on it).
    pack_sequences: bool = False
    warmup_steps: int = 0  # actor.optim.lr_warmup_steps (verl's linear warm-up, then constant); 0: none
    trainer: str = "verl"  # "verl": verl's trainer through the recipe; "fast": the fast trainer (.fast)

    def overrides(self) -> list[str]:
        """Hydra overrides after the recipe's own (the CPU setting's small defaults replaced)."""
        prompt_tokens = 64
        return [
            f"data.train_batch_size={self.prompts_per_step}",
            f"data.max_prompt_length={prompt_tokens}",
            f"data.max_response_length={self.response_tokens}",
            f"actor_rollout_ref.rollout.n={self.group_size}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={self.prompts_per_step}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={self.prompts_per_step * self.group_size}",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={self.prompts_per_step * self.group_size}",
            f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={self.prompts_per_step * self.group_size}",
            f"actor_rollout_ref.rollout.max_model_len={prompt_tokens + self.response_tokens}",
            f"actor_rollout_ref.rollout.max_num_batched_tokens={4 * (prompt_tokens + self.response_tokens)}",
            "actor_rollout_ref.rollout.max_num_seqs=64",
            f"actor_rollout_ref.actor.optim.lr={self.learning_rate}",
            f"actor_rollout_ref.actor.optim.lr_warmup_steps={self.warmup_steps if self.warmup_steps else -1}",
            "actor_rollout_ref.rollout.temperature=1.0",
            f"actor_rollout_ref.model.use_remove_padding={self.pack_sequences}",
            "trainer.val_before_train=True",
            "trainer.log_val_generations=0",
            # The judge sees each trace whole (the budget counts bytes without a judge tokenizer).
            "reward.arena.judge.max_trace_tokens=1024",
            # two verifier processes: a 256-sample step's verification waits on one (0.67 s against 1.16 s a step)
            "reward.arena.verifier_workers=2",
        ]


# The grid: 30 steps of 8 prompts x 8 samples on the hard mix, validated before and after training on 256 hard
# problems x 4 samples (standard error about 0.01) and on the all-wrong set (docs/benchmarks/learning.md). The learning
# rate is the gate's (its pilots choose it on a hard draw of their own): this is its value before the gate has run.
FULL = Plan(
    steps=30,
    prompts_per_step=8,
    group_size=8,
    response_tokens=96,
    test_freq=30,
    val_rows=256,
    val_n=4,
    train_rows=2000,
    learning_rate=3e-4,
    timeout_s=1800,
    all_wrong_rows=128,
)
# CI's form: the grid's plumbing (every arm's steps logged once, results.json and the plots), not its figures.
QUICK = Plan(
    steps=3,
    prompts_per_step=2,
    group_size=8,
    response_tokens=96,
    test_freq=3,
    val_rows=8,
    val_n=1,
    train_rows=64,
    learning_rate=1e-4,
    timeout_s=600,
    all_wrong_rows=4,
)


@dataclass(frozen=True)
class Candidate:
    """One setting the gate tries (fixed before its first pilot)."""

    learning_rate: float
    prompts_per_step: int
    steps: int
    warmup_steps: int = 0

    @property
    def label(self) -> str:
        return f"lr{self.learning_rate:g}_p{self.prompts_per_step}_s{self.steps}_w{self.warmup_steps}"


# The fast trainer's grid: 300 steps of 32 prompts x 8 samples, validated every 25 steps on 256 hard problems x 4
# samples and on the all-wrong set. Its learning rate, batch, length and warm-up are the gate's passing candidate's.
FAST = Plan(
    steps=300,
    prompts_per_step=32,
    group_size=8,
    response_tokens=96,
    test_freq=25,
    val_rows=256,
    val_n=4,
    train_rows=9600,  # every step's problems new (300 x 32)
    learning_rate=1e-4,
    timeout_s=1800,
    all_wrong_rows=128,
    trainer="fast",
)
# The gate's candidates, fixed before the first pilot (docs/benchmarks/learning.md, "The gate"): around the controls'
# one clean move (300 supervised steps at 1e-4, 32 prompts; the valid-chain reward moved 3 of 3 seeds there).
GATE_CANDIDATES = (
    Candidate(1e-4, 32, 300, 0),
    Candidate(5e-5, 32, 300, 0),
    Candidate(2e-4, 32, 300, 10),
)
# CI's form of the fast trainer: the real reward path for a few steps.
FAST_QUICK = dataclasses.replace(QUICK, trainer="fast")
