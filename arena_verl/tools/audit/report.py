"""The audit's report folder: ``summary.json``, one PNG per plot and ``index.html``, drawn and written as
``arena-verl analyze``'s report is (:mod:`arena_verl.tools.common.html_report`: the same page style, the same
matplotlib defaults, every file whole or not at all)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.core.errors import write_output
from arena_verl.evaluation.audit import FIGURES, LABELLED, SAME_OUTCOME, AuditedPair
from arena_verl.evaluation.tables import number, percent
from arena_verl.tools.common.html_report import ALL_CORRECT, ALL_INCORRECT, STYLE, draw_all, html_table, legend

__all__ = ["PLOTS", "write_report"]

_FIRST_ORDER, _SECOND_ORDER = "#264653", "#e9c46a"
_BINS = np.linspace(-0.05, 1.05, 12)  # one bin per tenth, centred on 0, 0.1, ..., 1: 0, 0.5 and 1 fall apart

_SHARES = {
    "accuracy",
    "accuracy_se",
    "accuracy_first_order",
    "accuracy_second_order",
    "agreement_with_ensemble",
    "first_position_preference",
    "order_flip_rate",
    "tie_rate",
    "transitivity_violations",
}


def write_report(summary: dict[str, Any], pairs: list[AuditedPair], out: str | Path, inputs: dict[str, Any]) -> Path:
    """Write ``summary.json``, the plots and ``index.html`` into ``out``; returns the page's path. A file that cannot
    be written is an :class:`~arena_verl.core.errors.InputError` naming it."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, and the same pixels everywhere
    out = Path(out)
    text = json.dumps(summary, indent=2, allow_nan=False) + "\n"  # a figure without data is null, never NaN
    write_output(out / "summary.json", text, what="summary")
    figures = draw_all(PLOTS, summary, pairs, out)
    page = out / "index.html"
    write_output(page, _page(summary, figures, inputs), what="report page")
    return page


# --------------------------------------------------------------------------------------------------------- plots


def _labelled_outcomes(axes, _summary, pairs: list[AuditedPair]) -> bool:
    labelled = [p for p in pairs if p.kind == LABELLED]
    shown_first = [p.outcomes[0] for p in labelled if p.outcomes[0] is not None]
    shown_second = [1.0 - p.outcomes[1] for p in labelled if p.outcomes[1] is not None]
    if not shown_first and not shown_second:
        return False
    _histogram(axes, shown_first, shown_second, "correct trace\nshown first", "correct trace\nshown second")
    axes.set_xlabel("probability the judge gave to the verified-correct trace")
    axes.set_title("Labelled pairs: the judge's verdicts, by presentation order")
    return True


def _same_outcome_outcomes(axes, _summary, pairs: list[AuditedPair]) -> bool:
    same = [p for p in pairs if p.kind == SAME_OUTCOME]
    first = [p.outcomes[0] for p in same if p.outcomes[0] is not None]
    second = [p.outcomes[1] for p in same if p.outcomes[1] is not None]
    if not first and not second:
        return False
    _histogram(axes, first, second, "first order", "second order\n(swapped)")
    axes.set_xlabel("P(the trace shown first is better)")
    axes.set_title("Same-outcome pairs: the judge's verdicts, by presentation order")
    return True


def _by_order(axes, summary: dict, _pairs) -> bool:
    bars = [
        ("correct shown first", summary["accuracy_first_order"], _FIRST_ORDER),
        ("correct shown second", summary["accuracy_second_order"], _SECOND_ORDER),
        ("accuracy (both orders)", summary["accuracy"], ALL_CORRECT),
        ("first-position preference\n(all calls)", summary["first_position_preference"], ALL_INCORRECT),
    ]
    bars = [(label, value, color) for label, value, color in bars if value is not None]
    if not bars:
        return False
    x = np.arange(len(bars))
    axes.bar(x, [100 * value for _, value, _ in bars], 0.6, color=[color for _, _, color in bars])
    axes.axhline(50, color="#5c6b7a", linestyle="--", linewidth=1, label="50%: chance,\nno position bias")
    axes.set_xticks(x, [label for label, _, _ in bars])
    axes.set_ylim(0, 100)
    axes.set_ylabel("%")
    axes.set_title("Accuracy by presentation order, and position bias")
    legend(axes)
    return True


def _histogram(axes, first: list[float], second: list[float], first_label: str, second_label: str) -> None:
    width = 0.04
    centres = (_BINS[:-1] + _BINS[1:]) / 2
    for values, shift, color, label in (
        (first, -width / 2, _FIRST_ORDER, first_label),
        (second, width / 2, _SECOND_ORDER, second_label),
    ):
        counts, _ = np.histogram(values, bins=_BINS)
        axes.bar(centres + shift, counts, width, color=color, label=f"{label}\n({len(values)} calls)")
    axes.set_xticks(np.linspace(0, 1, 11))
    axes.set_ylabel("calls")
    legend(axes)


