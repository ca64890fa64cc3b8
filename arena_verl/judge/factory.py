"""Build the configured judge backend."""

from __future__ import annotations

from arena_verl.core.judge_protocol import Judge
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.judge.simulated.trace_judge import SimulatedTraceJudge
from arena_verl.settings import JudgeSettings

__all__ = ["make_judge"]


def make_judge(settings: JudgeSettings) -> Judge:
    """The judge ``settings`` describe; a model-backed judge's templates are checked before its model loads."""
    check_judge_templates(settings)
    if settings.backend == "simulated":
        return SimulatedTraceJudge(
            sharpness=settings.sim_sharpness,
            position_bias=settings.sim_position_bias,
            tie_rate=settings.sim_tie_rate,
            parse_failure_rate=settings.sim_parse_failure_rate,
            latency_s=settings.sim_latency_s,
            latency_sigma=settings.sim_latency_sigma,
            seed=settings.seed,
            verdict=settings.verdict,
        )
    if settings.backend == "transformers":
        from arena_verl.judge.backends.transformers_backend import TransformersJudge

        return TransformersJudge(settings)
    if settings.backend == "openai":
        from arena_verl.judge.backends.openai_backend import OpenAIJudge

        return OpenAIJudge(settings)
    if settings.backend == "python":
        from arena_verl.judge.backends.python_backend import PythonJudge

        return PythonJudge(settings)  # imports judge.callable now: a missing module or function is a ValueError
    if settings.backend == "vllm":
        from arena_verl.judge.backends.vllm_backend import VLLMJudge

        return VLLMJudge(settings)
    raise ValueError(f"reward.arena.judge.backend: unknown backend {settings.backend!r}")
