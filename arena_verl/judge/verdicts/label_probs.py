"""Verdicts read from token probabilities (``reward.arena.judge.verdict: probability``): which tokens spell a
label, and the arithmetic that turns their next-token probabilities into an outcome in [0, 1].

The judge's turn is continued right where the verdict token goes (after :data:`VERDICT_PREFIX`, ``[[``). A backend
reports the probabilities of the tokens that may come next (:data:`ReadFn`); every token that spells a label counts
for it: ``A``, `` A``, ``a``, ``A]]``; and for a label the tokenizer writes in pieces, the first piece of each of its
spellings (``TI`` where ``TIE`` is ``TI`` + ``E``; ``T`` only where ``Tie`` is ``T`` + ``ie``). A token that starts
labels of different outcomes (pointwise ``0`` starts ``0`` and ``0.5``) is resolved by one more read after it
(``[[0`` then ``]]`` or ``.``). The label probabilities are renormalised over the labels:
pairwise, the outcome is P(A) + P(TIE) / 2 (P(first shown is better), ties splitting their mass); pointwise, the
expected score over 0 / 0.5 / 1. The mass the labels got before renormalising says how much the model meant a
label at all: below ``low_mass_floor`` the call is counted as low-mass (:func:`is_low_mass`), and its renormalised
verdict still stands; no mass at all is no verdict. A read that sees only the most probable tokens (an API's top 20:
:class:`PartialProbabilities`) cannot tell the mass of a label missing from them; when that mass could be 1% or more
the call is counted as low-mass too (``LabelReading.incomplete``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from arena_verl.core.names import PROBABILITY_READS_PER_VERDICT
from arena_verl.judge.verdicts.parsing import strip_reasoning

__all__ = [
    "VERDICT_PREFIX",
    "LabelTargets",
    "LabelReading",
    "LabelVocabulary",
    "PartialProbabilities",
    "ReadFn",
    "FirstPieces",
    "pairwise_targets",
    "pointwise_targets",
    "token_spellings",
    "reading_from_masses",
    "is_low_mass",
    "read_labels",
    "verdict_continuation",
]

VERDICT_PREFIX = "[["
PAIRWISE_OUTCOMES = {"A": 1.0, "B": 0.0, "TIE": 0.5}
POINTWISE_OUTCOMES = {"1": 1.0, "0.5": 0.5, "0": 0.0}
# Extra reads per call for tokens that start labels of different outcomes (the call budget counts every read).
_MAX_CONTINUATIONS = PROBABILITY_READS_PER_VERDICT - 1
_MIN_CONTINUED_MASS = 0.01  # such a token with less probability is dropped rather than read further
# A label missing from a partial read (the top 20) whose mass could reach this makes the call low-mass.
_MISSING_LABEL_MASS = 0.01


class PartialProbabilities(dict):
    """``{token text: probability}`` of the most probable tokens only (an API's top 20, not the tokens asked for).
    ``bound``: the most a token without an entry can have (the least listed probability, or what the list leaves
    unaccounted for, whichever is smaller)."""

    def __init__(self, probabilities: Mapping[str, float]):
        super().__init__(probabilities)
        values = [float(p) for p in self.values() if p > 0]
        self.bound = max(0.0, min(min(values), 1.0 - sum(values))) if values else 1.0


@dataclass(frozen=True)
class LabelTargets:
    """What may be written at one position of the verdict: label spellings (what is left of them), each with its
    outcome. ``first``: the verdict's first position, where leading whitespace is allowed (``[[ A]]`` parses)."""

    spellings: tuple[tuple[str, float], ...]
    ignore_case: bool = False
    first: bool = True


def pairwise_targets(template_text: str | None = None) -> LabelTargets:
    """``A`` (first shown better: 1), ``B`` (0), and ``TIE`` (0.5) when the template offers it (``[[TIE]]`` in its
    text; None: offered). Case is ignored, as the verdict parser ignores it."""
    labels = dict(PAIRWISE_OUTCOMES)
    if template_text is not None and "[[TIE]]" not in template_text.upper():
        labels.pop("TIE")
    return LabelTargets(tuple(labels.items()), ignore_case=True)


def pointwise_targets(template_text: str | None = None) -> LabelTargets:
    """``1``, ``0`` and ``0.5`` when the template offers it (``[[0.5]]`` in its text; None: offered)."""
    labels = dict(POINTWISE_OUTCOMES)
    if template_text is not None and "[[0.5]]" not in template_text:
        labels.pop("0.5")
    return LabelTargets(tuple(labels.items()))


def _closes(rest: str) -> bool:
    """What follows a complete label in a token: the closing bracket (spaces before it are fine)."""
    return rest.lstrip(" ").startswith("]")


def token_spellings(
    token: str, targets: LabelTargets, first_pieces: frozenset[str] | None = None
) -> tuple[tuple[str, float], ...]:
    """The label spellings ``token`` is consistent with, each as (what is left to write after it, outcome); empty
    when the token writes no label. ``""`` left: the label is complete. A token that writes only the start of a
    label counts when it is in ``first_pieces`` (how the tokenizer starts that label: ``TI`` for ``TIE``, not ``T``,
    which starts other words); None: any start counts (no tokenizer known)."""
    text = token.lstrip() if targets.first else token
    if not text:
        return ()
    key = text.upper() if targets.ignore_case else text
    found = []
    for spelling, value in targets.spellings:
        probe = spelling.upper() if targets.ignore_case else spelling
        if probe.startswith(key):
            if len(key) < len(probe) and first_pieces is not None and token not in first_pieces:
                continue
            found.append((spelling[len(key) :], value))
        elif key.startswith(probe) and _closes(key[len(probe) :]):
            found.append(("", value))
    return tuple(found)


@dataclass(frozen=True)
class LabelReading:
    """A verdict read from probabilities: ``outcome`` in [0, 1], the ``mass`` the labels got before renormalising,
    and the renormalised probability of each outcome value. ``incomplete``: read from a partial list (the top 20)
    that lacks a label whose mass could be 1% or more (its share of the verdict is unknown)."""

    outcome: float
    mass: float
    probabilities: tuple[tuple[float, float], ...]
    incomplete: bool = False


def reading_from_masses(masses: Mapping[float, float], incomplete: bool = False) -> LabelReading | None:
    """Renormalise the probability mass of each outcome value: ``outcome`` is the expected value (pairwise
    P(A) + P(TIE) / 2). None when the labels got no mass (no verdict)."""
    total = sum(m for m in masses.values() if m > 0)
    if not total > 0:
        return None
    probabilities = tuple(sorted((value, mass / total) for value, mass in masses.items() if mass > 0))
    outcome = sum(value * p for value, p in probabilities)
    return LabelReading(min(1.0, max(0.0, outcome)), min(1.0, total), probabilities, incomplete)


def is_low_mass(reading: LabelReading, floor: float) -> bool:
    """Whether the labels got less than ``floor`` of the probability, or a label's mass is unknown (missing from a
    partial read); the verdict stands, the call is counted."""
    return reading.mass < floor or reading.incomplete


# One read: the continuation written so far (after the rendered prompt and the assistant turn's start) and what may
# come next; returns the probability of each next token, by its text (tokens with the same text summed). It may
# return only some tokens (an API's top 20, as PartialProbabilities): the labels missing from it have no mass, and
# the reading says so when that could matter.
ReadFn = Callable[[str, LabelTargets], Awaitable[Mapping[str, float]]]
FirstPieces = Callable[[LabelTargets], frozenset[str]]  # see LabelVocabulary.first_pieces


async def read_labels(
    read: ReadFn,
    continuation: str,
    targets: LabelTargets,
    first_pieces: FirstPieces | None = None,
    continuations: int = _MAX_CONTINUATIONS,
) -> LabelReading | None:
    """The verdict at the position after ``continuation``: one read, plus one read after each token that starts
    labels of different outcomes (the heaviest ``continuations`` of them with at least 1% of the probability; the
    mass of any other is dropped). None when no label got any mass. ``first_pieces``: the tokenizer's first pieces
    of the labels (see :func:`token_spellings`)."""
    missing: list[float] = []
    masses = await _outcome_masses(read, continuation, targets, first_pieces, continuations, missing)
    return reading_from_masses(masses, incomplete=bool(missing))


async def _outcome_masses(read, continuation, targets, first_pieces, budget, missing) -> dict[float, float]:
    """The mass of each outcome value at this position; the outcome values a partial read lacks (when their mass
    could reach :data:`_MISSING_LABEL_MASS`) are appended to ``missing``."""
    probabilities = await read(continuation, targets)
    pieces = first_pieces(targets) if first_pieces is not None else None
    masses: dict[float, float] = {}
    pending: dict[LabelTargets, list] = {}  # ambiguous tokens, grouped by what may follow them
    for token, probability in probabilities.items():
        if not probability > 0:
            continue
        found = token_spellings(token, targets, pieces)
        values = {value for _, value in found}
        if len(values) == 1:
            (value,) = values
            masses[value] = masses.get(value, 0.0) + float(probability)
        elif values:
            after = LabelTargets(tuple(sorted(set(found))), targets.ignore_case, first=False)
            group = pending.setdefault(after, [0.0, token, 0.0])  # mass, heaviest token, its probability
            group[0] += float(probability)
            if probability > group[2]:
                group[1], group[2] = token, float(probability)
    if isinstance(probabilities, PartialProbabilities) and probabilities.bound >= _MISSING_LABEL_MASS:
        seen = set(masses) | {value for after in pending for _, value in after.spellings}
        missing.extend(sorted({value for _, value in targets.spellings} - seen))
    heaviest = sorted(pending.items(), key=lambda item: -item[1][0])[:budget]
    for after, (mass, token, _) in heaviest:
        if mass < _MIN_CONTINUED_MASS:
            break
        inner = await _outcome_masses(read, continuation + token, after, first_pieces, 0, missing)
        total = sum(inner.values())
        if total > 0:
            for value, share in inner.items():
                masses[value] = masses.get(value, 0.0) + mass * share / total
    return masses


def verdict_continuation(reasoning: str, parse: Callable[[str], object]) -> str:
    """The assistant turn to read the verdict after, once a judge has reasoned (``think_first``). A reply that ends
    with a verdict (``parse`` finds one) is cut right before that verdict's label; any other is kept whole, its
    reasoning closed if a ``<think>`` was left open (the token limit cut it), then a new line and ``[[``."""
    if parse(reasoning) is not None:
        return reasoning[: reasoning.rfind(VERDICT_PREFIX)] + VERDICT_PREFIX
    text = reasoning.rstrip()
    if strip_reasoning(text) is None:
        text += "\n</think>"
    return (text + "\n\n" if text else "") + VERDICT_PREFIX


class LabelVocabulary:
    """A tokenizer's single tokens as text (decoded once), how it starts each label (:meth:`first_pieces`), and the
    ids of the tokens that may write a label (:meth:`token_ids`): the ids a backend asks the probabilities of
    (vLLM's ``logprob_token_ids``, a gather over transformers' logits)."""

    max_ids = 128  # vLLM's limit on logprob_token_ids (MAX_LOGPROB_TOKEN_IDS)

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        special = set(getattr(tokenizer, "all_special_ids", ()) or ())
        self.texts = [tokenizer.decode([i]) if i not in special else "" for i in range(len(tokenizer))]
        self._ids: dict[LabelTargets, tuple[int, ...]] = {}
        self._pieces: dict[LabelTargets, frozenset[str]] = {}

    def first_pieces(self, targets: LabelTargets) -> frozenset[str]:
        """The first token of each label the tokenizer writes in several tokens, in every spelling the verdict
        parser reads (upper, lower and capitalised case where case is ignored; with a leading space at the verdict's
        first position)."""
        if targets not in self._pieces:
            pieces = set()
            for spelling, _ in targets.spellings:
                if not spelling:
                    continue
                variants = {spelling}
                if targets.ignore_case:
                    variants |= {spelling.upper(), spelling.lower(), spelling.capitalize()}
                if targets.first:
                    variants |= {" " + v for v in variants}
                for variant in variants:
                    ids = self.tokenizer.encode(variant, add_special_tokens=False)
                    if len(ids) > 1 and 0 <= ids[0] < len(self.texts):
                        pieces.add(self.texts[ids[0]])
            self._pieces[targets] = frozenset(pieces)
        return self._pieces[targets]

    def token_ids(self, targets: LabelTargets) -> tuple[int, ...]:
        """The ids of the tokens consistent with a label of ``targets``, complete labels first, then the shortest
        texts (at most :attr:`max_ids`)."""
        if targets not in self._ids:
            pieces = self.first_pieces(targets)
            found = [
                (i, token_spellings(text, targets, pieces)) for i, text in enumerate(self.texts) if len(text) <= 16
            ]
            ranked = sorted(
                ((i, spellings) for i, spellings in found if spellings),
                key=lambda item: (min(len(left) for left, _ in item[1]), len(self.texts[item[0]].strip()), item[0]),
            )
            self._ids[targets] = tuple(i for i, _ in ranked[: self.max_ids])
        return self._ids[targets]

    def by_text(self, probabilities: Iterable[tuple[int, float]]) -> dict[str, float]:
        """Probabilities by token id as probabilities by token text (ids with the same text summed)."""
        out: dict[str, float] = {}
        for token_id, probability in probabilities:
            if 0 <= token_id < len(self.texts):
                text = self.texts[token_id]
                out[text] = out.get(text, 0.0) + float(probability)
        return out
