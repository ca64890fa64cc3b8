"""The fast trainer's actor update (``arena_verl.tools.experiment.fast.update.PolicyUpdate``) against verl's own
``FSDPEngine`` update, from the same weights and the same batch; run as a script in a process of its own (it sets
the CPU platform's environment before verl is imported, and owns the torch.distributed process group).

    python tests/helpers/fast_update_tie.py OUT.json WORKDIR [--runs cispo,vanilla,cispo-zero-mini-batch] [--steps 3]

verl's side is what its trainer runs for the actor on a node of world size 1 (``trainer/ppo/ray_trainer.py``,
``_compute_old_log_prob`` and ``_update_actor`` on the new worker path, minus Ray): verl's ``TrainingWorker`` (the
actor half of ``ActorRolloutRefWorker.init_model``) builds ``FSDPEngineWithLMHead`` (FSDP2, gloo, one rank) from the
actor's ``fsdp_config``, ``optim`` and ``checkpoint`` configs and the ``HFModelConfig``; the padded batch goes through
``left_right_2_no_padding``; ``infer_batch`` gives the old log-probabilities, ``train_mini_batch`` with
``partial(ppo_loss, config=actor_config)`` splits the step into mini-batches, micro-batches, optimizer steps and one
learning-rate step. The fast side is ``PolicyUpdate.step`` on a plain transformers model loaded from the same folder.

Writes per run (loss mode and rewards) and step: both sides' loss, pg_loss and grad norm (means over the step's
optimizer steps, the figures each side reports), the largest old-log-probability, entropy and parameter differences,
the parameter update's relative difference, and the largest parameter change (so that a tie of unchanged weights
cannot pass)."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from functools import partial
from pathlib import Path

# The CPU platform (arena_verl/cpu) and verl's FSDP engine registered for it: before verl is imported.
os.environ.update(
    VERL_PLATFORM="cpu",
    VERL_ENGINE_DEVICE="cuda",
    TOKENIZERS_PARALLELISM="false",
    RANK="0",
    LOCAL_RANK="0",
    WORLD_SIZE="1",
    LOCAL_WORLD_SIZE="1",
    MASTER_ADDR="127.0.0.1",
)

import arena_verl.cpu  # noqa: E402,F401  (registers the platform and the gloo backend fix)

# The shapes of the tie: PROMPTS groups of N samples, two mini-batches (PPO_MINI_BATCH prompts each) per step, two
# micro-batches per mini-batch on verl's side; the third group has one reward for all (zero advantages everywhere).
PROMPTS, N, PPO_MINI_BATCH, MICRO = 4, 3, 2, 3
PROMPT_LEN, RESPONSE_LEN = 12, 14
TEMPERATURE = 0.8
LR = 1e-3
# Rewards per group; the group-normalised (GRPO) advantage of a uniform group is zero. In REWARDS every mini-batch
# (two groups) has rows that move the policy; in ZERO_FIRST the whole first mini-batch has zero advantages.
REWARDS = [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]
ZERO_FIRST = [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
# name: (actor.policy_loss.loss_mode, rewards, prompts per mini-batch). One mini-batch of the whole step is the
# experiment's shape: the fast update then takes its old log-probs from the training forward itself.
RUNS = {
    "cispo": ("cispo", REWARDS, PPO_MINI_BATCH),
    "vanilla": ("vanilla", REWARDS, PPO_MINI_BATCH),
    "cispo-zero-mini-batch": ("cispo", ZERO_FIRST, PPO_MINI_BATCH),
    "cispo-one-mini-batch": ("cispo", REWARDS, PROMPTS),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def overrides(model_path: Path, loss_mode: str, steps: int, mini_batch: int = PPO_MINI_BATCH) -> list[str]:
    """The project's CISPO config (arena_live with the CPU setting) at the tie's shapes, without warm-up."""
    return [
        "arena_setting=cpu",
        f"actor_rollout_ref.model.path={model_path}",
        f"actor_rollout_ref.actor.policy_loss.loss_mode={loss_mode}",
        "actor_rollout_ref.actor.shuffle=False",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={mini_batch}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO}",
        f"actor_rollout_ref.actor.optim.lr={LR}",
        "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.0",
        # the old-log-prob pass computes entropy; compiling it with inductor costs a minute on 2 cores
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False",
        f"actor_rollout_ref.rollout.n={N}",
        f"actor_rollout_ref.rollout.temperature={TEMPERATURE}",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
        f"data.train_batch_size={PROMPTS}",
        f"trainer.total_training_steps={steps}",
    ]


def compose(model_path: Path, loss_mode: str, steps: int, mini_batch: int = PPO_MINI_BATCH):
    from omegaconf import open_dict

    from arena_verl.tools.recipe import compose_experiment

    cfg = compose_experiment("arena_live", overrides(model_path, loss_mode, steps, mini_batch))
    with open_dict(cfg):  # what verl's trainer injects before the workers start (ray_trainer.py)
        cfg.actor_rollout_ref.actor.optim.total_training_steps = steps
    return cfg


def actor_config(cfg):
    from verl.utils.config import omega_conf_to_dataclass

    return omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)


def make_batch(vocab_size: int, pad_id: int, rewards: list[list[float]], seed: int = 0):
    """The padded step batch (left-padded prompts, right-padded responses) and its GRPO advantages."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    rows = PROMPTS * N
    prompt_lens = torch.randint(3, PROMPT_LEN + 1, (PROMPTS,), generator=generator).repeat_interleave(N)
    response_lens = torch.randint(2, RESPONSE_LEN + 1, (rows,), generator=generator)
    prompt_lens[0], response_lens[1] = PROMPT_LEN, RESPONSE_LEN  # a full-width prompt and response
    prompt_tokens = torch.randint(2, vocab_size, (PROMPTS, PROMPT_LEN), generator=generator).repeat_interleave(N, 0)
    prompts = torch.full((rows, PROMPT_LEN), pad_id)
    responses = torch.full((rows, RESPONSE_LEN), pad_id)
    response_mask = torch.zeros(rows, RESPONSE_LEN, dtype=torch.long)
    for row in range(rows):
        p, r = int(prompt_lens[row]), int(response_lens[row])
        prompts[row, PROMPT_LEN - p :] = prompt_tokens[row, :p]
        responses[row, :r] = torch.randint(2, vocab_size, (r,), generator=generator)
        response_mask[row, :r] = 1
    prompt_mask = (torch.arange(PROMPT_LEN) >= PROMPT_LEN - prompt_lens[:, None]).long()
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    rewards = torch.tensor(rewards)
    scores = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-6)
    advantages = scores.reshape(-1, 1) * response_mask
    return {
        "prompts": prompts,
        "responses": responses,
        "attention_mask": attention_mask,
        "response_mask": response_mask,
        "advantages": advantages.float(),
    }


