"""The figures of a judge audit (``arena-verl audit-judge``): how good a pairwise judge is, from pairs of traces each
judged in both presentation orders. Pure Python: no judge, no dump, no I/O.

Each pair ``(a, b)`` is judged twice: in its *first order* (``a`` shown first) and in its *second order* (``b`` shown
first). A call's outcome ``o`` is the judge's P(the trace shown first is better), in [0, 1] (a hard verdict is 0, 0.5
or 1; a probability verdict any number in between), or None: a call without a verdict. Two kinds of pair:

- **labelled** (from a diverse group): ``a`` is a verified-correct trace, ``b`` a verified-incorrect one of the same
  prompt, so the probability a call gives to the correct trace is ``o`` in the first order and ``1 - o`` in the
  second;
- **same-outcome** (from a non-diverse group: both traces verified alike, the pairs the arena's judge ranks), taken as
  the three pairs of triples of traces, so that transitivity can be checked.

==========================  ===========================================================================================
figure                      definition (None when nothing defines it: no pair, or no call with a verdict where needed)
==========================  ===========================================================================================
pairs_labelled, ...         pairs of each kind; ``calls`` = 2 x pairs; ``calls_without_verdict``: outcome None;
                            ``calls_low_mass``: calls the judge counted as low-mass (probability verdicts whose labels
                            got less than the judge's floor; they still have their verdict)
accuracy_first_order        labelled pairs, correct trace shown first: the mean of ``o`` over those calls with a verdict
accuracy_second_order       correct trace shown second: the mean of ``1 - o`` over those calls with a verdict
accuracy                    the mean of the two (both orders weigh alike, so position bias cancels); None unless both
                            orders have a verdict. A judge that always prefers the first-shown trace scores 0.5, an
                            oracle 1, a judge that always prefers the incorrect trace 0
accuracy_se                 the standard error of the accuracy over labelled pairs: the sample standard deviation of
                            each pair's two-order mean (``(o_first + 1 - o_second) / 2``, pairs decided in both
                            orders) over the square root of their number; None below two such pairs
first_position_preference   the mean of ``o`` over every call with a verdict, both kinds and orders: 0.5 for a judge
                            without position bias, 1 for one that always prefers the first-shown trace
order_flip_rate             over pairs with a verdict in both orders: the share whose preferred trace (``a``, ``b``, or
                            neither on an outcome of exactly 0.5) differs between the orders
tie_rate                    the share of calls with a verdict whose outcome is exactly 0.5
transitivity_violations     over judged triples (same-outcome triples whose three pairs all have a verdict in both
                            orders): the share that form a cycle (x over y, y over z, z over x). A pair's preference is
                            its two calls' mean probability for ``a``, ``(o_first + 1 - o_second) / 2``: ``a`` is
                            preferred when ``o_first > o_second``, ``b`` when ``o_first < o_second``; a tie breaks a
                            cycle
tokens_in_per_call, ...     the mean over the calls that measured it (prompt tokens, generated tokens, the prompt
                            tokens the judge's engine reported and those it served from its prefix cache, wall-clock
                            seconds); None when no call did (a judge that reads no tokens, an engine that reports none)
==========================  ===========================================================================================
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "FIGURE_KEYS",
    "FIGURES",
    "LABELLED",
    "PAIR_KINDS",
    "SAME_OUTCOME",
    "AuditedPair",
    "accuracies",
    "audit_figures",
    "first_position_preference",
    "member_figures",
    "order_flip_rate",
    "preferred",
    "tie_rate",
    "transitivity_violations",
]

LABELLED, SAME_OUTCOME = "labelled", "same_outcome"
PAIR_KINDS = (LABELLED, SAME_OUTCOME)
# summary.json's figures, in its order (the command adds ``judge`` and ``verdict``), each with what the report's
# table says of it; the definitions are in the module docstring.
FIGURES = {
    "pairs_labelled": "pairs of a verified-correct and a verified-incorrect trace of one prompt (diverse groups)",
    "pairs_same_outcome": "pairs of traces verified alike (non-diverse groups: the pairs the arena's judge ranks)",
    "calls": "judge calls: every pair in both presentation orders",
    "calls_without_verdict": "calls that gave no verdict (unparsable, an error, a timeout, an invalid outcome)",
    "calls_low_mass": "probability verdicts whose labels got less than the floor of their mass (still answered)",
    "accuracy": "mean probability given to the verified-correct trace, both orders weighing alike",
    "accuracy_se": "its standard error over labelled pairs (each pair's two-order mean one value)",
    "accuracy_first_order": "the same, the correct trace shown first",
    "accuracy_second_order": "the same, the correct trace shown second",
    "first_position_preference": "mean P(first shown is better) over every call with a verdict (0.5: no bias)",
    "order_flip_rate": "pairs whose preferred trace changes when the order is swapped (verdicts in both orders)",
    "tie_rate": "calls with a verdict of exactly 0.5",
    "transitivity_violations": "same-outcome triples whose order-averaged preferences form a cycle",
    "tokens_in_per_call": "prompt tokens per call",
    "tokens_out_per_call": "generated tokens per call",
    "prompt_tokens_per_call": "prompt tokens per call as the judge's engine counted them (re-asks included)",
    "cached_tokens_per_call": "of those, tokens per call the engine served from its prefix cache",
    "seconds_per_call": "wall-clock seconds per call (calls in flight: --concurrency)",
}
FIGURE_KEYS = tuple(FIGURES)
TIE = 0.5


@dataclass(frozen=True)
class AuditedPair:
    """One pair, judged in both orders. Per-call fields are ``(first order, second order)``.

    ``first`` and ``second`` name the two traces within their group (``first`` is shown first in the first order; in
    a labelled pair it is the correct trace); ``triple`` names the same-outcome triple the pair belongs to, unique
    among the pairs given (None: none).
    """

    kind: str
    first: int
    second: int
    outcomes: tuple[float | None, float | None]
    triple: str | None = None
    low_mass: tuple[int, int] = (0, 0)
    tokens_in: tuple[int | None, int | None] = (None, None)
    tokens_out: tuple[int | None, int | None] = (None, None)
    seconds: tuple[float | None, float | None] = (None, None)
    prompt_tokens: tuple[int | None, int | None] = (None, None)  # as the judge's engine reported them
    cached_tokens: tuple[int | None, int | None] = (None, None)  # ... of them served from its prefix cache
    # A judge ensemble: each member's outcomes in the two orders (a member not asked in a call: null there).
    members: dict[str, tuple[float | None, float | None]] | None = None

    @property
    def decided_both(self) -> bool:
        """Both orders have a verdict."""
        return self.outcomes[0] is not None and self.outcomes[1] is not None


def audit_figures(pairs: Iterable[AuditedPair]) -> dict[str, int | float | None]:
    """Every figure of :data:`FIGURE_KEYS` over ``pairs`` (definitions in the module docstring): counts as integers,
    the rest a float or None."""
    pairs = list(pairs)
    labelled = [p for p in pairs if p.kind == LABELLED]
    calls = [o for p in pairs for o in p.outcomes]
    first, second, both = accuracies(labelled)
    return {
        "pairs_labelled": len(labelled),
        "pairs_same_outcome": sum(p.kind == SAME_OUTCOME for p in pairs),
        "calls": len(calls),
        "calls_without_verdict": sum(o is None for o in calls),
        "calls_low_mass": sum(n > 0 for p in pairs for n in p.low_mass),
        "accuracy": both,
        "accuracy_se": accuracy_standard_error(labelled),
        "accuracy_first_order": first,
        "accuracy_second_order": second,
        "first_position_preference": first_position_preference(pairs),
        "order_flip_rate": order_flip_rate(pairs),
        "tie_rate": tie_rate(pairs),
        "transitivity_violations": transitivity_violations(pairs),
        "tokens_in_per_call": _mean(n for p in pairs for n in p.tokens_in),
        "tokens_out_per_call": _mean(n for p in pairs for n in p.tokens_out),
        "prompt_tokens_per_call": _mean(n for p in pairs for n in p.prompt_tokens),
        "cached_tokens_per_call": _mean(n for p in pairs for n in p.cached_tokens),
        "seconds_per_call": _mean(s for p in pairs for s in p.seconds),
    }


def accuracies(labelled: Sequence[AuditedPair]) -> tuple[float | None, float | None, float | None]:
    """``(accuracy_first_order, accuracy_second_order, accuracy)`` of labelled pairs (``first`` the correct trace):
    the mean probability given to the correct trace when it is shown first, when it is shown second, and the mean of
    the two (None unless both are defined)."""
    shown_first = _mean(p.outcomes[0] for p in labelled)
    shown_second = _mean(None if p.outcomes[1] is None else 1.0 - p.outcomes[1] for p in labelled)
    both = None if shown_first is None or shown_second is None else (shown_first + shown_second) / 2
    return shown_first, shown_second, both


def accuracy_standard_error(labelled: Sequence[AuditedPair]) -> float | None:
    """The standard error of the accuracy (see the module docstring): pairs decided in both orders, each one value."""
    values = [(p.outcomes[0] + 1.0 - p.outcomes[1]) / 2 for p in labelled if p.decided_both]
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return math.sqrt(variance / len(values))


def first_position_preference(pairs: Iterable[AuditedPair]) -> float | None:
    """The mean outcome (P(first shown is better)) over every call with a verdict."""
    return _mean(o for p in pairs for o in p.outcomes)


def tie_rate(pairs: Iterable[AuditedPair]) -> float | None:
    """The share of calls with a verdict whose outcome is exactly 0.5."""
    verdicts = [o for p in pairs for o in p.outcomes if o is not None]
    return sum(o == TIE for o in verdicts) / len(verdicts) if verdicts else None


def preferred(pair: AuditedPair) -> tuple[int | None, int | None]:
    """The trace each order prefers (``pair.first``, ``pair.second`` or None for exactly 0.5; None too for a call
    without a verdict). In the second order ``second`` is shown first, so an outcome above 0.5 prefers it."""
    o_first, o_second = pair.outcomes
    in_first = None if o_first is None or o_first == TIE else pair.first if o_first > TIE else pair.second
    in_second = None if o_second is None or o_second == TIE else pair.second if o_second > TIE else pair.first
    return in_first, in_second


def order_flip_rate(pairs: Iterable[AuditedPair]) -> float | None:
    """Over pairs with a verdict in both orders: the share whose preferred trace (or none, on exactly 0.5) differs
    between the two orders."""
    judged = [p for p in pairs if p.decided_both]
    if not judged:
        return None
    return sum(a != b for a, b in map(preferred, judged)) / len(judged)


def transitivity_violations(pairs: Iterable[AuditedPair]) -> float | None:
    """Over judged same-outcome triples (three pairs over three traces, each with a verdict in both orders): the
    share that form a cycle. A pair's winner is ``first`` when ``o_first > o_second`` (its two calls' mean probability
    for ``first``, ``(o_first + 1 - o_second) / 2``, is above 0.5), ``second`` when below, none when equal; three
    winners form a cycle when each trace wins exactly one of its two pairs."""
    triples: dict[str, list[AuditedPair]] = defaultdict(list)
    for pair in pairs:
        if pair.kind == SAME_OUTCOME and pair.triple is not None:
            triples[pair.triple].append(pair)
    judged = cycles = 0
    for members in triples.values():
        traces = {t for p in members for t in (p.first, p.second)}
        if len(members) != 3 or len(traces) != 3 or not all(p.decided_both for p in members):
            continue  # cut short by --max-pairs, or a call without a verdict
        judged += 1
        winners = [_pair_winner(p) for p in members]
        cycles += None not in winners and sorted(winners) == sorted(traces)
    return cycles / judged if judged else None


def _pair_winner(pair: AuditedPair) -> int | None:
    o_first, o_second = pair.outcomes
    if o_first == o_second:
        return None
    return pair.first if o_first > o_second else pair.second


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def member_figures(pairs: Sequence[AuditedPair]) -> dict[str, dict] | None:
    """A judge ensemble's members, each audited alone on the same pairs (:func:`audit_figures` of its own outcomes;
    ``agreement_with_ensemble``: its verdicts on the ensemble's side, where both gave one), as ``alone``, and
    ``between`` them: for each two members, the share of calls both answered where they took the same side (a tie is
    a side). None when no pair has member outcomes (a single judge)."""
    names = sorted({name for p in pairs if p.members for name in p.members})
    if not names:
        return None
    out: dict[str, dict[str, int | float | None]] = {}
    for name in names:
        alone = [dataclasses.replace(p, outcomes=_member_outcomes(p, name), members=None) for p in pairs]
        figures = {key: value for key, value in audit_figures(alone).items() if not key.endswith("_per_call")}
        figures["agreement_with_ensemble"] = _agreement(
            (mine, theirs) for p, a in zip(pairs, alone) for mine, theirs in zip(a.outcomes, p.outcomes)
        )
        out[name] = figures
    between: dict[str, float | None] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            between[f"{a} vs {b}"] = _agreement(
                pair for p in pairs for pair in zip(_member_outcomes(p, a), _member_outcomes(p, b))
            )
    return {"alone": out, "between": between}


def _member_outcomes(pair: AuditedPair, name: str) -> tuple[float | None, float | None]:
    return tuple((pair.members or {}).get(name, (None, None)))


def _agreement(outcome_pairs: Iterable[tuple[float | None, float | None]]) -> float | None:
    """The share of the pairs of outcomes, both given, on the same side of 0.5 (a tie is a side); None: no such pair."""
    both = [(a, b) for a, b in outcome_pairs if a is not None and b is not None]
    if not both:
        return None
    return sum(_side(a) == _side(b) for a, b in both) / len(both)


def _side(outcome: float) -> int:
    return (outcome > 0.5) - (outcome < 0.5)
