"""The one dump reader: dump rows -> joined samples -> verified groups, for ``arena-verl analyze``, ``arena-verl
score`` and the evaluation (``arena-verl evaluate``, ``scripts/eval/evaluate.py``) alike.

1. **rows -> joined samples** (:func:`arena_verl.data.dumps.read_dump_file`): each file's prompts, their final
   outputs (a session with several outputs counts once, by its last), joined to the parquet row that gives their
   data source, with ONE ground-truth precedence: the dump's ``gts`` (what the run's reward manager scored
   against), the row's only where the dump has none or both are the same truth. A row whose ground truth differs is
   a disagreement: counted in :attr:`VerifiedFile.disagreements` and reported by every tool
   (:func:`arena_verl.data.dump_notes.disagreement_note`), never resolved otherwise by one of them.
2. **joined samples -> verified groups** (:func:`verify_prompts`): each prompt's samples verified by the
   :class:`~arena_verl.evaluation.scoring.Scorer` chosen per data source and kind. A prompt without a ground truth,
   or of a kind the scorer cannot score here (code without a sandbox, an unknown data source), is *unverified*,
   with the reason: counted as such by the tools, never guessed; so is a prompt whose samples carry different
   ground truths (:data:`DIFFERING_TRUTHS`). So is a prompt with one sample or more the scorer
   could not verify for a reason that is not the model's (``correct`` None per sample, see
   :data:`~arena_verl.evaluation.scoring.UNVERIFIED_REASONS`): a ground truth the verifier cannot read, code the
   sandbox could not run. Its per-sample statuses are kept (:attr:`VerifiedGroup.statuses`), its ``correct`` is
   None: a group half verified would be scored over fewer samples than it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena_verl.data.dump_files import find_dump_files, select_steps
from arena_verl.data.dumps import (
    DumpFile,
    PromptSamples,
    Sample,
    TruthDisagreement,
    read_dump_file,
    read_validation_data,
)
from arena_verl.data.prompt_match import PromptIndex
from arena_verl.evaluation.scoring import UNVERIFIED_REASONS, Scorer, benchmark_kind

__all__ = [
    "DIFFERING_COPIES",
    "DIFFERING_TRUTHS",
    "DUPLICATE_UID",
    "NOT_SCORED",
    "NO_GROUND_TRUTH",
    "UNSCORED_STATUSES",
    "UNVERIFIED_REASONS",
    "UNVERIFIED_STATUSES",
    "VerifiedFile",
    "VerifiedGroup",
    "read_verified",
    "verify_prompts",
]

NO_GROUND_TRUTH = "no ground truth (gts) in the dump"
DIFFERING_TRUTHS = "its samples carry different ground truths (which one is the prompt's is unknown)"
DIFFERING_COPIES = "their group is unverified"  # what the tools do with a uid whose copies differ
DUPLICATE_UID = "a uid occurs twice in its step file with different samples (which copy the run trained on is unknown)"
# The status of each sample of a group that was not scored at all, by why (anything else the scorer declined:
# NOT_SCORED), so that a group's statuses count every one of its samples.
UNSCORED_STATUSES = {
    NO_GROUND_TRUTH: "no_ground_truth",
    DUPLICATE_UID: "duplicate_uid",
    DIFFERING_TRUTHS: "differing_truths",
}
NOT_SCORED = "not_scored"
UNVERIFIED_STATUSES = (*UNVERIFIED_REASONS, *UNSCORED_STATUSES.values(), NOT_SCORED)  # a sample's, never verified
_SCORING_CHUNK = 256  # samples per scorer call: big enough to keep the verifier's workers busy, small for a bar


@dataclass(frozen=True)
class VerifiedGroup:
    """One prompt's samples of one file, with the verifier's outcome per sample (``correct`` None: unverified)."""

    step: int | None  # the file's step (from its name)
    prompt: PromptSamples
    kind: str  # benchmark_kind's: math | multiple_choice | code | unknown
    correct: tuple[bool, ...] | None
    statuses: tuple[str, ...] = ()  # the scorer's status per sample (also of an unverified group's samples)
    scored_by: str | None = None  # math-verify | multiple-choice | sandbox | dumped score
    unverified_because: str | None = None  # NO_GROUND_TRUTH, or the scorer's "not scored: ..."

    @property
    def unverified_samples(self) -> int:
        """Samples the scorer could not verify (all of them when the group was not scored at all)."""
        if self.correct is not None:
            return 0
        if not self.statuses:
            return len(self.prompt.samples)
        return sum(status in UNVERIFIED_REASONS for status in self.statuses)

    @property
    def sample_statuses(self) -> tuple[str, ...]:
        """One status per sample: the scorer's, or for a group not scored at all why (``UNSCORED_STATUSES``)."""
        if self.statuses or self.correct is not None:
            return self.statuses
        return (UNSCORED_STATUSES.get(str(self.unverified_because), NOT_SCORED),) * len(self.prompt.samples)

    @property
    def samples(self) -> tuple[Sample, ...]:
        return self.prompt.samples

    @property
    def data_source(self) -> str:
        return self.prompt.samples[0].benchmark

    @property
    def ground_truth(self) -> Any:
        return self.prompt.samples[0].ground_truth