# (file name without .png) -> (caption, plot): the page shows them in this order; a plot without data is left out.
PLOTS = {
    "labelled_outcomes": (
        "Labelled pairs (a verified-correct and a verified-incorrect trace of one prompt): the probability each call "
        "gave to the correct trace, with the correct trace shown first and shown second. A good judge puts its mass "
        "near 1 in both orders; a judge led by position moves it with the order.",
        _labelled_outcomes,
    ),
    "same_outcome_outcomes": (
        "Same-outcome pairs (both traces verified alike, as in the groups the arena routes to the judge): P(the "
        "trace shown first is better) of each call, in each presentation order. Without position bias the two "
        "orders mirror each other around 0.5.",
        _same_outcome_outcomes,
    ),
    "by_order": (
        "Accuracy on labelled pairs with the correct trace shown first, shown second, and both weighing alike; "
        "first-position preference over every call (50% for a judge without position bias).",
        _by_order,
    ),
}


# ---------------------------------------------------------------------------------------------------------- page


def _value(key: str, value: Any) -> str:
    if key in _SHARES:
        return percent(value)
    return number(value, 1 if key.startswith("tokens") else 3)


def _page(summary: dict, figures: list[tuple[str, str]], inputs: dict[str, Any]) -> str:
    shown_inputs = " · ".join(
        f"{html.escape(name)}: <code>{html.escape(', '.join(map(str, v)) if isinstance(v, list) else str(v))}</code>"
        for name, v in inputs.items()
        if v not in (None, [], "")
    )
    rows = [[key, _value(key, summary[key]), meaning] for key, meaning in FIGURES.items()]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>arena-verl audit-judge</title>",
        f"<style>{STYLE} td:last-child {{ text-align: left; }}</style></head><body>",
        "<h1>Judge audit</h1>",
        f"<p class='inputs'>{shown_inputs}</p>",
        f"<p class='headline'>{_headline(summary)}</p>",
    ]
    notes = summary.get("run", {}).get("notes", [])
    if notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts += ["<h2>Figures</h2>", html_table(["summary.json key", "value", "meaning"], rows)]
    parts += _members_section(summary.get("members"))
    for file, caption in figures:
        parts.append(f"<figure><img src='{file}' alt='{html.escape(caption)}'><figcaption>{html.escape(caption)}")
        parts.append("</figcaption></figure>")
    parts += [
        "<p class='inputs'>A figure without data reads - (null in <code>summary.json</code>). The definitions are in "
        "<code>arena_verl/evaluation/audit.py</code> and docs/tools.md.</p>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


_MEMBER_COLUMNS = (
    "accuracy",
    "accuracy_se",
    "first_position_preference",
    "order_flip_rate",
    "tie_rate",
    "transitivity_violations",
    "calls_without_verdict",
    "agreement_with_ensemble",
)


def _members_section(members: dict | None) -> list[str]:
    """A judge ensemble: each member alone on the same pairs, and the agreement between members."""
    if not members:
        return []
    alone = members["alone"]
    rows = [[name] + [_value(key, figures.get(key)) for key in _MEMBER_COLUMNS] for name, figures in alone.items()]
    between = [[which, percent(share)] for which, share in members.get("between", {}).items()]
    return [
        "<h2>Ensemble members, each alone on the same pairs</h2>",
        html_table(["member", *_MEMBER_COLUMNS], rows),
        "<p class='inputs'>The figures above are the ensemble's (its combined verdicts). Agreement: the share of calls "
        "both answered on the same side (a tie is a side).</p>",
        html_table(["members", "agreement"], between) if between else "",
    ]


def _headline(s: dict) -> str:
    judge = html.escape(str(s["judge"]))
    who = f"<b>{judge}</b>" + (" (the SIMULATED judge: no model reads the traces)" if s.get("simulated") else "")
    text = (
        f"{who}, verdict <code>{html.escape(str(s['verdict']))}</code>: {s['pairs_labelled']} labelled and "
        f"{s['pairs_same_outcome']} same-outcome pairs, {s['calls']} calls ({s['calls_without_verdict']} without a "
        f"verdict, {s['calls_low_mass']} low-mass)."
    )
    if s["accuracy"] is not None:
        text += f" Accuracy <b>{percent(s['accuracy'])}</b> (50% is chance)."
    if s["first_position_preference"] is not None:
        text += f" First-position preference {percent(s['first_position_preference'])}."
    return text
