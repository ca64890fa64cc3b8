"""verl's run-time rules for a composed trainer config, checked before anything starts.

verl 0.9.1 checks several shapes only once the models are loaded, validation has run and a first rollout is done
(or never, and pads instead). Each rule here names the keys, the rule and a fix, so that ``python -m arena_verl.recipe
show`` (the recipes' ``--dry-run`` and their pre-flight) refuses the config instead:

- **mini-batches** (the actor's, and the critic's when there is one): ``ppo_mini_batch_size x rollout.n`` samples
  are split evenly over the data-parallel ranks (``workers/engine_workers.py``, ``train_batch``: ``assert
  mini_batch_size % data_parallel_size == 0``, not caught by ``validate_config`` under ``use_dynamic_bsz``);
- **padding**: the V1 trainer pads every batch to a multiple of ``lcm(dp, mini-batch samples)``
  (``trainer/ppo/v1/trainer_base.py``, ``_get_required_batch_multiple``): a batch that is not one is partly dummy
  samples, every step (the legacy trainer does not pad);
- **rollout replicas**: the trainer's GPUs are cut into vLLM replicas of ``tensor x data x pipeline`` parallel GPUs,
  a replica larger than a node being whole nodes (``workers/rollout/replica.py`` asserts it) and a smaller one
  tiling its node (else its tensor-parallel group straddles two nodes);
- **verl's reward-model pool**: its replicas are cut the same way from ``reward.reward_model`` GPUs;
- **reward-loop concurrency**: each ``RewardLoopWorker`` is a Ray async actor without a ``max_concurrency`` option
  (``experimental/reward_loop/reward_loop.py``, ``_init_reward_loop_workers``), so Ray's default of 1000 concurrent
  calls applies; an arena ``run_single`` waits for its whole group, so a worker holding more training samples than
  that queues group members behind calls that wait for them (every such group then falls back at its deadline).

The config is anything :func:`arena_verl.settings.config_value` reads (a composed DictConfig, a mapping).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["run_time_problems", "RAY_ASYNC_ACTOR_CONCURRENCY"]

# Ray's default max_concurrency for async actors (ray_constants.DEFAULT_MAX_CONCURRENCY_ASYNC).
RAY_ASYNC_ACTOR_CONCURRENCY = 1000
# Members of a batch go to reward workers at random (random.choice per sample): the busiest worker holds about
# mean + z * sqrt(mean) calls; z = 4 keeps a shape refused below one in ~30 000 steps of reaching the cap.
_LOAD_SPREAD_Z = 4.0


def _get(config, key: str, default: Any = None) -> Any:
    from arena_verl.settings import config_value

    value = config_value(config, key)
    return default if value is None else value


def _int(config, key: str, default: int = 1) -> int:
    return int(_get(config, key, default))


def _mini_batch_hint(mini: int, batch: int, step: int) -> str:
    """Mini-batch sizes that fit: multiples of ``step`` that divide the batch (nearest to ``mini`` first)."""
    fitting = sorted((m for m in range(step, batch + 1, step) if batch % m == 0), key=lambda m: (abs(m - mini), m))
    if fitting:
        return f"e.g. {' or '.join(str(m) for m in sorted(fitting[:2]))}, which divide data.train_batch_size {batch}"
    return f"e.g. {-(-mini // step) * step}, with a data.train_batch_size that is a multiple of it"


def _uses_critic(config) -> bool:
    """verl's ``need_critic``: ``critic.enable`` when set, else a GAE advantage."""
    enable = _get(config, "critic.enable")
    return bool(enable) if enable is not None else _get(config, "algorithm.adv_estimator") == "gae"


def _update_rules(config, role: str, gpus: int) -> tuple[list[str], int | None]:
    """The mini-batch rule of one trained model (``actor_rollout_ref.actor`` or ``critic``); returns its problems
    and its mini-batch in samples (None when its data-parallel size is already wrong)."""
    n = _int(config, "actor_rollout_ref.rollout.n")
    mini = _int(config, f"{role}.ppo_mini_batch_size")
    batch = _int(config, "data.train_batch_size")
    ulysses = max(
        _int(config, f"{role}.fsdp_config.ulysses_sequence_parallel_size"),
        _int(config, f"{role}.ulysses_sequence_parallel_size"),
    )
    if gpus % ulysses:
        return [
            f"the trainer's {gpus} GPUs (trainer.nnodes x trainer.n_gpus_per_node) do not divide by "
            f"{role}.ulysses_sequence_parallel_size {ulysses}"
        ], None
    dp = gpus // ulysses
    problems = []
    if batch < mini:
        problems.append(
            f"data.train_batch_size {batch} is smaller than {role}.ppo_mini_batch_size {mini}: set "
            "ppo_mini_batch_size <= train_batch_size"
        )
    samples = mini * n
    if samples % dp:
        step = dp // math.gcd(dp, n)  # mini-batch sizes whose samples divide by dp are the multiples of this
        problems.append(
            f"{role}.ppo_mini_batch_size {mini} x actor_rollout_ref.rollout.n {n} = {samples} samples per "
            f"mini-batch do not divide by the data-parallel size {dp} (trainer.nnodes x trainer.n_gpus_per_node = "
            f"{gpus} GPUs / ulysses {ulysses}); verl asserts it at the first update: use a ppo_mini_batch_size "
            f"that is a multiple of {step} ({_mini_batch_hint(mini, batch, step)}) or a trainer share whose "
            f"data-parallel size divides {samples}"
        )
        return problems, None
    return problems, samples


