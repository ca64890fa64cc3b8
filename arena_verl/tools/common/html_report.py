"""What the report folders of ``analyze`` and ``audit-judge`` share: one PNG per plot (matplotlib's defaults, Agg
backend, each file whole or not at all), the outcome colours, and the page's style and tables (a self-contained
page: inline style, no script, no network)."""

from __future__ import annotations

import contextlib
import html
import os
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from arena_verl.core.errors import InputError

__all__ = ["ALL_CORRECT", "ALL_INCORRECT", "MIXED", "STYLE", "UNVERIFIED", "draw_all", "html_table", "legend"]

ALL_CORRECT, ALL_INCORRECT, MIXED, UNVERIFIED = "#2a9d8f", "#e76f51", "#b8c0c8", "#8d99ae"
_DPI = 110
_PLOT_RIGHT = 0.8  # where the axes end (a share of the figure width); legends go beyond it


def draw_all(plots: dict, summary: dict, data, out: Path, fit_to_labels: Collection[str] = ()) -> list[tuple[str, str]]:
    """Every plot of ``plots`` (name -> (caption, plot function)) into ``out/<name>.png``; returns (file, caption) of
    those drawn. A plot without data is not drawn, and its file from an earlier report into the same folder is removed
    (it would be stale). The plots named in ``fit_to_labels`` get margins that fit their tick labels (long names);
    the others all get the same margins, so that their x axes line up on the page."""
    figures = []
    for name, (caption, plot) in plots.items():
        if draw(plot, summary, data, out / f"{name}.png", fit_labels=name in fit_to_labels):
            figures.append((f"{name}.png", caption))
        else:
            with contextlib.suppress(FileNotFoundError):
                (out / f"{name}.png").unlink()
    return figures


def draw(plot: Callable, summary: dict, data, path: Path, fit_labels: bool = False) -> bool:
    import matplotlib.pyplot as plt

    # The defaults, whatever the user's matplotlibrc says (text.usetex would read every label as TeX).
    with plt.style.context("default"), plt.rc_context({"text.usetex": False}):
        figure, axes = plt.subplots(figsize=(9, 3.6), dpi=_DPI)
        try:
            return _draw_on(figure, axes, plot, summary, data, path, fit_labels)
        finally:
            plt.close(figure)


def _draw_on(figure, axes, plot: Callable, summary: dict, data, path: Path, fit_labels: bool) -> bool:
    if not plot(axes, summary, data):
        return False
    axes.spines[["top", "right"]].set_visible(False)
    if fit_labels:
        figure.tight_layout(rect=(0, 0, _PLOT_RIGHT, 1))
    else:
        figure.subplots_adjust(left=0.08, right=_PLOT_RIGHT, bottom=0.15, top=0.88)
    _save_png(figure, path)
    return True


def _save_png(figure, path: Path) -> None:
    """``path`` whole or not at all (a temporary file, then a rename), as :func:`write_output` does for text."""
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            figure.savefig(handle, format="png")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(temporary)
        raise InputError(f"plot {path}: cannot be written ({exc.strerror or exc}); summary.json was written") from None


def legend(axes) -> None:
    """Beside the plot, where no bar can hide under it."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize="small")


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #1d2731; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.inputs { color: #5c6b7a; font-size: .9rem; } .headline { font-size: 1.1rem; background: #f1f5f8;
       border-left: 4px solid #2a9d8f; padding: .8rem 1rem; }
table { border-collapse: collapse; font-size: .85rem; font-variant-numeric: tabular-nums; }
th, td { padding: .25rem .45rem; border-bottom: 1px solid #dde3e9; text-align: right; }
th:first-child, td:first-child { text-align: left; white-space: nowrap; } th { background: #f1f5f8; }
.scroll { max-height: 28rem; overflow-y: auto; } figure { margin: 1.2rem 0; }
figure img { max-width: 100%; } figcaption { color: #5c6b7a; font-size: .9rem; }
.notes li { color: #7a4b00; }
"""


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
