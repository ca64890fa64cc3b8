"""A dump's groups as the commands that judge a dump offline (``score``, ``audit-judge``) see them: one prompt's
verified samples of one step (:class:`DumpGroup`, from the one dump reader :mod:`arena_verl.evaluation.verified`),
the identity of its step file and the hash of a response, which their resumable files record to refuse another
dump; and the one tally of what reading a dump found (:class:`DumpTally`, :func:`verified_groups`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from arena_verl.core.routing import is_uniform
from arena_verl.data.dump_files import EvaluationInputError
from arena_verl.data.dumps import TruthDisagreement
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.verified import NO_GROUND_TRUTH, VerifiedGroup, read_verified
from arena_verl.judge.prompting.templates import task_of
from arena_verl.settings import ArenaSettings
from arena_verl.verify.ground_truth import ground_truth_text

__all__ = ["ARENA", "DumpGroup", "DumpTally", "dump_group", "file_identity", "response_digest", "verified_groups"]

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


@dataclass
class DumpTally:
    """What reading a dump found (:func:`verified_groups` counts into it as it reads)."""

    files: int = 0  # step files read
    groups: int = 0  # groups read, whatever their outcome
    by_uid: int = 0  # V1 dumps: grouped by the uid's prompt uuid; the rest by identical prompt text (legacy)
    diverse: int = 0  # verified groups of two samples or more whose verifier outcomes differ
    non_diverse: int = 0  # ... whose verifier outcomes are all equal (the arena's rule, diversity_tol)
    single: int = 0  # verified groups of one sample: nothing to compare
    not_verified: Counter = field(default_factory=Counter)  # why -> groups left out
    statuses: Counter = field(default_factory=Counter)  # the verifier's per-sample statuses (verified groups)
    disagreements: list[TruthDisagreement] = field(default_factory=list)  # --data's ground truth is not the dump's
    duplicates: list = field(default_factory=list)  # dump lines repeating a uid of their step file (DuplicateUid)
    blank_lines: list = field(default_factory=list)  # the blank lines of each step file (BlankLines, skipped)
    identities: dict[int | None, str] = field(default_factory=dict)  # step -> file_identity of its file
    keys: dict[int | None, set[str]] = field(default_factory=dict)  # step -> every group key read (any outcome)


def verified_groups(
    dump: str | Path, scorer: Scorer, data: list, tally: DumpTally, step: str | int = "all"
) -> Iterator[tuple[DumpGroup, bool]]:
    """Every verified group of two samples or more of the chosen steps of ``dump`` (the one dump reader,
    :func:`~arena_verl.evaluation.verified.read_verified`), with whether it is diverse (the arena's rule:
    :func:`~arena_verl.core.routing.is_uniform` on the verifier rewards); everything read, these groups and the ones
    left out (not verified, one sample), is counted into ``tally`` as it is read. The caller keeps the groups it
    needs."""
    for verified in read_verified(dump, scorer, data=data, step=step):
        tally.files += 1
        tally.disagreements += verified.disagreements
        tally.duplicates += verified.duplicates
        tally.blank_lines += verified.blank_lines
        disagreeing = {d.line for d in verified.disagreements}
        identity = file_identity(verified.file.path)
        tally.identities[verified.file.step] = identity
        keys = tally.keys.setdefault(verified.file.step, set())
        for group in verified.groups:
            keys.add(group.prompt.key)
            tally.groups += 1
            tally.by_uid += group.prompt.key.startswith("uid ")
            if group.correct is None:
                why = group.unverified_because
                reason = "no ground truth (gts) to verify against" if why == NO_GROUND_TRUTH else f"{group.kind}: {why}"
                tally.not_verified[reason] += 1
                continue
            tally.statuses.update(group.statuses)
            judged = dump_group(group, verified.file.joined, group.prompt.line in disagreeing, identity)
            if len(judged.responses) < 2:
                tally.single += 1
                continue
            diverse = not is_uniform(judged.verifier_rewards, ARENA.referee.diversity_tol)
            if diverse:
                tally.diverse += 1
            else:
                tally.non_diverse += 1
            yield judged, diverse
