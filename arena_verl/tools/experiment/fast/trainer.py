"""The fast trainer's loop: verl's GRPO/CISPO step in one process, for the learning experiment on two cores.

A step draws ``data.train_batch_size`` rows (in a ``data.seed`` shuffle, epoch after epoch), samples
``rollout.n`` completions of each (:mod:`.sampler`), rewards every sample through the arena's own reward manager
(``ArenaRewardManager.run_single``, all of a step's samples at once, with the referee in this process:
:class:`arena_verl.verl_edge.local_referee.LocalRefereeClient`), places the scores as verl does
(``assemble_rm_scores``), computes advantages with verl's ``compute_advantage`` for ``algorithm.adv_estimator``
(``arena_grpo`` asks the same referee), and updates the policy with verl's loss, optimizer and schedule
(:mod:`.update`). Validation every ``trainer.test_freq`` steps (and before training with ``val_before_train``) samples
``val_kwargs.n`` completions of every validation row and rewards them through the same manager, flagged as
validation.

It writes what verl's trainer writes, in verl's formats, so that the experiment reads a fast run exactly as a verl run
(:func:`arena_verl.tools.experiment.curves.run_curves`): ``metrics/*.jsonl`` (verl's file logger: ``{"step",
"data"}`` with ``training/global_step``, ``timing_s/*``, ``actor/*``, ``critic/*``, ``response_length/mean``,
``arena/*`` as the tracker hook adds them, ``val-core/<source>/acc/mean@<n>``), ``rollout/<step>.jsonl`` and
``validation/<step>.jsonl`` (``input``, ``output``, ``gts``, ``score``, ``step``).

No cost or latency figure comes from it: the referee gets whole groups at once, never a stream.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arena_verl.core.errors import InputError
from arena_verl.tools.experiment.fast.batch import PromptRow, Samples, read_rows, reward_batch
from arena_verl.tools.experiment.fast.sampler import sample
from arena_verl.tools.experiment.fast.update import PolicyUpdate, UpdateBatch

__all__ = ["FastTrainer", "refuse_unsupported", "step_advantages"]


def refuse_unsupported(config) -> None:
    """What verl would do and the fast trainer does not: an InputError rather than a run that silently differs."""
    algorithm, actor = config.algorithm, config.actor_rollout_ref.actor
    if (algorithm.get("filter_groups") or {}).get("enable"):
        raise InputError("the fast trainer has no DAPO dynamic sampling (algorithm.filter_groups.enable): use verl's")
    if algorithm.get("use_kl_in_reward"):
        raise InputError("the fast trainer has no reference policy: algorithm.use_kl_in_reward must be false")
    if actor.get("use_kl_loss"):
        raise InputError("the fast trainer has no reference policy: actor_rollout_ref.actor.use_kl_loss must be false")
    if actor.get("loss_agg_mode") == "seq-mean-token-sum-norm" and actor.get("loss_scale_factor") is None:
        raise InputError("seq-mean-token-sum-norm needs actor.loss_scale_factor in the fast trainer (it trims batches)")
    if int(config.reward.get("arena", {}).get("num_referees", 1) or 1) != 1:
        raise InputError("the fast trainer holds one referee in its process: reward.arena.num_referees must be 1")


def _plain_sampling(where: str, node) -> float:
    """The temperature of a sampling config with no top-p or top-k cut (the only sampling the fast trainer has)."""
    top_p, top_k = float(node.get("top_p", 1.0)), int(node.get("top_k", -1))
    if top_p != 1.0 or top_k not in (-1, 0):
        raise InputError(f"{where}: the fast trainer samples without top-p or top-k (got top_p={top_p}, top_k={top_k})")
    return float(node.get("temperature", 1.0))


def step_advantages(data, algorithm, n: int):
    """``data`` with verl's ``advantages`` and ``returns`` for ``algorithm.adv_estimator``, by verl's own
    ``compute_advantage`` (the registered estimator; ``arena_grpo`` asks the referee in this process)."""
    from verl.trainer.ppo.ray_trainer import compute_advantage

    return compute_advantage(
        data,
        adv_estimator=algorithm.adv_estimator,
        gamma=algorithm.gamma,
        lam=algorithm.lam,
        num_repeat=n,
        norm_adv_by_std_in_grpo=algorithm.get("norm_adv_by_std_in_grpo", True),
        config=algorithm,
    )


class FastTrainer:
    def __init__(self, config, run_dir: Path, log=print):
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from verl.trainer.ppo.reward import load_reward_manager
        from verl.utils.config import omega_conf_to_dataclass

        from arena_verl.settings import settings_from_config
        from arena_verl.verl_edge.advantage import install_advantage_estimator, use_lookup, use_settings
        from arena_verl.verl_edge.local_referee import LocalRefereeClient
        from arena_verl.verl_edge.tracking import ArenaMetricsReader

        self.config, self.run_dir, self.log = config, Path(run_dir), log
        rollout = config.actor_rollout_ref.rollout
        self.n = int(rollout.n)
        refuse_unsupported(config)
        self.temperature = _plain_sampling("actor_rollout_ref.rollout", rollout)
        self.val_n = int(rollout.val_kwargs.n)
        self.val_temperature = _plain_sampling("actor_rollout_ref.rollout.val_kwargs", rollout.val_kwargs)
        if not rollout.val_kwargs.get("do_sample", True):
            self.val_temperature = 0.0
        self.prompts_per_step = int(config.data.train_batch_size)
        self.max_response = int(config.data.max_response_length)
        self.total_steps = int(config.trainer.total_training_steps)
        if self.total_steps < 1:
            raise InputError("trainer.total_training_steps must be set (>= 1) for the fast trainer")
        self.test_freq = int(config.trainer.test_freq)
        model_path = str(config.actor_rollout_ref.model.path)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        max_prompt = int(config.data.max_prompt_length)
        self.train_rows = read_rows(list(config.data.train_files), self.tokenizer, max_prompt)
        self.val_rows = read_rows(list(config.data.val_files), self.tokenizer, max_prompt)
        seed = int(config.data.get("seed") or 0)
        self.order = np.random.default_rng(seed)
        self.shuffle = bool(config.data.get("shuffle", True))
        self._queue: list[int] = []
        rollout_seed = int(rollout.seed) if rollout.get("seed") is not None else seed
        self.generator = torch.Generator().manual_seed(rollout_seed)
        torch.manual_seed(rollout_seed)

        settings = settings_from_config(config)
        self.referee = LocalRefereeClient(settings)
        # as verl's reward loop worker builds it (the custom or default scorer), with the referee in this process
        self.manager = load_reward_manager(config, self.tokenizer, referee=self.referee)
        install_advantage_estimator()
        use_settings(settings)
        use_lookup(self.referee.advantage_groups)
        self.arena_metrics = ArenaMetricsReader(settings, read_shard=self.referee.read_shard)
        self.log_arena = settings.log_metrics
        actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
        self.update = PolicyUpdate(self.model, actor, self.total_steps, self.n, self.temperature)
        self.algorithm = config.algorithm
        self.rollout_dir = config.trainer.get("rollout_data_dir")
        self.validation_dir = config.trainer.get("validation_data_dir")
        (self.run_dir / "metrics").mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.run_dir / "metrics" / f"fast-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"

    # --- one step's parts -------------------------------------------------------------------------------------------

    def _next_rows(self) -> list[PromptRow]:
        picked = []
        while len(picked) < self.prompts_per_step:
            if not self._queue:
                count = len(self.train_rows)
                self._queue = (self.order.permutation(count) if self.shuffle else np.arange(count)).tolist()
            picked.append(self.train_rows[self._queue.pop(0)])
        return picked

    def _sample(self, rows: list[PromptRow], n: int, temperature: float) -> Samples:
        prompts = [row.prompt_ids for row in rows for _ in range(n)]
        completions = sample(
            self.model,
            prompts,
            self.max_response,
            self.tokenizer.eos_token_id,
            self.tokenizer.pad_token_id,
            temperature,
            self.generator,
        )
        return Samples.of(rows, completions, n)

    def _reward(self, data) -> tuple[list[float], list[dict]]:
        """Every sample through the manager's ``run_single`` at once, on the manager's event loop."""

        async def everything():
            return await asyncio.gather(*(self.manager.run_single(data[i : i + 1]) for i in range(len(data))))

        answers = self.manager.loop.run_until_complete(everything())
        return [float(a["reward_score"]) for a in answers], [a.get("reward_extra_info", {}) for a in answers]

    def _dump(self, folder, step: int, data, scores: list[float]) -> None:
        if not folder:
            return
        Path(folder).mkdir(parents=True, exist_ok=True)
        inputs = self.tokenizer.batch_decode(data.batch["prompts"], skip_special_tokens=True)
        outputs = self.tokenizer.batch_decode(data.batch["responses"], skip_special_tokens=True)
        with open(Path(folder) / f"{step}.jsonl", "w") as handle:
            for i, (prompt, output, score) in enumerate(zip(inputs, outputs, scores)):
                truth = data.non_tensor_batch["reward_model"][i].get("ground_truth")
                line = {"input": prompt, "output": output, "gts": truth, "score": score, "step": step}
                handle.write(json.dumps(line, default=str) + "\n")

    def _write_metrics(self, step: int, data: dict[str, Any]) -> None:
        clean = {k: float(v) for k, v in data.items() if isinstance(v, (int, float)) and math.isfinite(float(v))}
        with open(self.metrics_path, "a") as handle:
            handle.write(json.dumps({"step": step, "data": clean}) + "\n")

    def validate(self, step: int) -> dict[str, float]:
        samples = self._sample(self.val_rows, self.val_n, self.val_temperature)
        data = reward_batch(samples, self.tokenizer.pad_token_id, step, validate=True)
        scores, infos = self._reward(data)
        self._dump(self.validation_dir, step, data, scores)
        by_source: dict[str, list[float]] = {}
        for i, info in enumerate(infos):
            acc = info.get("acc", float(scores[i] > 0))
            by_source.setdefault(samples.row(i).data_source, []).append(float(acc))
        metrics = {f"val-core/{src}/acc/mean@{self.val_n}": float(np.mean(v)) for src, v in by_source.items()}
        self._write_metrics(step, metrics)
        return metrics

    def train_step(self, step: int) -> dict[str, float]:
        from arena_verl.verl_edge.advantage import pop_step_figures
        from arena_verl.verl_edge.tracking import generation_metrics

        started = time.monotonic()
        samples = self._sample(self._next_rows(), self.n, self.temperature)
        data = reward_batch(samples, self.tokenizer.pad_token_id, step, validate=False)
        generated = time.monotonic()
        scores, _ = self._reward(data)
        data.batch["token_level_scores"] = self.manager.assemble_rm_scores(data, scores)
        data.batch["token_level_rewards"] = data.batch["token_level_scores"]
        rewarded = time.monotonic()
        data = step_advantages(data, self.algorithm, self.n)
        batch = UpdateBatch(
            prompts=data.batch["prompts"],
            responses=data.batch["responses"],
            attention_mask=data.batch["attention_mask"],
            response_mask=data.batch["response_mask"],
            advantages=data.batch["advantages"],
        )
        actor = self.update.step(batch)
        done = time.monotonic()
        self._dump(self.rollout_dir, step, data, scores)
        mask = data.batch["response_mask"].bool()
        advantages = data.batch["advantages"][mask]
        metrics = {
            "training/global_step": step,
            "timing_s/step": done - started,
            "timing_s/gen": generated - started,
            "timing_s/reward": rewarded - generated,
            "timing_s/update_actor": done - rewarded,
            "response_length/mean": float(mask.sum(-1).float().mean()),
            "critic/score/mean": float(np.mean(scores)),
            "critic/advantages/max": float(advantages.max()) if advantages.numel() else 0.0,
            "critic/advantages/min": float(advantages.min()) if advantages.numel() else 0.0,
            **actor,
            **generation_metrics({}, self.prompts_per_step, self.n),
        }
        if self.log_arena:
            metrics.update(self.arena_metrics.step_metrics())
            metrics.update(pop_step_figures())
        self._write_metrics(step, metrics)
        return metrics

    def fit(self) -> int:
        """Every step (validations included); 0 when every step's loss was finite."""
        finite = True
        # What was built so far (verl, transformers, torch, the model: about 600k objects) lives as long as the run:
        # kept out of the collector's full passes, which otherwise rescan it while the referee's answered groups grow.
        gc.collect()
        gc.freeze()
        try:
            if self.config.trainer.get("val_before_train", True):
                self.log(f"validation before training: {self.validate(0)}")
            for step in range(1, self.total_steps + 1):
                metrics = self.train_step(step)
                finite &= math.isfinite(metrics.get("actor/pg_loss", 0.0))
                self.log(
                    f"step {step}/{self.total_steps}: {metrics['timing_s/step']:.2f} s, "
                    f"score {metrics['critic/score/mean']:.3f}, length {metrics['response_length/mean']:.1f}"
                )
                if step == self.total_steps or (self.test_freq > 0 and step % self.test_freq == 0):
                    self.log(f"validation at step {step}: {self.validate(step)}")
        finally:
            gc.unfreeze()
            self.close()
        return 0 if finite else 1

    def close(self) -> None:
        verifier = type(self.manager)._verifier
        if verifier is not None and hasattr(verifier, "close"):
            verifier.close()
