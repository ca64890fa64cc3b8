"""A judge ensemble's per-member figures: what each member said in a group's tournament, against the ensemble's
combined verdicts and on its own (its calls, failures, first-position preference, agreement with the ensemble, and
the certainty its verdicts alone would give the group). Pure: numpy and the core's tournament only.

Counter keys are ``judge_member/<name>/<counter>``; :func:`member_metrics` turns them into the tracker's
``arena/judge_member/<name>/*`` figures (docs/metrics.md)."""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MEMBER_PREFIX",
    "MEMBER_COUNTERS",
    "MemberCall",
    "member_counts",
    "group_member_counts",
    "member_metrics",
    "is_member_counter",
]

logger = logging.getLogger(__name__)

MEMBER_PREFIX = "judge_member/"
# calls: comparisons it was asked in; failures: of them, without its verdict; decided / first_won: its verdicts that
# were not a tie, and the sum of their outcomes (the first-shown trace's share; hard verdicts: a count of wins);
# compared / agreed: its verdicts where the ensemble gave one too, and those on the ensemble's side (both ties, or
# both for the same trace); certainty_sum / certainty_groups: the certainty of its verdicts alone, per routed group.
MEMBER_COUNTERS = (
    "calls",
    "failures",
    "decided",
    "first_won",
    "compared",
    "agreed",
    "certainty_sum",
    "certainty_groups",
)

# (first, second, the ensemble's outcome or None, each asked member's outcome or None)
MemberCall = tuple[int, int, "float | None", Mapping[str, "float | None"]]


def is_member_counter(key: str) -> bool:
    return key.startswith(MEMBER_PREFIX) and key.rsplit("/", 1)[-1] in MEMBER_COUNTERS


def member_counts(
    num_items: int,
    calls: Iterable[MemberCall],
    *,
    routed: bool,
    l2: float,
    order_effect: bool,
    mirror: bool = False,
    failure_as_tie: bool = True,
) -> collections.Counter[str]:
    """The per-member counters of one group's ensemble calls. Calls and failures count always (calls are spent
    whatever the group's route); the verdict figures count in a routed group only, as the ensemble's own position and
    certainty figures do, so that member and ensemble are compared on the same groups. A member's certainty is
    :func:`group_certainty` of the group's fit on that member's verdicts alone (``l2``, ``order_effect``, ``mirror``
    and a failed call as a tie, ``failure_as_tie``, as the tournament fits the ensemble's): every member asked in a
    routed group counts the group, a member without a verdict in it with certainty 0."""
    # Here, not at the top: the tracker reads this module's figures without the tournament (and its asyncio runner).
    from arena_verl.core.tournament.bradley_terry import fit_bradley_terry
    from arena_verl.core.tournament.certainty import group_certainty
    from arena_verl.core.tournament.order import mirror as mirrored

    counts: collections.Counter[str] = collections.Counter()
    own: dict[str, list[tuple[int, int, float]]] = {}
    for first, second, combined, members in calls:
        for name, outcome in members.items():
            own.setdefault(name, [])
            key = f"{MEMBER_PREFIX}{name}/"
            counts[key + "calls"] += 1
            if outcome is None:
                counts[key + "failures"] += 1
                own[name] += [(first, second, 0.5)] if failure_as_tie else []  # as the tournament counts it
                continue
            own[name].append((first, second, float(outcome)))
            if not routed:
                continue
            if outcome != 0.5:  # soft outcomes: their weight, as position_figures counts the ensemble's
                counts[key + "decided"] += 1
                counts[key + "first_won"] += float(outcome)
            if combined is not None:
                counts[key + "compared"] += 1
                counts[key + "agreed"] += _side(outcome) == _side(combined)
    if routed:
        for name, comparisons in own.items():
            key = f"{MEMBER_PREFIX}{name}/"
            counts[key + "certainty_groups"] += 1
            if not comparisons:
                continue  # no verdict of its own in this group: certainty 0
            data = mirrored(comparisons) if mirror else comparisons
            strengths, bias = fit_bradley_terry(
                num_items, data, l2=l2, order_effect=order_effect, return_order_effect=True
            )
            counts[key + "certainty_sum"] += group_certainty(num_items, comparisons, strengths, bias)
    return counts


def group_member_counts(group: Any, tournament: Any, routed: bool) -> collections.Counter[str]:
    """:func:`member_counts` of a referee's group (its ``member_calls``), fitted as ``tournament`` (the
    :class:`~arena_verl.core.options.TournamentOptions`) fits; a figure never fails a group's answer (logged, empty)."""
    try:
        return member_counts(
            group.size,
            group.member_calls,
            routed=routed,
            l2=tournament.l2,
            order_effect=tournament.order_effect,
            mirror=tournament.mirror_augment,
            failure_as_tie=tournament.on_judge_failure == "tie",
        )
    except Exception as exc:  # noqa: BLE001
        logger.warning("group %s: per-member judge figures failed (%r)", group.uid, exc)
        return collections.Counter()


def _side(outcome: float) -> int:
    return (outcome > 0.5) - (outcome < 0.5)


def member_metrics(counts: Mapping[str, float]) -> dict[str, float]:
    """``arena/judge_member/<name>/<counter>`` for each member counter, and the figures a user watches:
    ``failure_share`` (of its calls), ``first_position_win_share`` (of its decided verdicts), ``agreement`` (with the
    ensemble's verdict) and ``certainty`` (its verdicts' alone, per routed group: the ensemble's is
    ``arena/certainty``, on the same groups). A ratio without a denominator is left out."""
    out: dict[str, float] = {}
    names = sorted({key[len(MEMBER_PREFIX) :].rsplit("/", 1)[0] for key in counts if is_member_counter(key)})
    for name in names:
        value = {counter: float(counts.get(f"{MEMBER_PREFIX}{name}/{counter}", 0.0)) for counter in MEMBER_COUNTERS}
        prefix = f"arena/{MEMBER_PREFIX}{name}/"
        out.update({prefix + counter: v for counter, v in value.items()})
        for figure, numerator, denominator in (
            ("failure_share", "failures", "calls"),
            ("first_position_win_share", "first_won", "decided"),
            ("agreement", "agreed", "compared"),
            ("certainty", "certainty_sum", "certainty_groups"),
        ):
            if value[denominator]:
                out[prefix + figure] = value[numerator] / value[denominator]
    return out