@dataclass
class VerifiedFile:
    file: DumpFile
    groups: list[VerifiedGroup]

    @property
    def disagreements(self) -> list[TruthDisagreement]:
        return self.file.disagreements

    @property
    def duplicates(self) -> list:
        return self.file.duplicates  # lines repeating a uid of their step file (DuplicateUid)

    @property
    def blank_lines(self) -> list:
        return self.file.blanks  # its blank lines (BlankLines; empty when it has none)


def read_verified(
    dump: str | Path,
    scorer: Scorer,
    *,
    data: Sequence[str | Path] = (),
    step: str | int = "all",
    need_data: bool = False,
    generations: bool = False,
    progress: Callable[[int], Any] | None = None,
) -> Iterator[VerifiedFile]:
    """Every chosen step file of ``dump`` (a dump folder or one file), joined to ``data`` and verified by ``scorer``.

    Parameters
    ----------
    dump : str or Path
        ``trainer.rollout_data_dir`` or ``validation_data_dir``, or one of its files.
    scorer : Scorer
        Verifies the final outputs (its options say whether code has a sandbox).
    data : paths
        The run's parquet file(s): each prompt's data source (every dumped prompt must match a row).
    step : ``all``, ``latest`` or a step number
    need_data : bool
        A verl dump without ``data`` is an error (the evaluation reports per data source); else every prompt is math.
    generations : bool
        Plain generation files (``response`` lines) are accepted too.
    progress : callable, optional
        Called with a number of dump lines each time they have been read and verified.
    """
    index = PromptIndex(read_validation_data(list(data))) if data else None
    for number, path in select_steps(find_dump_files(dump), step):
        file = read_dump_file(path, index, need_data=need_data, generations=generations)
        groups = verify_prompts(file.prompts, scorer, step=number, progress=progress)
        if progress is not None:  # the rest: samples no scorer ran on and the earlier outputs of multi-output sessions
            progress(file.lines - sum(len(g.samples) for g in groups if g.statuses))
        yield VerifiedFile(file, groups)


def verify_prompts(
    prompts: Sequence[PromptSamples],
    scorer: Scorer,
    step: int | None = None,
    progress: Callable[[int], Any] | None = None,
) -> list[VerifiedGroup]:
    """The prompts in order, each verified by the scorer of its data source's kind (or left unverified, with why)."""
    kinds = [benchmark_kind(p.samples[0].benchmark, p.samples[0].ability) for p in prompts]
    outcome: dict[int, tuple[tuple[bool, ...] | None, tuple[str, ...], str | None, str | None]] = {}
    by_source: dict[tuple[str, str], list[int]] = {}
    for position, prompt in enumerate(prompts):
        if prompt.conflicting_uids:  # two different copies of one sample: which one the run trained on is unknown
            outcome[position] = (None, (), None, DUPLICATE_UID)
        elif prompt.differing_truths and not scorer.options.use_dumped_scores:
            outcome[position] = (None, (), None, DIFFERING_TRUTHS)  # scored against either, half would be wrong
        elif prompt.samples[0].ground_truth is None and not scorer.options.use_dumped_scores:
            outcome[position] = (None, (), None, NO_GROUND_TRUTH)  # a verifier would call every answer wrong
        else:
            by_source.setdefault((prompt.samples[0].benchmark, kinds[position]), []).append(position)
    for (_, kind), positions in by_source.items():
        method, why_not = scorer.method(kind, [s for p in positions for s in prompts[p].samples])
        if method is None:
            outcome.update({p: (None, (), None, why_not) for p in positions})
            continue
        for chunk in _chunks(positions, prompts):
            samples = [s for p in chunk for s in prompts[p].samples]
            verdicts = iter(scorer.score(method, samples))
            for p in chunk:
                mine = [next(verdicts) for _ in prompts[p].samples]
                statuses = tuple(s for _, s in mine)
                failed = [s for c, s in mine if c is None]
                if failed:  # a sample not verified: the group is unverified, never counted as wrong
                    commonest = max(sorted(set(failed)), key=failed.count)
                    reason = UNVERIFIED_REASONS.get(commonest, f"not scored: {commonest}")
                    outcome[p] = (None, statuses, method, reason)
                else:
                    outcome[p] = (tuple(bool(c) for c, _ in mine), statuses, method, None)
            if progress is not None:
                progress(len(samples))
    return [VerifiedGroup(step, prompt, kinds[position], *outcome[position]) for position, prompt in enumerate(prompts)]


def _chunks(positions: list[int], prompts: Sequence[PromptSamples]) -> Iterator[list[int]]:
    """Whole prompts, about ``_SCORING_CHUNK`` samples at a time."""
    chunk, size = [], 0
    for position in positions:
        chunk.append(position)
        size += len(prompts[position].samples)
        if size >= _SCORING_CHUNK:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
