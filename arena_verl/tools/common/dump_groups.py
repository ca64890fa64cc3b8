"""A dump's groups as the commands that judge a dump offline (``score``, ``audit-judge``) see them: one prompt's
verified samples of one step (:class:`DumpGroup`, from the one dump reader :mod:`arena_verl.evaluation.verified`),
the identity of its step file and the hash of a response, which their resumable files record to refuse another
dump."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from arena_verl.data.dump_files import EvaluationInputError
from arena_verl.evaluation.verified import VerifiedGroup
from arena_verl.judge.prompting.templates import task_of
from arena_verl.settings import ArenaSettings
from arena_verl.verify.ground_truth import ground_truth_text

__all__ = ["ARENA", "DumpGroup", "dump_group", "file_identity", "response_digest"]

ARENA = ArenaSettings()  # the arena's defaults: diversity tolerance, fit, failure policy, schedule and reward scale


@dataclass(frozen=True)
class DumpGroup:
    """One prompt's samples of one step, verified."""

    step: int | None
    key: str
    problem: str  # the dump's ``input``: the prompt as the policy saw it
    reference: str | None
    task: str  # the judge's prompt: math, code or generic
    data_source: str | None  # None without --data
    responses: tuple[str, ...]
    correct: tuple[bool, ...]
    truth_disagrees: bool = False  # --data has another ground truth than the dump (the dump's was used)
    dump_file: str | None = None  # the identity of its step file (file_identity)

    @property
    def verifier_rewards(self) -> list[float]:
        return [float(c) for c in self.correct]


def dump_group(group: VerifiedGroup, joined: bool, disagrees: bool, identity: str | None = None) -> DumpGroup:
    first = group.samples[0]
    return DumpGroup(
        step=group.step,
        key=group.prompt.key,
        problem=group.prompt.problem,
        reference=ground_truth_text(first.ground_truth),
        task=task_of(first.benchmark, ARENA.math_data_sources, first.ability),
        data_source=first.benchmark if joined else None,
        responses=tuple(sample.response for sample in group.samples),
        correct=group.correct,
        truth_disagrees=disagrees,
        dump_file=identity,
    )


def file_identity(path: Path) -> str:
    """A dump step file's identity: its name, size and a digest of its first line (cheap: one stat, one line).
    The resumable files record it per line; a file resumed on another dump's step file is refused."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
    except OSError as exc:
        raise EvaluationInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return f"{path.name}:{size}:{hashlib.blake2b(first, digest_size=8).hexdigest()}"


def response_digest(text: str) -> str:
    """A short hash of a response: a line judged on other responses than the dump's is refused."""
    return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=6).hexdigest()
