"""Build the configured judge backend."""

from __future__ import annotations

from ..settings import JudgeSettings
from .base import Judge
from .simulated import SimulatedTraceJudge

__all__ = ["make_judge"]


def make_judge(settings: JudgeSettings) -> Judge:
    if settings.backend == "simulated":
        return SimulatedTraceJudge(
            sharpness=settings.sim_sharpness,
            position_bias=settings.sim_position_bias,
            tie_rate=settings.sim_tie_rate,
            parse_failure_rate=settings.sim_parse_failure_rate,
            latency_s=settings.sim_latency_s,
            latency_sigma=settings.sim_latency_sigma,
            seed=settings.seed,
        )
    if settings.backend == "transformers":
        from .transformers_backend import TransformersJudge

        return TransformersJudge(settings)
    if settings.backend == "openai":
        from .openai_backend import OpenAIJudge

        return OpenAIJudge(settings)
    if settings.backend == "vllm":
        from .vllm_backend import VLLMJudge

        return VLLMJudge(settings)
    raise ValueError(f"reward.arena.judge.backend: unknown backend {settings.backend!r}")
