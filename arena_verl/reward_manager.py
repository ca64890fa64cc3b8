"""The ``arena`` reward manager: verl's reward loop on one side, the verifier and the group referee on the other.

verl 0.9.1 calls ``run_single`` once per sample, on several ``RewardLoopWorker`` actors, while rollout is still
running. Each call scores its sample with the verifier, hands it to the referee of its group (a Ray actor, see
:mod:`arena_verl.actors.referee_actor`) and waits for the group's answer.

Data read from each one-row ``DataProto``: ``batch["prompts"|"responses"|"attention_mask"]``;
``non_tensor_batch["uid"|"data_source"|"reward_model"|"extra_info"|"raw_prompt"]`` and, when verl's V1 trainer
sends them, ``"session_id"`` (the sample's index within its group) and ``"global_steps"``; ``"arena_validate"``
marks a validation sample (added by :mod:`arena_verl.verl_edge.validation_signal`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import logging
import math
import uuid
from typing import Any

import ray
from verl import DataProto
from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from arena_verl.actors.referee_actor import forget_referee, referee_handle
from arena_verl.core.names import FALLBACK_REASONS, FALLBACK_REFEREE_LOST
from arena_verl.core.referee import Submission, Verdict
from arena_verl.core.sources import SourceKind, classify_source
from arena_verl.judge.base import Trace
from arena_verl.judge.prompts import check_judge_templates
from arena_verl.settings import ArenaSettings, settings_from_config
from arena_verl.verify import multiple_choice
from arena_verl.verify.math_verifier import STATUSES, MathVerifier, VerifyResult, ground_truth_text
from arena_verl.verl_edge.dapo_bound import filter_groups_enabled
from arena_verl.verl_edge.judge_placement import check_verl_placement
from arena_verl.verl_edge.validation_signal import VALIDATE_KEY

logger = logging.getLogger(__name__)
_UNAVAILABLE_PATIENCE_S = 120.0  # how long a sample waits for a restarting referee

__all__ = ["ArenaRewardManager", "EXTRA_INFO_KEYS"]

# Every sample returns exactly these keys (verl takes the key list from the first sample). All numeric, so verl's
# validation metrics can average them.
EXTRA_INFO_KEYS = (
    "arena/verifier_reward",  # the verifier's score
    "arena/verify_status",  # index into arena_verl.verify.math_verifier.STATUSES
    "arena/validation",  # 1 = validation sample (never judged)
    "arena/routed",  # 1 = the reward came from judge verdicts
    "arena/route",  # 0 verifier, 1 tournament, 2 pointwise
    "arena/uniform_group",  # 1 = every verifier reward of the group was equal
    "arena/strength",  # Bradley-Terry strength (0 when not in a tournament)
    "arena/win_rate",  # tournament win rate, -1 when the sample played no match
    "arena/judge_calls",  # judge calls charged to the sample's group
    "arena/judge_failures",  # of those, calls without a usable verdict
    "arena/fallback",  # 0 none, 1 deadline, 2 judge_error, 3 referee_lost, 4 overflow, 5 late
    "acc",  # 1 if the verifier said correct: verl's DAPO filter (filter_groups.metric=acc) and val-core acc metrics
)


@register("arena")
class ArenaRewardManager(RewardManagerBase):
    """Verifier for diverse groups, trace tournament for non-diverse ones (and every baseline, by ``mode``)."""

    _verifier: MathVerifier | None = None

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None, reward_model_tokenizer=None,
                 **kwargs):  # fmt: skip
        settings = settings_from_config(config)  # read once: the class state below comes from the same reading
        type(self)._init_verifier(settings)
        super().__init__(config, tokenizer, compute_score)  # verl's init_class: already done by the line above
        self.settings: ArenaSettings = _with_verl_router(settings, config, reward_router_address)
        check_judge_templates(self.settings.judge)  # here, not in the referee actor where every group would fall back
        # rlvr: the referee counts the groups for the tracker (log_metrics) and for DAPO's bound on generation
        # batches, whose warnings and error say how many groups of the step were kept (arena_verl.verl_edge.dapo_bound).
        self.observe_rlvr = self.settings.log_metrics or filter_groups_enabled(config)
        custom = config.reward.get("custom_reward_function", {}) or {}
        # verl hands us either the user's function or its own default_compute_score. arena-verl's own verifier
        # function (needed only to make verl call this manager beside a served judge) is not a user's function:
        # the manager's routing (multiple choice, math, verl's scorers with their sandbox) stays in charge.
        if custom.get("path") and not _is_own_reward_fn(custom.get("path")):
            self.user_scorer, self.default_scorer = compute_score, compute_score
        elif custom.get("path"):
            self.user_scorer, self.default_scorer = None, _verl_default_scorer(config)
        else:
            self.user_scorer, self.default_scorer = None, compute_score

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

        extra_info = non_tensor.get("extra_info") or {}
        extra_info = extra_info if isinstance(extra_info, dict) else {}
        reward_model = non_tensor.get("reward_model") or {}
        ground_truth = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
        data_source = str(non_tensor.get("data_source", ""))
        source = self._source(data_source, _text_or_none(non_tensor.get("ability")))
        verified = await self._verify(source, text, ground_truth, extra_info)

        if VALIDATE_KEY in non_tensor:  # the trainer's own flag (arena_verl.verl_edge.validation_signal): authoritative
            validation = bool(non_tensor[VALIDATE_KEY])
        else:  # paths that do not go through the agent loop's reward call: the caller's flag or the data's split
            validation = bool(data.meta_info.get("validate")) or (
                extra_info.get("split") in self.settings.validation_splits
            )
        uid = non_tensor.get("uid")
        if validation or uid is None:
            return _answer(verified, Verdict(reward=verified.score), validation)
        sample = dict(
            uid=str(uid),
            sample_key=_sample_key(non_tensor.get("session_id")),
            content_key=hashlib.blake2b(valid_ids.cpu().numpy().tobytes(), digest_size=12).hexdigest(),
            verifier_reward=verified.score,
            step=_int_or_none(non_tensor.get("global_steps")),
        )
        if not self.settings.uses_judge:
            if self.observe_rlvr:  # rlvr: counted, never judged
                self._observe(Submission(**sample, problem="", trace=Trace(text="")))
            return _answer(verified, Verdict(reward=verified.score), validation)

        submission = Submission(
            **sample,
            problem=await self.loop.run_in_executor(None, self._problem_text, item),
            trace=Trace(text=text, quality_hint=_float_or_none(extra_info.get("sim_quality"))),
            reference=ground_truth_text(ground_truth),
            task=source.template,
        )
        return _answer(verified, await self._referee_verdict(submission), validation)

    def _observe(self, submission: Submission) -> None:
        """rlvr: tell the referee about the sample without waiting (fire and forget), so that the RLVR run
        logs how many groups were non-diverse and what the arena would have routed. Never delays the sample; a
        referee that cannot be reached only costs that sample's count."""
        try:
            # observe() returns at once: no call stays open in this worker while the group fills (a worker with
            # calls in flight would not exit promptly on SIGTERM), and the answer is never needed.
            referee_handle(self.settings, submission.uid).observe.remote(submission)
        except Exception as exc:  # noqa: BLE001
            logger.debug("rlvr observation of group %s not sent (%r)", submission.uid, exc)
            forget_referee(self.settings, submission.uid)

    async def _referee_verdict(self, submission: Submission) -> Verdict:
        s = self.settings
        # Past the group deadline plus the tournament timeout the referee itself would have answered.
        patience = s.group_deadline_s + s.tournament_timeout_s + 60.0
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + _UNAVAILABLE_PATIENCE_S
        delay = 0.25
        try:
            while True:
                handle = referee_handle(s, submission.uid)
                try:
                    return await asyncio.wait_for(handle.submit.remote(submission), patience)
                except ray.exceptions.ActorUnavailableError:
                    # The referee is restarting (Ray raises this for calls in flight when its process died). The
                    # restarted referee rebuilds the group from the samples that submit again.
                    if loop.time() + delay > give_up_at:
                        raise
                    await asyncio.sleep(delay)
                    delay = min(2 * delay, 5.0)
        except Exception as exc:  # noqa: BLE001  (a lost referee never fails the step: verifier reward instead)
            logger.warning("referee for group %s unavailable (%r); verifier reward used", submission.uid, exc)
            forget_referee(s, submission.uid)
            self._report_fallback(submission, FALLBACK_REASONS[FALLBACK_REFEREE_LOST])
            return Verdict(reward=submission.verifier_reward, fallback=FALLBACK_REFEREE_LOST)

    def _report_fallback(self, submission: Submission, reason: str) -> None:
        """Count a fallback decided here at the referee (fire and forget: a referee still gone costs the count only,
        and the sample already has its reward)."""
        try:
            referee_handle(self.settings, submission.uid).count_fallback.remote(submission.step, reason)
        except Exception as exc:  # noqa: BLE001
            logger.debug("fallback of group %s not counted (%r)", submission.uid, exc)
            forget_referee(self.settings, submission.uid)

    def _source(self, data_source: str, ability: str | None = None) -> SourceKind:
        s = self.settings
        return classify_source(
            data_source,
            ability,
            math_sources=s.math_data_sources,
            multiple_choice_sources=s.multiple_choice_data_sources,
        )

    async def _verify(self, source: SourceKind, text: str, ground_truth: Any, extra_info: dict) -> VerifyResult:
        scorer, data_source = self.user_scorer, source.data_source
        verifier = source.verifier if scorer is None else "user"
        if verifier == "multiple_choice":
            return _multiple_choice(text, ground_truth, data_source)
        if verifier == "math":
            return await self.loop.run_in_executor(None, self._verifier.score, text, ground_truth)
        scorer = scorer or self.default_scorer
        kwargs = dict(data_source=data_source, solution_str=text, ground_truth=ground_truth, extra_info=extra_info)
        try:
            if inspect.iscoroutinefunction(scorer):
                result = await scorer(**kwargs)
            else:
                result = await self.loop.run_in_executor(None, lambda: scorer(**kwargs))
            score = float(result["score"] if isinstance(result, dict) else result)
            if not math.isfinite(score):
                raise ValueError(f"score {score!r} is not finite")
            return VerifyResult(score, "correct" if _solved(result, score) else "wrong")
        except Exception as exc:  # noqa: BLE001  (a scorer that raises gives 0, counted as an error)
            logger.warning("reward function failed on a %s sample (%r); scored 0", data_source, exc)
            return VerifyResult(0.0, "error")

    def _problem_text(self, item) -> str:
        raw_prompt = item.non_tensor_batch.get("raw_prompt")
        if raw_prompt is not None:
            messages = list(raw_prompt)
            user = [m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
            if user and isinstance(user[-1], str):
                return user[-1]
        prompt_ids = item.batch["prompts"]
        prompt_mask = item.batch["attention_mask"][: prompt_ids.shape[-1]].bool()
        return self.tokenizer.decode(prompt_ids[prompt_mask], skip_special_tokens=True)


def _with_verl_router(settings: ArenaSettings, config, router_address: str | None) -> ArenaSettings:
    """``judge.backend=openai judge.base_url=verl``: the judge is the model verl serves (``reward.reward_model.*``),
    reached through the router address verl hands the reward manager."""
    judge = settings.judge
    if judge.backend != "openai" or judge.base_url != "verl":
        return settings
    # A composition in which verl's judge sleeps for good, or never streams, is refused at start, not found out
    # by every routed group falling back at its deadline.
    check_verl_placement(config, settings)
    if not router_address:
        raise ValueError(
            "reward.arena.judge.base_url=verl needs verl to serve the judge: set reward.reward_model.enable=true "
            "and reward.reward_model.model_path"
        )
    model = judge.model_path or config.reward.reward_model.model_path
    return dataclasses.replace(
        settings, judge=dataclasses.replace(judge, base_url=f"http://{router_address}/v1", model_path=model)
    )


def _answer(verified: VerifyResult, verdict: Verdict, validation: bool) -> dict:
    info = {
        "arena/verifier_reward": float(verified.score),
        "arena/verify_status": float(STATUSES.index(verified.status)),
        "arena/validation": float(validation),
        "arena/routed": float(verdict.routed),
        "arena/route": float(verdict.route),
        "arena/uniform_group": float(verdict.uniform),
        "arena/strength": float(verdict.strength),
        "arena/win_rate": float(verdict.win_rate),
        "arena/judge_calls": float(verdict.judge_calls),
        "arena/judge_failures": float(verdict.judge_failures),
        "arena/fallback": float(verdict.fallback),
        "acc": float(verified.status == "correct"),
    }
    reward = float(verdict.reward)
    if not math.isfinite(reward):  # never reached through the referee (it cleans its inputs); a last safety net
        logger.warning("non-finite reward %r replaced by the verifier reward", reward)
        reward = float(verified.score) if math.isfinite(verified.score) else 0.0
    return {"reward_score": reward, "reward_extra_info": info}


def _sample_key(session_id: Any) -> str:
    # verl's V1 trainer numbers the samples of a group (session_id). Without it (legacy trainer, batch path) every
    # call is a sample of its own; the referee then recognises the batch path's padding copies by their content.
    return f"session-{session_id}" if session_id is not None else f"call-{uuid.uuid4().hex}"


def _is_own_reward_fn(path: Any) -> bool:
    return str(path).removeprefix("pkg://").replace("/", ".").removesuffix(".py").endswith("arena_verl.verl_reward_fn")


def _verl_default_scorer(config):
    """verl's default_compute_score with the job's sandbox settings, as verl builds it without a custom function
    (verl shares one semaphore across its processes; here one per reward worker bounds each worker's calls)."""
    import threading
    from functools import partial

    from verl.utils.reward_score import default_compute_score

    sandbox = config.reward.get("sandbox_fusion", {}) or {}
    url = sandbox.get("url")
    if not url:
        return default_compute_score
    return partial(
        default_compute_score,
        sandbox_fusion_url=url,
        concurrent_semaphore=threading.Semaphore(int(sandbox.get("max_concurrent", 64))),
        memory_limit_mb=sandbox.get("memory_limit_mb", 1024),
    )


def _solved(result: Any, score: float) -> bool:
    """Correctness ("acc") from a reward function's answer: its own ``acc`` when it gives one (verl's math_dapo), else
    a full score (1 for right; verl's code scorers give the fraction of tests passed, and 0.1 passed is not solved)."""
    if isinstance(result, dict) and "acc" in result:
        return bool(result["acc"])
    return score >= 1.0


def _multiple_choice(text: str, ground_truth: Any, data_source: str) -> VerifyResult:
    """The reply's letter against a one-letter ground truth (GPQA); verl has no such scorer and would score 0."""
    try:
        score = multiple_choice.score(text, ground_truth)
    except ValueError as exc:  # a broken ground truth: counted as an error, never a crash
        logger.warning("multiple-choice sample of %s not scored: %s", data_source, exc)
        return VerifyResult(0.0, "error")
    if score > 0:
        return VerifyResult(1.0, "correct")
    return VerifyResult(0.0, "wrong" if multiple_choice.extract_choice(text) else "no_answer")


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None
