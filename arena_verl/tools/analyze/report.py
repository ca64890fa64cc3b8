"""The report folder: ``summary.json``, one PNG per plot (matplotlib, Agg backend) and ``index.html``, a
self-contained page (inline style, no script, no network) that shows the plots and the tables of the summary; drawn
and written with :mod:`arena_verl.tools.common.html_report`, as the audit's report is."""

from __future__ import annotations

import html
import json
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.core.errors import write_output
from arena_verl.evaluation.groups import Group
from arena_verl.evaluation.tables import number, percent
from arena_verl.tools.common.html_report import (
    ALL_CORRECT,
    ALL_INCORRECT,
    MIXED,
    STYLE,
    UNVERIFIED,
    draw_all,
    html_table,
    legend,
)

__all__ = ["PLOTS", "write_report"]

_MAX_SOURCES = 30  # data sources drawn (most groups first); the page's table has them all
_LABEL_CHARS = 48  # a longer name is cut in a plot (the page's table shows it whole)


def write_report(summary: dict[str, Any], groups: list[Group], out: str | Path, inputs: dict[str, Any]) -> Path:
    """Write ``summary.json``, the plots and ``index.html`` into ``out``; returns the page's path.

    ``inputs`` (the dump, data and metrics paths) is shown at the top of the page. Each file is written whole or
    not at all; a folder that cannot be written is an :class:`InputError` naming the file.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, and the same pixels everywhere
    out = Path(out)
    write_output(out / "summary.json", json.dumps(summary, indent=2) + "\n", what="summary")
    figures = draw_all(PLOTS, summary, groups, out, fit_to_labels=("data_sources",))  # long source names
    page = out / "index.html"
    write_output(page, _page(summary, figures, inputs), what="report page")
    return page


def literal(text: str, limit: int = _LABEL_CHARS) -> str:
    """``text`` as a plot label: control characters (newlines too) shown as escapes, cut to ``limit`` characters.
    Drawn with ``parse_math=False`` (and no TeX), so ``$`` is a dollar sign, never math text."""
    shown = "".join(
        ch if unicodedata.category(ch)[0] != "C" else ch.encode("unicode_escape").decode("ascii") for ch in str(text)
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------------------- plots


def _step_axis(axes, steps: list[dict]) -> tuple[np.ndarray, float]:
    x = np.array([s["step"] for s in steps], dtype=float)
    width = 0.8 * (float(np.min(np.diff(x))) if len(x) > 1 else 1.0)
    axes.set_xlabel("training step")
    if len(x) <= 20:
        axes.set_xticks(x)
    return x, width


def _alpha(axes, summary: dict, _groups) -> bool:
    steps = [s for s in summary["steps"] if s["groups"]]
    if not steps:
        return False
    x, width = _step_axis(axes, steps)
    correct = np.array([100 * s["all_correct"] / s["groups"] for s in steps])
    incorrect = np.array([100 * s["all_incorrect"] / s["groups"] for s in steps])
    axes.bar(x, correct, width, color=ALL_CORRECT, label="all correct")
    axes.bar(x, incorrect, width, bottom=correct, color=ALL_INCORRECT, label="all incorrect")
    axes.set_ylabel("% of groups")
    axes.set_ylim(0, 100)
    axes.set_title("Non-diverse groups per step (alpha)")
    legend(axes)
    return True


def _zero_advantage(axes, summary: dict, _groups) -> bool:
    steps = [s for s in summary["steps"] if s["samples"]]
    if not steps:
        return False
    x, width = _step_axis(axes, steps)
    rlvr = [100 * s["zero_advantage_share_rlvr"] for s in steps]
    dumped = [100 * s["zero_advantage_share_dumped"] for s in steps]
    axes.bar(x, rlvr, width, color=MIXED, label="under RLVR\n(verifier rewards)")
    axes.bar(x, dumped, width * 0.5, color="#264653", label="under the dumped\nrewards (not\nrecovered)")
    axes.set_ylabel("% of samples")
    axes.set_ylim(0, 100)
    axes.set_title("Zero-advantage samples per step")
    legend(axes)
    return True


def _judge_calls(axes, summary: dict, _groups) -> bool:
    steps = [s for s in summary["steps"] if s["judge_calls"] is not None]
    if not steps:
        return False
    x, width = _step_axis(axes, steps)
    axes.bar(x, [s["judge_calls"] for s in steps], width, color="#6d597a")
    axes.set_ylabel("judge calls")
    axes.set_title("Judge calls per step")
    return True


def _rewards(axes, _summary, groups: list[Group]) -> bool:
    scores = _by_verdict(groups, lambda g: g.scores)
    if not any(scores.values()):
        return False
    values = [v for vs in scores.values() for v in vs]
    low, high = min(values), max(values)
    if not np.isfinite(np.float64(high) - np.float64(low)):  # no axis spans it (±1e308); summary.json has them
        return False
    t = np.linspace(0.0, 1.0, 21)  # low * (1 - t) + high * t: finite even when high - low is not (±1e308)
    bins = np.linspace(low - 0.5, high + 0.5, 2) if low == high else low * (1 - t) + high * t
    _stacked_histogram(axes, scores, bins)
    axes.set_xlabel("dumped reward (score, after the arena)")
    axes.set_ylabel("samples")
    axes.set_title("Reward distribution, by the verifier's verdict")
    return True


def _lengths(axes, _summary, groups: list[Group]) -> bool:
    lengths = _by_verdict(groups, lambda g: g.lengths)
    if not any(lengths.values()):
        return False
    high = max(v for vs in lengths.values() for v in vs)
    _stacked_histogram(axes, lengths, np.linspace(0, max(high, 1), 31))
    axes.set_xlabel("response length (characters)")
    axes.set_ylabel("samples")
    axes.set_title("Response lengths, by the verifier's verdict")
    return True


def _data_sources(axes, summary: dict, _groups) -> bool:
    sources = {name: c for name, c in summary["totals"]["data_sources"].items() if c["groups"]}
    if not sources:
        return False
    shown = sorted(sources, key=lambda n: -sources[n]["groups"])[:_MAX_SOURCES]  # a figure has a size limit
    names = [n for n in sources if n in shown][::-1]  # first name on top
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for key, color, label in (
        ("all_correct", ALL_CORRECT, "all correct"),
        ("all_incorrect", ALL_INCORRECT, "all incorrect"),
        ("mixed", MIXED, "mixed (diverse)"),
    ):
        share = np.array([100 * sources[n][key] / sources[n]["groups"] for n in names])
        axes.barh(y, share, left=left, color=color, label=label)
        left += share
    axes.set_yticks(y, [f"{literal(n)} ({sources[n]['groups']} groups)" for n in names], parse_math=False)
    axes.set_xlim(0, 100)
    axes.set_xlabel("% of groups")
    more = len(sources) - len(names)
    axes.set_title(f"Groups per data source{f' ({more} more in the table below)' if more else ''}")
    legend(axes)
    axes.figure.set_size_inches(9, 1.6 + 0.45 * len(names))
    return True


def _by_verdict(groups: list[Group], values: Callable[[Group], tuple]) -> dict[str, list[float]]:
    split = {"correct": [], "incorrect": [], "unverified": []}
    for group in groups:
        verdicts = group.correct or (None,) * group.samples
        for verdict, value in zip(verdicts, values(group)):
            split["unverified" if verdict is None else "correct" if verdict else "incorrect"].append(value)
    return split


def _stacked_histogram(axes, split: dict[str, list[float]], bins) -> None:
    colors = {"correct": ALL_CORRECT, "incorrect": ALL_INCORRECT, "unverified": UNVERIFIED}
    present = [name for name in split if split[name]]
    axes.hist([split[n] for n in present], bins=bins, stacked=True, color=[colors[n] for n in present], label=present)
    legend(axes)


# (file name without .png) -> (caption, plot): the page shows them in this order; a plot without data is left out.
PLOTS = {
    "alpha": (
        "Share of groups whose samples were all correct or all incorrect by the verifier: under RLVR their advantage "
        "is zero, and the arena routes them to the judge.",
        _alpha,
    ),
    "zero_advantage": (
        "Samples with zero advantage under the verifier's rewards (wide bars) and under the rewards the run trained "
        "on (narrow bars): the gap is what the arena recovered.",
        _zero_advantage,
    ),
    "judge_calls": ("What the recovered signal cost: judge calls per step, from verl's file logger.", _judge_calls),
    "data_sources": ("Outcome of the groups of each data source, over the whole run.", _data_sources),
    "rewards": ("The dumped rewards of every sample, stacked by whether the verifier found it correct.", _rewards),
    "lengths": ("Response lengths in characters (the dump holds no token counts).", _lengths),
}


# ---------------------------------------------------------------------------------------------------------- page

# (summary key, column title, formatter)
_COLUMNS = (
    ("groups", "groups", str),
    ("all_correct", "all correct", str),
    ("all_incorrect", "all incorrect", str),
    ("mixed", "mixed", str),
    ("alpha", "alpha", percent),
    ("unverified", "unverified", str),
    ("samples", "samples", str),
    ("zero_advantage_share_rlvr", "zero adv. RLVR", percent),
    ("zero_advantage_share_dumped", "zero adv. dumped", percent),
    ("recovered_samples", "recovered samples", str),
    ("reward_mean", "mean reward", number),
    ("response_chars_mean", "mean chars", lambda v: number(v, 0)),
)


def _page(summary: dict, figures: list[tuple[str, str]], inputs: dict[str, Any]) -> str:
    totals = summary["totals"]
    shown_inputs = " · ".join(
        f"{html.escape(name)}: <code>{html.escape(', '.join(map(str, v)) if isinstance(v, list) else str(v))}</code>"
        for name, v in inputs.items()
        if v
    )
    step_rows = [
        [str(s["step"]), *(f(s[k]) for k, _, f in _COLUMNS), number(s["judge_calls"], 0)] for s in summary["steps"]
    ]
    source_rows = [[name, *(f(c[k]) for k, _, f in _COLUMNS)] for name, c in totals["data_sources"].items()]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>arena-verl analyze</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Zero-advantage compute in a GRPO run</h1>",
        f"<p class='inputs'>{shown_inputs}</p>",
        f"<p class='headline'>{_headline(totals)}</p>",
        "<h2>Whole run</h2>",
        html_table(
            ["", *(title for _, title, _ in _COLUMNS)], [["all steps", *(f(totals[k]) for k, _, f in _COLUMNS)]]
        ),
        _cost_line(totals),
    ]
    if totals["notes"]:
        parts.append("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in totals["notes"]) + "</ul>")
    for file, caption in figures:
        parts.append(f"<figure><img src='{file}' alt='{html.escape(caption)}'><figcaption>{html.escape(caption)}")
        parts.append("</figcaption></figure>")
    parts += ["<h2>Per data source</h2>", html_table(["data source", *(t for _, t, _ in _COLUMNS)], source_rows)]
    parts += [
        "<h2>Per step</h2><div class='scroll'>",
        html_table(["step", *(t for _, t, _ in _COLUMNS), "judge calls"], step_rows),
        "</div>",
        "<p class='inputs'>alpha = (all correct + all incorrect) / groups, over verified groups. "
        "Zero adv.: share of samples in groups whose rewards are all equal, under the verifier's rewards (RLVR) and "
        "under the dumped rewards (the run's, after the arena). The numbers are in <code>summary.json</code>.</p>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _headline(totals: dict) -> str:
    if not totals["samples"]:
        return "No group could be verified: nothing to say about zero advantage (see the notes)."
    text = (
        f"<b>{percent(totals['zero_advantage_share_rlvr'])}</b> of the verified samples "
        f"({totals['zero_advantage_samples_rlvr']} of {totals['samples']}) were in non-diverse groups: under RLVR "
        f"they get zero advantage. alpha = {percent(totals['alpha'])} of {totals['groups']} groups "
        f"({totals['all_correct']} all correct, {totals['all_incorrect']} all incorrect)."
    )
    if totals["recovered_samples"]:
        text += (
            f" Under the dumped rewards {percent(totals['zero_advantage_share_dumped'])} still had zero advantage: "
            f"the arena recovered {totals['recovered_samples']} samples in {totals['recovered_groups']} groups."
        )
    return text


def _cost_line(totals: dict) -> str:
    if totals["judge_calls"] is None:
        return "<p class='inputs'>Judge cost: give verl's file-logger output (--metrics) to see it.</p>"
    return (
        f"<p>Judge calls: {number(totals['judge_calls'], 0)} over {totals['steps']} steps, "
        f"{number(totals['judge_calls_per_recovered_group'], 1)} per recovered group.</p>"
    )
