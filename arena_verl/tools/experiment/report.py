"""The learning experiment's plots (PNG) and HTML page, from ``results.json``.

Every curve is an arm's mean over its seeds at each step (or validation), with the band between its seeds' lowest and
highest value; the tables give the mean and the Student-t 95% interval over seeds.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.evaluation.costs import cost_rows

__all__ = ["PLOTS", "write_report", "result_rows"]

_COLORS = {
    "rlvr": "#555555",
    "rlvr_dapo": "#1f77b4",
    "arena_live": "#d62728",
    "arena_live_random": "#ff9896",
    "arenarl": "#2ca02c",
    "arena_live_slow": "#9467bd",
}


def _series(runs: list[dict], table: str, x: str, y: str):
    """Per x value shared by the runs: (x, mean, low, high) of y over the runs that have it."""
    points: dict[float, list[float]] = {}
    for run in runs:
        for row in run[table]:
            if row.get(y) is not None and row.get(x) is not None:
                points.setdefault(float(row[x]), []).append(float(row[y]))
    xs = sorted(points)
    return (
        np.array(xs),
        np.array([np.mean(points[v]) for v in xs]),
        np.array([min(points[v]) for v in xs]),
        np.array([max(points[v]) for v in xs]),
    )


def _draw(axes, results: dict, table: str, x: str, y: str, label_suffix: str = "", style: str = "-") -> bool:
    drawn = False
    for arm, record in results["arms"].items():
        runs = record["runs"]
        xs, mean, low, high = _series(runs, table, x, y)
        if not len(xs):
            continue
        color = _COLORS.get(arm)
        axes.plot(xs, mean, style, color=color, label=f"{arm}{label_suffix} (n={len(runs)})", linewidth=1.6)
        if len(runs) > 1:
            axes.fill_between(xs, low, high, color=color, alpha=0.12, linewidth=0)
        drawn = True
    return drawn


def _val_plot(x: str, xlabel: str):
    def plot(figure, results: dict) -> bool:
        sources = results["val_sources"]
        axes_list = figure.subplots(1, max(1, len(sources)), squeeze=False)[0]
        drawn = False
        for axes, source in zip(axes_list, sources):
            drawn |= _draw(axes, results, "val", x, source)
            axes.set_title(f"validation pass rate: {source}")
            axes.set_xlabel(xlabel)
            axes.set_ylabel("mean acc over samples")
            axes.set_ylim(bottom=0.0)  # the top follows the data: differences of a few points stay visible
            axes.grid(alpha=0.3)
        if drawn:
            axes_list[0].legend(fontsize=7)
        return drawn

    return plot


def _step_plot(panels: list[tuple[str, str]], shares: bool = False):
    def plot(figure, results: dict) -> bool:
        axes_list = figure.subplots(1, len(panels), squeeze=False)[0]
        drawn = False
        for axes, (y, title) in zip(axes_list, panels):
            drawn |= _draw(axes, results, "steps", "step", y)
            axes.set_title(title)
            axes.xaxis.get_major_locator().set_params(integer=True)
            if shares and "share" in y:
                axes.set_ylim(-0.02, 1.02)
            axes.set_xlabel("training step")
            axes.grid(alpha=0.3)
        if drawn:
            axes_list[0].legend(fontsize=7)
        return drawn

    return plot


# file name -> (caption, drawing function, figure width)
PLOTS = {
    "val_by_step.png": ("Validation pass rate against training step", _val_plot("step", "training step"), 11),
    "val_by_generations.png": (
        "Validation pass rate against generations (DAPO's discarded ones included)",
        _val_plot("generations_cumulative", "generations so far"),
        11,
    ),
    "non_diverse.png": (
        "Non-diverse groups per step: all correct and all wrong",
        _step_plot(
            [("all_correct_share", "all-correct groups (share)"), ("all_wrong_share", "all-wrong groups")], shares=True
        ),
        11,
    ),
    "advantage.png": (
        "Samples with a non-zero advantage, and the mean |advantage| (the paper's Figure 5)",
        _step_plot(
            [("nonzero_advantage_share", "share of samples, advantage != 0"), ("mean_abs_advantage", "mean |A|")],
            shares=True,
        ),
        11,
    ),
    "response_length.png": (
        "Mean response length (tokens): a judge that rewarded length would lengthen it",
        _step_plot([("response_length", "response length (tokens)")]),
        6,
    ),
    "step_time.png": (
        "Seconds per step and generations per step",
        _step_plot([("step_s", "seconds per step"), ("generations", "generations per step")]),
        11,
    ),
}


def draw_plots(results: dict, out: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for name, (caption, plot, width) in PLOTS.items():
        figure = plt.figure(figsize=(width, 3.8))
        try:
            if plot(figure, results):
                figure.tight_layout()
                figure.savefig(out / name, dpi=110)
                written.append((name, caption))
        finally:
            plt.close(figure)
    return written


def _interval(figure: dict | None, digits: int = 3) -> str:
    if not figure or figure.get("mean") is None:
        return "-"
    if figure.get("low") is None:
        return f"{figure['mean']:.{digits}f} (one seed)"
    return f"{figure['mean']:.{digits}f} [{figure['low']:.{digits}f}, {figure['high']:.{digits}f}]"


def result_rows(results: dict) -> tuple[list[str], list[list[str]]]:
    """Every arm: seeds, then per validation source the pass rate at the start, at the last step and at the
    generation budget (mean [95% t interval] over seeds), then the mean response length."""
    sources = results["val_sources"]
    header = ["arm", "seeds"]
    for source in sources:
        header += [f"{source}: start", f"{source}: last step", f"{source}: at budget"]
    header.append("response length")
    rows = []
    for arm, record in results["arms"].items():
        seeds = record["across_seeds"]
        row = [arm, str(len(record["runs"]))]
        for source in sources:
            row += [
                _interval(seeds.get(f"val_start/{source}")),
                _interval(seeds.get(f"val_last/{source}")),
                _interval(seeds.get(f"val_at_budget/{source}")),
            ]
        row.append(_interval(seeds.get("mean/response_length"), 1))
        rows.append(row)
    return header, rows


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_tables(results: dict[str, Any]) -> str:
    """The two tables of the report (pass rates across seeds; the cost columns) in Markdown, for a docs page."""
    header, rows = result_rows(results)
    cost_header, cost_body = cost_rows(results["costs"])
    budget = results.get("generation_budget")
    return "\n".join(
        [
            "Validation pass rate, mean [95% Student-t interval over seeds]"
            + (f"; at budget: the last validation within {budget:.0f} generations" if budget else "")
            + ":",
            "",
            markdown_table(header, rows),
            "",
            "Cost columns (every step of every seed; the first step of a run left out of the times):",
            "",
            markdown_table(cost_header, cost_body),
            "",
        ]
    )


def write_report(results: dict[str, Any], out: Path) -> list[Path]:
    """PNG plots, ``report.html`` and ``results.md`` (the tables) into ``out``; returns the files written."""
    figures = draw_plots(results, out)
    header, rows = result_rows(results)
    cost_header, cost_body = cost_rows(results["costs"])
    plan = results["plan"]
    budget = results.get("generation_budget")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>arena-verl learning experiment</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
        "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px}"
        "th{background:#f4f4f4}img{max-width:100%}</style></head><body>",
        "<h1>Learning experiment: the arena against RLVR, DAPO and a random judge</h1>",
        "<p>verl's real trainer on CPU through the experiment recipes; the judges are programs standing in for an LLM "
        "judge (the step judge reads the steps; the random judge is the control). "
        f"{plan['steps']} steps of {plan['prompts_per_step']} prompts x {plan['group_size']} samples.</p>",
        "<h2>Validation pass rate (mean [95% Student-t interval over seeds])</h2>",
        f"<p>At budget: the last validation within {budget:.0f} generations, the smallest total of any run.</p>"
        if budget
        else "",
        _html_table(header, rows),
        "<h2>Cost columns</h2>",
        _html_table(cost_header, cost_body),
    ]
    for name, caption in figures:
        parts.append(f"<h3>{html.escape(caption)}</h3><img src='{html.escape(name)}' alt='{html.escape(caption)}'>")
    parts.append("</body></html>")
    page = out / "report.html"
    page.write_text("\n".join(parts))
    (out / "results.md").write_text(markdown_tables(results))
    return [page, *(out / name for name, _ in figures)]
