"""The ``arena`` reward manager: verl's reward loop on one side, the verifier and the group referee on the other.

verl 0.9.1 calls ``run_single`` once per sample, on several ``RewardLoopWorker`` actors, while rollout is still
running. Each call scores its sample with the verifier, hands it to the referee of its group (a Ray actor, see
:mod:`arena_verl.actors.referee_actor`, reached through :mod:`.referee_client`) and waits for the group's answer.

Data read from each one-row ``DataProto`` (:mod:`.sample_fields`): ``batch["prompts"|"responses"|"attention_mask"]``;
``non_tensor_batch["uid"|"data_source"|"reward_model"|"extra_info"|"raw_prompt"]`` and, when verl's V1 trainer
sends them, ``"session_id"`` (the sample's index within its group) and ``"global_steps"``; ``"arena_validate"``
marks a validation sample (added by :mod:`arena_verl.verl_edge.validation_signal`). What each sample returns is
:mod:`.extra_info`'s. The documented path ``arena_verl.reward_manager`` names this class.
"""

from __future__ import annotations

import hashlib
from typing import Any

from verl import DataProto
from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from arena_verl.core.judge_protocol import Trace
from arena_verl.core.referee import Submission, Verdict
from arena_verl.core.sources import SourceKind, classify_source
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.settings import ArenaSettings, settings_from_config
from arena_verl.verify.ground_truth import ground_truth_text
from arena_verl.verify.math_verifier import MathVerifier, VerifyResult
from arena_verl.verify.multiple_choice import verify_choice
from arena_verl.verl_edge.dapo_bound import filter_groups_enabled
from arena_verl.verl_edge.extra_info import reward_answer, sample_key
from arena_verl.verl_edge.judge_placement import with_verl_router
from arena_verl.verl_edge.referee_client import RefereeClient
from arena_verl.verl_edge.sample_fields import (
    extra_info_of,
    float_or_none,
    ground_truth_of,
    int_or_none,
    problem_text,
    text_or_none,
)
from arena_verl.verl_edge.scorers import choose_scorers, run_scorer
from arena_verl.verl_edge.validation_signal import VALIDATE_KEY

__all__ = ["ArenaRewardManager"]


@register("arena")
class ArenaRewardManager(RewardManagerBase):
    """Verifier for diverse groups, trace tournament for non-diverse ones (and every baseline, by ``mode``)."""

    _verifier: MathVerifier | None = None

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None, reward_model_tokenizer=None,
                 referee=None, **kwargs):  # fmt: skip
        settings = settings_from_config(config)  # read once: the class state below comes from the same reading
        type(self)._init_verifier(settings)
        super().__init__(config, tokenizer, compute_score)  # verl's init_class: already done by the line above
        self.settings: ArenaSettings = with_verl_router(settings, config, reward_router_address)
        check_judge_templates(self.settings.judge)  # here, not in the referee actor where every group would fall back
        # verl's reward workers reach the referee actors; a one-process trainer hands in its own client (.local_referee)
        self.referee = referee if referee is not None else RefereeClient(self.settings)
        # rlvr: the referee counts the groups for the tracker (log_metrics) and for DAPO's bound on generation
        # batches, whose warnings and error say how many groups of the step were kept (arena_verl.verl_edge.dapo_bound).
        self.observe_rlvr = self.settings.log_metrics or filter_groups_enabled(config)
        self.scorers = choose_scorers(config, compute_score)

    @classmethod
    def init_class(cls, config, tokenizer):
        if not cls._class_initialized:
            cls._init_verifier(settings_from_config(config))

    @classmethod
    def _init_verifier(cls, settings: ArenaSettings) -> None:
        """The process's verifier pool, shared by the manager's instances (verl's class state)."""
        if cls._class_initialized:
            return
        cls._verifier = MathVerifier(
            timeout_s=settings.verifier_timeout_s,
            num_workers=settings.verifier_workers,
            extraction=settings.answer_extraction,
        )
        cls._class_initialized = True

    async def run_single(self, data: DataProto) -> dict:
        item = data[-1:][0]  # multi-output agent loops: the last output carries the trajectory
        non_tensor = item.non_tensor_batch
        response_ids = item.batch["responses"]
        valid_length = int(item.batch["attention_mask"][-response_ids.shape[-1] :].sum())
        valid_ids = response_ids[:valid_length]
        text = await self.loop.run_in_executor(None, lambda: self.tokenizer.decode(valid_ids, skip_special_tokens=True))

        extra_info = extra_info_of(non_tensor)
        ground_truth = ground_truth_of(non_tensor)
        source = self._source(str(non_tensor.get("data_source", "")), text_or_none(non_tensor.get("ability")))
        verified = await self._verify(source, text, ground_truth, extra_info)

        if VALIDATE_KEY in non_tensor:  # the trainer's own flag (arena_verl.verl_edge.validation_signal): authoritative
            validation = bool(non_tensor[VALIDATE_KEY])
        else:  # paths that do not go through the agent loop's reward call: the caller's flag or the data's split
            validation = bool(data.meta_info.get("validate")) or (
                extra_info.get("split") in self.settings.validation_splits
            )
        uid = non_tensor.get("uid")
        if validation or uid is None:
            return reward_answer(verified, Verdict(reward=verified.score), validation)
        sample = dict(
            uid=str(uid),
            sample_key=sample_key(non_tensor.get("session_id")),
            content_key=hashlib.blake2b(valid_ids.cpu().numpy().tobytes(), digest_size=12).hexdigest(),
            verifier_reward=verified.score,
            step=int_or_none(non_tensor.get("global_steps")),
        )
        if not self.settings.uses_judge:
            if self.observe_rlvr:  # rlvr: counted, never judged
                self.referee.observe(Submission(**sample, problem="", trace=Trace(text="")))
            return reward_answer(verified, Verdict(reward=verified.score), validation)

        submission = Submission(
            **sample,
            problem=await self.loop.run_in_executor(None, problem_text, item, self.tokenizer),
            trace=Trace(text=text, quality_hint=float_or_none(extra_info.get("sim_quality"))),
            reference=ground_truth_text(ground_truth),
            task=source.template,
        )
        return reward_answer(verified, await self.referee.verdict(submission), validation)

    def _source(self, data_source: str, ability: str | None = None) -> SourceKind:
        s = self.settings
        return classify_source(
            data_source,
            ability,
            math_sources=s.math_data_sources,
            multiple_choice_sources=s.multiple_choice_data_sources,
        )

    async def _verify(self, source: SourceKind, text: str, ground_truth: Any, extra_info: dict) -> VerifyResult:
        verifier = source.verifier if self.scorers.user is None else "user"
        if verifier == "multiple_choice":
            return verify_choice(text, ground_truth, source.data_source)
        if verifier == "math":
            return await self.loop.run_in_executor(None, self._verifier.score, text, ground_truth)
        scorer = self.scorers.user or self.scorers.default
        return await run_scorer(
            scorer, self.loop, data_source=source.data_source, solution_str=text, ground_truth=ground_truth,
            extra_info=extra_info,
        )  # fmt: skip