# -- verl's side ----------------------------------------------------------------------------------------------------


def build_verl_actor(cfg, config):
    """The actor half of verl's ``ActorRolloutRefWorker.init_model``, in this process."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import TrainingWorkerConfig
    from verl.workers.engine_workers import TrainingWorker
    from verl.workers.utils.losses import ppo_loss

    model_config = omega_conf_to_dataclass(cfg.actor_rollout_ref.model)
    config.model_config = model_config
    training_config = TrainingWorkerConfig(
        model_type="language_model",
        model_config=model_config,
        engine_config=config.engine,
        optimizer_config=config.optim,
        checkpoint_config=config.checkpoint,
    )
    rollout = cfg.actor_rollout_ref.rollout
    engine_config = training_config.engine_config
    engine_config.use_dynamic_bsz = config.use_dynamic_bsz
    engine_config.infer_max_token_len_per_gpu = rollout.log_prob_max_token_len_per_gpu
    engine_config.infer_micro_batch_size_per_gpu = rollout.log_prob_micro_batch_size_per_gpu
    engine_config.max_token_len_per_gpu = config.ppo_max_token_len_per_gpu
    engine_config.micro_batch_size_per_gpu = config.ppo_micro_batch_size_per_gpu
    engine_config.use_remove_padding = model_config.get("use_remove_padding", False)
    worker = TrainingWorker(config=training_config)
    worker.reset()
    worker.set_loss_fn(partial(ppo_loss, config=config))
    return worker


def _data_proto(batch: dict, extra: dict | None = None):
    import torch
    from verl import DataProto

    input_ids = torch.cat([batch["prompts"], batch["responses"]], dim=1)
    position_ids = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    tensors = {**batch, **(extra or {}), "input_ids": input_ids, "position_ids": position_ids}
    return DataProto.from_dict(tensors=tensors, meta_info={"temperature": TEMPERATURE})


def verl_old_log_probs(worker, batch: dict):
    """verl's ``_compute_old_log_prob`` (ray_trainer.py): old log-probabilities and entropies, padded (B, R)."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

    batch_td = left_right_2_no_padding(_data_proto(batch).to_tensordict())
    tu.assign_non_tensor(batch_td, calculate_entropy=True, calculate_sum_pi_squared=False, compute_loss=False)
    output = worker.infer_batch(batch_td)
    log_probs = no_padding_2_padding(tu.get(output, "log_probs"), batch_td).float()
    entropy = no_padding_2_padding(tu.get(output, "entropy"), batch_td).float()
    return log_probs, entropy


