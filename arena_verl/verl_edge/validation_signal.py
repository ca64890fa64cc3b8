"""Tell the reward manager which samples are validation samples, from the trainer itself.

verl 0.9.1's trainers know when they validate (``meta_info["validate"]``, carried into each agent-loop trajectory as
``trajectory["validate"]``) but do not pass it to the reward loop: ``run_single`` gets the sample's dataset fields
only. A validation sample that reached the referee would wait for a group of ``rollout.n`` that never comes
(validation sends ``val_kwargs.n`` per prompt). So, in the agent-loop worker processes, the flag is carried from
``_run_agent_loop`` (where the trajectory says it) to ``_compute_score`` (which builds the reward call's data) and
added there as the non-tensor field ``VALIDATE_KEY`` (True or False) of the reward call only; the training batch is
left exactly as verl builds it. Installed by the plugin when the agent loop is imported. Where the field is present
the reward manager trusts it over the dataset's ``extra_info.split``, which is the fallback for the paths that do
not go through the agent loop's reward call.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging

from arena_verl.verl_edge.import_hooks import after_import

logger = logging.getLogger(__name__)

__all__ = ["VALIDATE_KEY", "install_validation_signal", "is_installed"]

VALIDATE_KEY = "arena_validate"
_AGENT_LOOP_MODULE = "verl.experimental.agent_loop.agent_loop"
_validating: contextvars.ContextVar[bool] = contextvars.ContextVar("arena_validating", default=False)


def install_validation_signal() -> None:
    after_import(_AGENT_LOOP_MODULE, _patch_agent_loop_worker)


def _signature_is(function, names: tuple[str, ...]) -> bool:
    try:
        return tuple(inspect.signature(function).parameters) == names
    except (TypeError, ValueError):
        return False


def is_installed(worker_cls) -> bool:
    return getattr(worker_cls._compute_score, "_arena_validation_signal", False)


def _patch_agent_loop_worker(module) -> None:
    worker_cls = getattr(module, "AgentLoopWorker", None)
    run, score = getattr(worker_cls, "_run_agent_loop", None), getattr(worker_cls, "_compute_score", None)
    if run is None or score is None or not _signature_is(score, ("self", "outputs", "kwargs")):
        logger.warning("arena: verl's AgentLoopWorker has changed; validation is recognised by extra_info.split only")
        return
    if is_installed(worker_cls):
        return

    @functools.wraps(run)
    async def _run_agent_loop(self, sampling_params, trajectory, *args, **kwargs):
        # Each trajectory runs in its own asyncio task, so the flag cannot leak into another sample.
        token = _validating.set(bool(isinstance(trajectory, dict) and trajectory.get("validate", False)))
        try:
            return await run(self, sampling_params, trajectory, *args, **kwargs)
        finally:
            _validating.reset(token)

    @functools.wraps(score)
    async def _compute_score(self, outputs, kwargs):
        # Every sample says what the trainer knows, so the reward manager can trust this over the data's split.
        return await score(self, outputs, kwargs={**kwargs, VALIDATE_KEY: _validating.get()})

    _compute_score._arena_validation_signal = True
    worker_cls._run_agent_loop, worker_cls._compute_score = _run_agent_loop, _compute_score
