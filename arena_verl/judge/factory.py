"""Build the configured judge: the registry's factory of ``judge.backend`` (:mod:`arena_verl.backend_registry`), or an
ensemble of such judges (``judge.ensemble.members``: :mod:`arena_verl.judge.ensemble`)."""

from __future__ import annotations

import importlib

from arena_verl.backend_registry import backend_of
from arena_verl.core.judge_protocol import Judge
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.settings_judge import JudgeSettings, judge_call_bound_s

__all__ = ["make_judge"]


def make_judge(settings: JudgeSettings) -> Judge:
    """The judge ``settings`` describe; a model-backed judge's templates are checked before its model loads (a python
    judge's function is imported: a missing module or function is a ValueError). With ensemble members: an
    :class:`~arena_verl.judge.ensemble.EnsembleJudge` of every voter, each built as a judge of its own."""
    voters = settings.voters()
    if len(voters) > 1:
        from arena_verl.judge.ensemble import EnsembleJudge, Member

        ensemble = settings.ensemble
        members = [Member(name, _one_judge(voter), judge_call_bound_s(voter)) for name, voter in voters]
        return EnsembleJudge(members, ensemble.combine, ensemble.per_comparison, ensemble.quorum, seed=settings.seed)
    return _one_judge(settings)


def _one_judge(settings: JudgeSettings) -> Judge:
    backend = backend_of(settings)
    check_judge_templates(settings)
    factory = backend.factory
    if isinstance(factory, str):  # "package.module:attribute": its module is imported when a judge is built
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    return factory(settings)