def verl_update(worker, cfg, batch: dict, old_log_probs):
    """verl's ``_update_actor`` (ray_trainer.py): the step's mini-batches, optimizer steps and learning-rate step."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding

    actor = cfg.actor_rollout_ref.actor
    batch_td = left_right_2_no_padding(_data_proto(batch, {"old_log_probs": old_log_probs}).to_tensordict())
    mini_batch_size = actor.ppo_mini_batch_size * cfg.actor_rollout_ref.rollout.n
    tu.assign_non_tensor(
        batch_td,
        calculate_entropy=bool(actor.calculate_entropy or actor.entropy_coeff != 0.0),
        distillation_use_topk=False,
        distillation_only=False,
        global_batch_size=mini_batch_size,
        mini_batch_size=mini_batch_size,
        epochs=actor.ppo_epochs,
        seed=actor.data_loader_seed,
        dataloader_kwargs={"shuffle": actor.shuffle},
        compute_loss=True,
    )
    metrics = tu.get(worker.train_mini_batch(batch_td), "metrics")

    def mean(values):
        values = [getattr(v, "value", v) for v in (values if isinstance(values, list) else [values])]
        return sum(float(v) for v in values) / len(values)

    return {
        "loss": mean(metrics["loss"]),
        "pg_loss": mean(metrics["actor/pg_loss"]),
        "grad_norm": mean(metrics["grad_norm"]),
        "lr": mean(metrics["lr"]),
        "optimizer_steps": len(metrics["grad_norm"]),
    }


def verl_parameters(worker) -> dict:
    from torch.distributed.tensor import DTensor

    return {
        name: (value.full_tensor() if isinstance(value, DTensor) else value).detach().clone()
        for name, value in worker.engine.module.state_dict().items()
    }


# -- the comparison -------------------------------------------------------------------------------------------------


def max_difference(first: dict, second: dict) -> float:
    assert first.keys() == second.keys(), sorted(set(first) ^ set(second))
    return max(float((first[name] - second[name]).abs().max()) for name in first)


def update_difference(fast: dict, verl: dict, start: dict) -> float:
    """|fast's change - verl's change| / |verl's change|, over all parameters (norms of the flattened changes)."""
    import torch

    diff = torch.cat([(fast[name] - verl[name]).flatten() for name in start]).norm()
    change = torch.cat([(verl[name] - start[name]).flatten() for name in start]).norm()
    return float(diff / change) if change > 0 else float(diff)


def compare(model_path: Path, run: str, steps: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    from arena_verl.tools.experiment.fast.update import PolicyUpdate, UpdateBatch

    loss_mode, rewards, mini_batch = RUNS[run]
    cfg = compose(model_path, loss_mode, steps, mini_batch)
    rollout = cfg.actor_rollout_ref.rollout

    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32, attn_implementation="sdpa")
    start = {name: value.detach().clone() for name, value in model.state_dict().items()}
    batch = make_batch(model.config.vocab_size, model.config.pad_token_id, rewards)
    fast = PolicyUpdate(
        model, actor_config(cfg), total_steps=steps, rollout_n=rollout.n, temperature=rollout.temperature
    )
    worker = build_verl_actor(cfg, actor_config(cfg))
    assert max_difference(start, verl_parameters(worker)) == 0.0, "the two sides do not start from the same weights"

    records = []
    for step in range(steps):
        update_batch = UpdateBatch(**batch)
        fast_old, fast_entropy = fast.log_probs(update_batch)
        verl_old, verl_entropy = verl_old_log_probs(worker, batch)
        mask = batch["response_mask"].bool()
        fast_figures = fast.step(update_batch)
        verl_figures = verl_update(worker, cfg, batch, verl_old)
        fast_params = {name: value.detach().clone() for name, value in model.state_dict().items()}
        verl_params = verl_parameters(worker)
        records.append(
            {
                "step": step + 1,
                "fast": {
                    "pg_loss": fast_figures["actor/pg_loss"],
                    "grad_norm": fast_figures["actor/grad_norm"],
                    "lr": fast_figures["actor/lr"],
                },
                "verl": verl_figures,
                "old_log_prob_max_diff": float((fast_old - verl_old)[mask].abs().max()),
                "entropy_max_diff": float((fast_entropy - verl_entropy)[mask].abs().max()),
                "param_max_diff": max_difference(fast_params, verl_params),
                "param_max_change": max_difference(fast_params, start),
                "update_rel_diff": update_difference(fast_params, verl_params, start),
            }
        )
    return {"run": run, "loss_mode": loss_mode, "steps": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--runs", default=",".join(RUNS), help=f"some of {', '.join(RUNS)}")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)

    import torch

    from arena_verl.testing.toy import build_toy_model

    os.environ["MASTER_PORT"] = str(_free_port())
    torch.manual_seed(0)
    began = time.monotonic()
    model_path = build_toy_model(args.workdir / "toy_model")
    results = {"runs": {}}
    try:
        for name in args.runs.split(","):
            results["runs"][name] = compare(model_path, name, args.steps)
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    results["wall_s"] = round(time.monotonic() - began, 1)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