def _trainer_rules(config, gpus: int) -> list[str]:
    roles = ["actor_rollout_ref.actor"] + (["critic"] if _uses_critic(config) else [])
    problems, multiple = [], gpus
    for role in roles:
        found, samples = _update_rules(config, role, gpus)
        problems += found
        multiple = math.lcm(multiple, samples) if samples and multiple else None
    # The V1 trainer pads every batch to lcm(dp, the mini-batches' samples); the legacy trainer does not pad.
    n, batch = _int(config, "actor_rollout_ref.rollout.n"), _int(config, "data.train_batch_size")
    if multiple and _get(config, "trainer.use_v1", True) and (batch * n) % multiple:
        padded = -(-batch * n // multiple) * multiple
        problems.append(
            f"data.train_batch_size {batch} x rollout.n {n} = {batch * n} samples per step are not a multiple of "
            f"{multiple} (the lcm of the data-parallel size and the mini-batches' samples): verl's V1 trainer pads "
            f"every batch to {padded} ({padded - batch * n} dummy samples a step); make train_batch_size a multiple "
            "of ppo_mini_batch_size"
        )
    return problems


def _replica_rule(config, prefix: str, gpus: int, per_node: int, where: str) -> list[str]:
    tp = _int(config, f"{prefix}.tensor_model_parallel_size")
    dp = _int(config, f"{prefix}.data_parallel_size")
    pp = _int(config, f"{prefix}.pipeline_model_parallel_size")
    replica = tp * dp * pp
    shape = f"{prefix}.tensor_model_parallel_size {tp} x data_parallel_size {dp} x pipeline_model_parallel_size {pp}"
    if gpus % replica:
        return [
            f"{where} has {gpus} GPUs, which do not split into vLLM replicas of {replica} GPUs ({shape}): use a "
            f"tensor_model_parallel_size that divides {gpus}"
        ]
    # verl asserts that a replica larger than a node is whole nodes (workers/rollout/replica.py); one smaller than a
    # node must tile it, or a replica's tensor-parallel group would straddle two nodes.
    if (replica > per_node and replica % per_node) or (replica <= per_node and per_node % replica):
        return [
            f"vLLM replicas of {replica} GPUs ({shape}) do not tile {where}'s nodes of {per_node} GPUs: use a "
            f"replica size that divides {per_node} or is a multiple of it"
        ]
    return []


def _reward_model_rules(config) -> list[str]:
    if not (
        _get(config, "reward.reward_model.enable", False)
        and _get(config, "reward.reward_model.enable_resource_pool", False)
    ):
        return []
    nodes, per_node = _int(config, "reward.reward_model.nnodes"), _int(config, "reward.reward_model.n_gpus_per_node")
    return _replica_rule(config, "reward.reward_model.rollout", nodes * per_node, per_node, "verl's reward-model pool")


def _groups_in_flight(config) -> int:
    """Prompts (groups) a step may have in flight: the batch, times DAPO's generation batches in flight."""
    groups = _int(config, "data.train_batch_size")
    if _get(config, "algorithm.filter_groups.enable", False):
        groups *= max(1, _int(config, "algorithm.filter_groups.max_inflight_gen_batches"))
    return groups


def _remembered_rule(config, waits_for_groups: bool) -> list[str]:
    remembered, groups = _get(config, "reward.arena.groups_remembered"), _groups_in_flight(config)
    if not waits_for_groups or remembered is None or int(remembered) >= groups:
        return []
    return [
        f"reward.arena.groups_remembered {remembered} is fewer than a step's {groups} groups (data.train_batch_size, "
        "x algorithm.filter_groups.max_inflight_gen_batches under DAPO): a late or duplicate sample of a forgotten "
        f"group would open a new one that waits out reward.arena.group_deadline_s; set it >= {groups}"
    ]


def _concurrency_rule(config, waits_for_groups: bool) -> list[str]:
    if not waits_for_groups:
        return []
    samples = _groups_in_flight(config) * _int(config, "actor_rollout_ref.rollout.n")
    workers = _int(config, "reward.num_workers")
    if workers < 1:
        return [f"reward.num_workers must be >= 1, got {workers}"]
    mean = samples / workers
    busiest = mean + _LOAD_SPREAD_Z * math.sqrt(mean)
    if busiest <= RAY_ASYNC_ACTOR_CONCURRENCY:
        return []
    needed = workers
    while (m := samples / needed) + _LOAD_SPREAD_Z * math.sqrt(m) > RAY_ASYNC_ACTOR_CONCURRENCY:
        needed += 1
    return [
        f"reward.num_workers {workers} is too few for {samples} training samples in flight (data.train_batch_size x "
        f"rollout.n): each RewardLoopWorker is a Ray async actor of at most {RAY_ASYNC_ACTOR_CONCURRENCY} concurrent "
        f"calls and the busiest would hold about {busiest:.0f}, while every arena call waits for its group (members "
        f"queued behind them fall back at the group deadline): set reward.num_workers >= {needed}"
    ]


def run_time_problems(config, waits_for_groups: bool = True) -> list[str]:
    """What verl would refuse or silently degrade at run time for ``config``'s trainer share; empty when the shapes
    fit. ``waits_for_groups``: the reward manager's calls wait for their group (every mode with a judge, not
    ``rlvr``)."""
    per_node = _int(config, "trainer.n_gpus_per_node")
    gpus = _int(config, "trainer.nnodes") * per_node
    problems = _trainer_rules(config, gpus)
    problems += _replica_rule(config, "actor_rollout_ref.rollout", gpus, per_node, "the trainer")
    problems += _reward_model_rules(config)
    problems += _concurrency_rule(config, waits_for_groups)
    problems += _remembered_rule(config, waits_for_groups)
    return problems
