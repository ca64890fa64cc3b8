"""The audit's figures (arena_verl/evaluation/audit.py) on hand-built pairs: each definition, checked exactly, and a
figure without data is None."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from arena_verl.evaluation.audit import (
    FIGURE_KEYS,
    LABELLED,
    SAME_OUTCOME,
    AuditedPair,
    audit_figures,
    order_flip_rate,
    preferred,
    transitivity_violations,
)


def labelled(o_first, o_second, **fields) -> AuditedPair:
    return AuditedPair(LABELLED, 0, 1, (o_first, o_second), **fields)


def same(first, second, o_first, o_second, triple="t") -> AuditedPair:
    return AuditedPair(SAME_OUTCOME, first, second, (o_first, o_second), triple)


def test_no_pair_gives_zero_counts_and_no_other_figure():
    figures = audit_figures([])
    assert list(figures) == list(FIGURE_KEYS)
    counts = ("pairs_labelled", "pairs_same_outcome", "calls", "calls_without_verdict", "calls_low_mass")
    assert all(figures[key] == 0 and type(figures[key]) is int for key in counts)
    assert all(figures[key] is None for key in FIGURE_KEYS if key not in counts)
    assert "NaN" not in json.dumps(figures)


def test_the_figures_are_one_list_with_their_meanings():
    """summary.json's figures and the report's table are one list (FIGURES: key and meaning, in order); nothing
    else in the audit tool lists them."""
    import inspect

    import arena_verl.tools.audit.report as report
    from arena_verl.evaluation.audit import FIGURES

    assert tuple(FIGURES) == FIGURE_KEYS and all(isinstance(m, str) and m for m in FIGURES.values())
    assert sorted(audit_figures([])) == sorted(FIGURE_KEYS)
    source = inspect.getsource(report)
    assert not [key for key in FIGURE_KEYS if f'"{key}":' in source]  # no second table of figures in the report


def test_accuracy_weighs_both_orders_alike_whatever_fails():
    pairs = [labelled(1.0, 0.0), labelled(0.75, None), labelled(0.5, None), labelled(None, 0.25)]
    figures = audit_figures(pairs)
    assert figures["accuracy_first_order"] == float(Fraction(9, 4) / 3)  # (1 + 0.75 + 0.5) / 3
    assert figures["accuracy_second_order"] == float(Fraction(7, 4) / 2)  # (1 - 0) and (1 - 0.25)
    assert figures["accuracy"] == (figures["accuracy_first_order"] + figures["accuracy_second_order"]) / 2
    assert figures["calls_without_verdict"] == 3


def test_accuracy_needs_a_verdict_in_each_order():
    figures = audit_figures([labelled(1.0, None), labelled(1.0, None)])
    assert figures["accuracy_first_order"] == 1.0
    assert figures["accuracy_second_order"] is None and figures["accuracy"] is None


def test_accuracy_standard_error_is_over_pairs_decided_in_both_orders():
    # Two-order means 1, 0.5, 0 (and a pair missing an order, left out): sd 0.5, se 0.5 / sqrt(3)
    pairs = [labelled(1.0, 0.0), labelled(1.0, 1.0), labelled(0.0, 1.0), labelled(1.0, None)]
    assert audit_figures(pairs)["accuracy_se"] == pytest.approx(0.5 / 3**0.5)
    assert audit_figures([labelled(1.0, 0.0), labelled(0.0, None)])["accuracy_se"] is None  # one pair: no spread
    assert audit_figures([labelled(1.0, 0.0)] * 5)["accuracy_se"] == 0.0


def test_a_judge_that_always_prefers_the_first_shown_trace():
    pairs = [labelled(1.0, 1.0), labelled(1.0, 1.0), same(0, 1, 1.0, 1.0), same(0, 2, 1.0, 1.0), same(1, 2, 1.0, 1.0)]
    figures = audit_figures(pairs)
    assert (figures["accuracy_first_order"], figures["accuracy_second_order"], figures["accuracy"]) == (1.0, 0.0, 0.5)
    assert figures["first_position_preference"] == 1.0
    assert figures["order_flip_rate"] == 1.0
    assert figures["tie_rate"] == 0.0
    assert figures["transitivity_violations"] == 0.0  # each pair's two calls cancel: ties, no cycle


def test_a_preference_that_becomes_a_tie_is_a_flip_and_two_ties_are_not():
    assert preferred(labelled(0.75, 0.5)) == (0, None)
    assert preferred(labelled(0.75, 0.25)) == (0, 0)  # second order: trace 1 shown first and losing
    assert order_flip_rate([labelled(0.75, 0.5)]) == 1.0
    assert order_flip_rate([labelled(0.5, 0.5)]) == 0.0
    assert order_flip_rate([labelled(0.75, 0.25), labelled(0.75, 0.75), labelled(None, 0.75)]) == 0.5


def test_a_cycle_counts_and_a_tie_or_an_incomplete_triple_does_not():
    cycle = [same(0, 1, 1.0, 0.0, "c"), same(1, 2, 1.0, 0.0, "c"), same(0, 2, 0.0, 1.0, "c")]  # 0>1, 1>2, 2>0
    chain = [same(0, 1, 1.0, 0.0, "o"), same(1, 2, 1.0, 0.0, "o"), same(0, 2, 1.0, 0.0, "o")]  # 0>1>2, 0>2
    tied = [same(0, 1, 1.0, 0.0, "t"), same(1, 2, 1.0, 0.0, "t"), same(0, 2, 0.5, 0.5, "t")]
    cut = [same(0, 1, 1.0, 0.0, "x"), same(1, 2, 1.0, 0.0, "x")]  # the third pair was cut by --max-pairs
    failed = [same(0, 1, 1.0, 0.0, "f"), same(1, 2, 1.0, None, "f"), same(0, 2, 0.0, 1.0, "f")]
    assert transitivity_violations(cycle) == 1.0
    assert transitivity_violations(chain + tied) == 0.0
    assert transitivity_violations(cycle + chain + tied + cut + failed) == float(Fraction(1, 3))
    assert transitivity_violations(cut + failed) is None


def test_soft_outcomes_decide_a_pair_by_its_two_calls():
    # (0.625 + 1 - 0.5) / 2 > 0.5: trace 0 over 1, although the second order is a tie
    cycle = [same(0, 1, 0.625, 0.5, "s"), same(1, 2, 0.75, 0.625, "s"), same(0, 2, 0.25, 0.375, "s")]
    assert transitivity_violations(cycle) == 1.0
    figures = audit_figures(cycle)
    assert figures["first_position_preference"] == float(Fraction(3125, 1000) / 6)
    assert figures["tie_rate"] == float(Fraction(1, 6))


def test_cost_figures_are_means_over_the_calls_that_measured_them():
    pairs = [
        labelled(1.0, 0.0, tokens_in=(10, 12), tokens_out=(None, 4), seconds=(0.5, 0.25), low_mass=(1, 0)),
        labelled(None, 0.0, tokens_in=(None, None), tokens_out=(None, None), seconds=(1.0, 0.25), low_mass=(0, 2)),
    ]
    figures = audit_figures(pairs)
    assert figures["tokens_in_per_call"] == 11.0
    assert figures["tokens_out_per_call"] == 4.0
    assert figures["seconds_per_call"] == 0.5
    assert figures["calls_low_mass"] == 2  # calls, not increments


@pytest.mark.parametrize("kind", [LABELLED, SAME_OUTCOME])
def test_pairs_are_counted_by_kind(kind):
    figures = audit_figures([AuditedPair(kind, 0, 1, (1.0, 0.0))] * 3)
    assert figures["pairs_labelled"] == (3 if kind == LABELLED else 0)
    assert figures["pairs_same_outcome"] == (3 if kind == SAME_OUTCOME else 0)
    assert figures["calls"] == 6
