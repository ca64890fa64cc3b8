"""The actor update of the fast trainer: verl's own loss, optimizer, learning-rate schedule and optimizer step, on
one process, with the batch padded (no sequence packing) instead of sharded by FSDP.

What is verl's here, called, not copied: the loss is ``verl.workers.utils.losses.ppo_loss`` (the policy loss that
``actor.policy_loss.loss_mode`` names, its ``loss_agg_mode``, the entropy and KL terms), fed the same global batch
figures ``FSDPEngine.forward_backward_batch`` gives it (``dp_size`` 1, the mini-batch's response-token count and
sample count), so micro-batches add up to the mini-batch's loss; the optimizer is ``build_optimizer`` of the actor's
``optim`` config; the schedule and the step (clip to ``optim.clip_grad``, skip a step whose gradient is not finite)
are ``FSDPEngine._build_lr_scheduler`` and ``FSDPEngine.optimizer_step`` run on this process's model.

As verl's V1 trainer: the step's samples are split into ``ppo_mini_batch_size x rollout.n`` samples per optimizer step,
``ppo_epochs`` passes, logits divided by the rollout temperature, entropy computed when ``entropy_coeff`` is not 0 or
``calculate_entropy`` is set; ``old_log_probs`` are the policy's before the step's first update (verl's separate
log-prob pass; with one update of the whole batch, the training forward's own detached log-probs: the same numbers,
one pass fewer). Rows whose advantage is zero everywhere are left out of the forward pass when nothing but the policy
loss depends on them (no entropy or KL term): their policy-loss gradient is zero, and the token count they add to
``token-mean`` is still counted, so the update is the same (a mini-batch with no such row still takes verl's
optimizer step, on zero gradients); ``tests/integration/test_fast_update_tie.py`` ties it to ``FSDPEngine``. The
clip fraction and KL figures are then over the trained rows only; the entropy is over every row. Differences from a
verl run: no mini-batch shuffling (``actor.shuffle`` is refused), no dynamic batch size, no sequence parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from arena_verl.core.errors import InputError

__all__ = ["UpdateBatch", "PolicyUpdate", "response_log_probs"]

_MICRO_ROWS = 64  # rows of a length-sorted micro-batch at most (fewer when the config's micro-batch is smaller)


@dataclass
class UpdateBatch:
    """A step's samples as verl's actor receives them: ``prompts`` left-padded (B, P), ``responses`` right-padded
    (B, R), ``attention_mask`` (B, P + R), ``response_mask`` and ``advantages`` (B, R)."""

    prompts: torch.Tensor
    responses: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor
    advantages: torch.Tensor

    def select(self, rows: torch.Tensor) -> UpdateBatch:
        return UpdateBatch(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))

    def __len__(self) -> int:
        return int(self.prompts.shape[0])

    def trimmed(self) -> tuple[UpdateBatch, slice]:
        """The rows without the columns that are padding in every row (the prompts' left, the responses' right), and
        the response columns kept."""
        width = self.prompts.shape[1]
        used = (self.attention_mask[:, :width].sum(0) > 0).nonzero()
        first = int(used[0]) if len(used) else width - 1
        keep = slice(0, max(1, int(self.attention_mask[:, width:].sum(-1).max())))
        mask = torch.cat([self.attention_mask[:, first:width], self.attention_mask[:, width:][:, keep]], dim=1)
        kept = (self.responses[:, keep], mask, self.response_mask[:, keep], self.advantages[:, keep])
        return UpdateBatch(self.prompts[:, first:], *kept), keep


def response_log_probs(model, batch: UpdateBatch, temperature: float = 1.0, with_entropy: bool = False):
    """(B, R) log-probabilities of the response tokens (and their entropies when asked), from one padded forward."""
    input_ids = torch.cat([batch.prompts, batch.responses], dim=1)
    mask = batch.attention_mask
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids, use_cache=False).logits
    prompt_length = batch.prompts.shape[1]
    logits = logits[:, prompt_length - 1 : -1].float() / temperature
    log_softmax = torch.log_softmax(logits, dim=-1)
    log_probs = log_softmax.gather(-1, batch.responses.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_softmax.exp() * log_softmax).sum(-1) if with_entropy else None
    return log_probs, entropy


def _packed(values: torch.Tensor, batch: UpdateBatch) -> torch.Tensor:
    """Response values (B, R) laid out as verl's unpadded model output (one value per valid token of each sequence,
    the response's at the positions before its tokens), which ``ppo_loss`` slices back to (B, R)."""
    prompt_length = batch.prompts.shape[1]
    prompt_lens = batch.attention_mask[:, :prompt_length].sum(-1).tolist()
    response_lens = batch.attention_mask[:, prompt_length:].sum(-1).tolist()
    pieces = []
    for row, (p, r) in enumerate(zip(prompt_lens, response_lens)):
        pieces += [values.new_zeros(p - 1), values[row, :r], values.new_zeros(1)]
    return torch.cat(pieces)


class PolicyUpdate:
    """The actor's optimizer and schedule for ``model``, and one training step's updates (:meth:`step`)."""

    def __init__(self, model, actor_config: Any, total_steps: int, rollout_n: int, temperature: float = 1.0):
        from verl.workers.config.optimizer import build_optimizer
        from verl.workers.engine.fsdp.transformer_impl import FSDPEngine

        if actor_config.shuffle:
            raise InputError("the fast trainer takes mini-batches in order: set actor_rollout_ref.actor.shuffle=False")
        if actor_config.use_dynamic_bsz:
            raise InputError(
                "the fast trainer has no dynamic batch size: actor_rollout_ref.actor.use_dynamic_bsz=False"
            )
        self.model = model
        self.config = actor_config
        optim = actor_config.optim
        optim.total_training_steps = total_steps  # verl injects it at runtime too
        self.optimizer = build_optimizer(model.parameters(), optim)
        # verl's engine methods, on a stand-in that holds what they read
        self._engine = SimpleNamespace(
            optimizer_config=optim, optimizer=self.optimizer, module=model, rank=0, scaler=None, _qat_enabled=False
        )
        self.scheduler = FSDPEngine._build_lr_scheduler(self._engine, self.optimizer)
        self._engine.lr_scheduler = self.scheduler
        self._optimizer_step = FSDPEngine.optimizer_step
        self.mini_batch_samples = actor_config.ppo_mini_batch_size * rollout_n
        self.micro_batch_samples = actor_config.ppo_micro_batch_size_per_gpu or self.mini_batch_samples
        self.temperature = temperature
        self.with_entropy = bool(actor_config.calculate_entropy) or actor_config.entropy_coeff != 0.0
        self.skip_zero_rows = not self.with_entropy and not actor_config.use_kl_loss

    @torch.no_grad()
    def log_probs(self, batch: UpdateBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy's response log-probabilities and entropies now (verl's old-log-prob pass), in micro-batches."""
        self.model.eval()
        out, ent = [], []
        for start in range(0, len(batch), self.micro_batch_samples):
            rows = torch.arange(start, min(start + self.micro_batch_samples, len(batch)))
            log_probs, entropy = response_log_probs(self.model, batch.select(rows), self.temperature, True)
            out.append(log_probs)
            ent.append(entropy)
        return torch.cat(out), torch.cat(ent)

    def step(self, batch: UpdateBatch, old_log_probs: torch.Tensor | None = None) -> dict[str, float]:
        """Every update of one training step (``ppo_epochs`` x mini-batches); the schedule advances once, after them,
        as verl's does. Returns verl's actor metrics (means over the optimizer steps) and the learning rate used."""
        from verl.utils import tensordict_utils as tu
        from verl.utils.metric.utils import Metric
        from verl.workers.utils.losses import ppo_loss

        # One update of the whole batch (one epoch, one mini-batch) is on-policy: the old log-probs are the training
        # forward's own (detached), the same numbers verl's separate pass computes, one forward pass fewer.
        on_policy = old_log_probs is None and self.config.ppo_epochs == 1 and len(batch) <= self.mini_batch_samples
        if on_policy:
            old, entropy = None, None
        elif old_log_probs is None:
            old, entropy = self.log_probs(batch)
        else:
            old, entropy = old_log_probs, None
        # (entropy sum, tokens) of every row when on-policy, as verl's log-prob pass logs it: the trained rows' from
        # their training forward, the others' (zero advantage, no forward pass) from one without gradients, here
        trained_entropy: list[tuple[float, float]] = []
        if on_policy and self.skip_zero_rows:
            idle = ((batch.advantages * batch.response_mask).abs().sum(-1) == 0).nonzero().squeeze(-1)
            if len(idle):
                idle_batch = batch.select(idle)
                mask = idle_batch.response_mask.float()
                trained_entropy.append((float((self.log_probs(idle_batch)[1] * mask).sum()), float(mask.sum())))
        sums: dict[str, list[float]] = {}
        self.model.train()
        for _ in range(self.config.ppo_epochs):
            for start in range(0, len(batch), self.mini_batch_samples):
                mini = torch.arange(start, min(start + self.mini_batch_samples, len(batch)))
                mini_batch = batch.select(mini)
                tokens = int(mini_batch.response_mask.sum())
                rows = torch.arange(len(mini_batch))
                if self.skip_zero_rows:
                    rows = rows[(mini_batch.advantages * mini_batch.response_mask).abs().sum(-1) > 0]
                self.optimizer.zero_grad()
                collected: dict[str, Metric] = {}
                # micro-batches of rows of similar length, each without its all-padding columns: the same sum
                # (token-mean over the mini-batch's token count), a third of the padded compute at 32 x 8 here
                lengths = mini_batch.attention_mask.sum(-1)[rows]
                rows = rows[torch.argsort(lengths, descending=True, stable=True)]
                size = min(self.micro_batch_samples, _MICRO_ROWS)
                for m_start in range(0, len(rows), size):
                    picked = rows[m_start : m_start + size]
                    micro, keep = mini_batch.select(picked).trimmed()
                    log_probs, micro_entropy = response_log_probs(
                        self.model, micro, self.temperature, self.with_entropy or on_policy
                    )
                    if on_policy:
                        mask = micro.response_mask.float()
                        trained_entropy.append((float((micro_entropy.detach() * mask).sum()), float(mask.sum())))
                    data = tu.get_tensordict(
                        {
                            "prompts": micro.prompts,
                            "responses": micro.responses,
                            "attention_mask": micro.attention_mask,
                            "response_mask": micro.response_mask,
                            "old_log_probs": log_probs.detach() if on_policy else old[mini][picked][:, keep],
                            "advantages": micro.advantages,
                        },
                        non_tensor_dict={
                            "dp_size": 1,
                            "batch_num_tokens": tokens,
                            "global_batch_size": len(mini_batch),
                        },
                    )
                    output = {"log_probs": _packed(log_probs, micro)}
                    if self.with_entropy:
                        output["entropy"] = _packed(micro_entropy, micro)
                    loss, loss_metrics = ppo_loss(self.config, output, data)
                    loss.backward()
                    for name, metric in loss_metrics.items():  # verl's own aggregation over micro-batches
                        metric = metric if isinstance(metric, Metric) else Metric("mean", metric)
                        if name in collected:
                            collected[name].extend(metric)
                        else:
                            collected[name] = metric
                metrics = {name: float(metric.aggregate()) for name, metric in collected.items()}
                if not len(rows):  # verl steps AdamW on zero gradients too (weight decay, moments, step count)
                    for parameter in self.model.parameters():
                        parameter.grad = torch.zeros_like(parameter)
                    metrics["actor/pg_loss"] = 0.0
                grad_norm = self._optimizer_step(self._engine)
                for name, value in {**metrics, "actor/grad_norm": grad_norm}.items():
                    sums.setdefault(name, []).append(value)
        self.scheduler.step()
        figures = {name: sum(values) / len(values) for name, values in sums.items()}
        figures["actor/lr"] = self.scheduler.get_last_lr()[0]  # after the step, as verl's worker reports it
        if trained_entropy:  # on-policy: every row's, from the two parts above
            tokens = sum(n for _, n in trained_entropy)
            figures["actor/entropy"] = sum(e for e, _ in trained_entropy) / max(tokens, 1.0)
        if entropy is not None:
            mask = batch.response_mask.float()
            figures["actor/entropy"] = float((entropy * mask).sum() / mask.sum().clamp(min=1))
        return figures
