"""Ranking benchmark: how well each tournament strategy recovers hidden trace quality, per judge call.

The judge is the SIMULATED judge of ``arena_verl.core.tournament`` (hidden qualities drawn per group), so these figures
measure the schedulers and the Bradley-Terry fit, not any real LLM judge. All strategies see the same groups and the
same judge seeds (paired), so their differences are measured side by side. The main table uses a logistic judge; the
targets table repeats the comparison that matters (paced and info_gain against live and round robin, at live's
budget, with a 63% first-position preference) on four judges: logistic or probit (Thurstone) noise, without ties or
with 5% ties, so that a strategy is not tuned to one simulator.

``--soft-vs-hard`` runs one table instead: ``live`` and ``paced`` at live's budget (63% first-position preference,
logistic judge) with hard verdicts against the same judge reporting probabilities (``verdict="probability"``: the
law's P(first is better) with per-call Beta noise of concentration kappa, ``--concentrations``; mean the law's, variance
a hard verdict's over kappa + 1; :meth:`arena_verl.judge.simulated.law.VerdictLaw.probability`). Hard and soft
tournaments see the same groups and the same per-pair uniforms (coupled), so soft - hard is paired too.

    python scripts/bench/ranking.py                 # full run (>= 400 groups per cell), tables + PNG + markdown
    python scripts/bench/ranking.py --groups 100    # quicker
    python scripts/bench/ranking.py --soft-vs-hard --concentrations 1,4,inf   # hard vs soft verdicts
    python scripts/bench/ranking.py --order        # today's presentation order against the prefix-aware one

``--order`` runs one table instead: ``live``, ``paced`` and ``info_gain`` at live's budget with each scheduler's own
presentation order (a coin per pair; ``paced``: the first-position balance) against the prefix-aware order (the same
balance for every scheduler, a cached first trace preferred where it leaves the order open), first-position biases of
0.35 and 0.53 logits (a 63% first-win rate), the same groups and judge seeds for both orders (paired).

``--formats`` runs one table instead: the peers' formats, ``swiss`` and ``knockout``, beside ``live``, ``paced``,
``info_gain`` and ``round_robin``, on the four judges of the targets table (63% first-position preference), the same
groups and judge seeds for every strategy (paired), at three budgets: knockout's N-1 calls, swiss's own (the Swiss
system's ceil(log2 N) rounds of N/2 pairs; the strategy itself has no round count of its own: unset, it plays until
its budget, by default live's, is spent) and live's; ``round_robin`` at its own count as the ceiling. A strategy that
cannot run at a budget (a fixed count: live, knockout, round robin) says so in the table. Writes
``ranking_formats.md`` and ``ranking_formats.png`` (tau against judge calls):

    python scripts/bench/ranking.py --formats      # the peers' formats against ours
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from arena_verl.core.strategies import SwissOptions
from arena_verl.judge.simulated.law import DEFAULT_CONCENTRATION
from arena_verl.tournament import (
    SimulatedJudge,
    live_call_count,
    position_bias_for_first_win_rate,
    round_robin_call_count,
    run_tournament,
)

FIRST_WIN_RATE = 0.63  # the average LLM judge's preference for the first-shown answer (position-bias studies)


@dataclass(frozen=True)
class Variant:
    label: str
    strategy: str
    order_effect: bool = False
    at_live_budget: bool = False


VARIANTS = (
    Variant("round_robin", "round_robin"),
    Variant("live", "live"),
    Variant("live+order_fit", "live", order_effect=True),
    Variant("random", "random", at_live_budget=True),
    Variant("info_gain", "info_gain", at_live_budget=True),
    Variant("info_gain+order_fit", "info_gain", order_effect=True, at_live_budget=True),
    Variant("paced", "paced", at_live_budget=True),
)
# The judges of the targets table: (noise, tie rate).
JUDGES = (("logistic", 0.0), ("logistic", 0.05), ("probit", 0.0), ("probit", 0.05))
TARGET_VARIANTS = tuple(v for v in VARIANTS if v.label in ("round_robin", "live", "info_gain", "paced"))


@dataclass(frozen=True)
class Cell:
    spread: float
    bias: float
    num_items: int
    variant: Variant
    budget: int | None
    groups: int
    seed: int
    noise: str = "logistic"
    tie_rate: float = 0.0
    verdict: str = "generate"  # or "probability": the judge reports P(first is better) with Beta noise
    concentration: float = DEFAULT_CONCENTRATION  # that noise's kappa (read in probability mode only)
    prefix_aware: bool = False  # the presentation order for the prefix cache (order.present)
    strategy_options: Any = None  # the strategy's own knobs (e.g. SwissOptions); None: its defaults
    tier: str = ""  # which budget of the formats table this cell is (FORMAT_TIERS)


def run_cell(cell: Cell) -> dict:
    taus, top, bottom, calls, rounds = [], [], [], [], []
    for g in range(cell.groups):
        # Same qualities and judge seed for every variant of a (spread, N) cell: a paired comparison.
        rng = np.random.default_rng([cell.seed, cell.num_items, int(cell.spread * 1000), g])
        quality = rng.normal(scale=cell.spread, size=cell.num_items)
        judge = SimulatedJudge(
            quality,
            position_bias=cell.bias,
            noise=cell.noise,
            tie_rate=cell.tie_rate,
            seed=rng,
            verdict=cell.verdict,
            concentration=cell.concentration,
        )
        result = asyncio.run(
            run_tournament(
                cell.num_items,
                judge,
                cell.variant.strategy,
                cell.budget,
                seed=g,
                order_effect=cell.variant.order_effect,
                prefix_aware=cell.prefix_aware,
                strategy_options=cell.strategy_options,
            )
        )
        theta = result.strengths
        taus.append(kendalltau(theta, quality).statistic)
        top.append(theta.argmax() == quality.argmax())
        bottom.append(theta.argmin() == quality.argmin())
        calls.append(result.judge_calls)
        rounds.append(result.rounds_after_last_arrival)
    return {
        "cell": cell,
        "calls": float(np.mean(calls)),
        "rounds": float(np.mean(rounds)),
        "taus": taus,
        **{name: mean_se(values) for name, values in (("tau", taus), ("top1", top), ("bottom1", bottom))},
    }


def add_paired_gains(rows: list[dict]) -> None:
    """``paired_gain`` of every row over live in the same cell (same groups, same judge seeds): mean and SE of the
    per-group difference in tau, far less noisy than the difference of two means."""
    live = {
        (r["cell"].noise, r["cell"].tie_rate, r["cell"].spread, r["cell"].bias, r["cell"].num_items): r["taus"]
        for r in rows
        if r["cell"].variant.label == "live"
    }
    for row in rows:
        c = row["cell"]
        base = live.get((c.noise, c.tie_rate, c.spread, c.bias, c.num_items))
        if base is not None:
            row["paired_gain"] = mean_se(np.asarray(row["taus"]) - np.asarray(base))


def mean_se(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=400, help="groups per cell (default 400)")
    parser.add_argument("--sizes", default="4,8,16,32")
    parser.add_argument("--spreads", default="1.0,1.6,2.5", help="std of hidden quality, in judge logits")
    parser.add_argument("--sweep-sizes", default="8,16", help="sizes for the tau-vs-calls budget sweep plot")
    parser.add_argument("--target-sizes", default="8,16", help="sizes for the targets table over four judges")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="bench_out", help="folder for ranking.md and ranking.png")
    parser.add_argument(
        "--soft-vs-hard",
        action="store_true",
        help="only the table of live and paced with hard against soft (probability) verdicts, at --target-sizes",
    )
    parser.add_argument(
        "--concentrations",
        default=f"{DEFAULT_CONCENTRATION:g}",
        help="Beta concentrations kappa of the soft judge's noise for --soft-vs-hard (inf: noise-free)",
    )
    parser.add_argument(
        "--tables",
        default="main,sweep,targets",
        help="which parts to run: main (every strategy), sweep (tau against calls, the plot), targets (four judges)",
    )
    parser.add_argument(
        "--order",
        action="store_true",
        help="only the table of today's presentation order against the prefix-aware one, at --target-sizes",
    )
    parser.add_argument(
        "--formats",
        action="store_true",
        help="only the table of the peers' formats (swiss, knockout) against ours, at --target-sizes, and its PNG",
    )
    args = parser.parse_args()
    tables = set(args.tables.split(","))
    if not tables or tables - {"main", "sweep", "targets"}:
        parser.error(f"--tables takes main, sweep and targets, got {args.tables!r}")

    sizes = [int(x) for x in args.sizes.split(",")]
    spreads = [float(x) for x in args.spreads.split(",")]
    biases = [0.0, position_bias_for_first_win_rate(FIRST_WIN_RATE)]
    if args.soft_vs_hard:
        concentrations = [float(x) for x in args.concentrations.split(",")]
        if not concentrations or not all(k > 0 for k in concentrations):
            parser.error(f"--concentrations takes numbers > 0 (inf: noise-free), got {args.concentrations!r}")
        target_sizes = [int(x) for x in args.target_sizes.split(",")]
        soft_vs_hard(args, spreads, target_sizes, biases[1], concentrations)
        return
    if args.order:
        presentation_order(args, spreads, [int(x) for x in args.target_sizes.split(",")], [ORDER_BIAS, biases[1]])
        return
    if args.formats:
        peer_formats(args, spreads, [int(x) for x in args.target_sizes.split(",")], biases[1])
        return
    cells = [
        Cell(spread, bias, n, v, live_call_count(n) if v.at_live_budget else None, args.groups, args.seed)
        for spread, bias, n, v in itertools.product(spreads, biases, sizes, VARIANTS)
    ]
    sweep = [
        Cell(spread, biases[1], n, Variant(name, name), budget, args.groups, args.seed)
        for spread in spreads
        for n in (int(x) for x in args.sweep_sizes.split(","))
        for name in ("random", "info_gain", "paced")
        for budget in sweep_budgets(n)
    ]
    target_cells = [
        Cell(
            spread,
            biases[1],
            n,
            v,
            live_call_count(n) if v.at_live_budget else None,
            args.groups,
            args.seed,
            noise,
            ties,
        )  # fmt: skip
        for spread in spreads
        for n in (int(x) for x in args.target_sizes.split(","))
        for noise, ties in JUDGES
        for v in TARGET_VARIANTS
    ]

    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_cell, cells)) if "main" in tables else []
        sweep_rows = list(pool.map(run_cell, sweep)) if "sweep" in tables else []
        target_rows = list(pool.map(run_cell, target_cells)) if "targets" in tables else []
    add_paired_gains(target_rows)
    elapsed = time.perf_counter() - started

    os.makedirs(args.out, exist_ok=True)
    command = f"python scripts/bench/ranking.py --groups {args.groups} --seed {args.seed}"
    if tables != {"main", "sweep", "targets"}:
        command += f" --tables {args.tables} --spreads {args.spreads}"
    header = (
        f"Ranking benchmark, SIMULATED judge, {args.groups} groups per cell, seed {args.seed}, "
        f"{elapsed:.0f} s on {os.cpu_count()} CPUs.\n`{command}`\n"
    )
    parts = [format_table(rows, args.groups)] if rows else []
    parts += [format_targets(target_rows)] if target_rows else []
    report = header + "\n" + "\n".join(parts)
    print(report)
    with open(os.path.join(args.out, "ranking.md"), "w") as handle:
        handle.write(report)
    if rows and sweep_rows:
        plot(rows, sweep_rows, os.path.join(args.out, "ranking.png"))
    print(f"wrote {args.out}/ranking.md" + (" and ranking.png" if rows and sweep_rows else ""), file=sys.stderr)


ORDER_VARIANTS = (
    Variant("live", "live"),
    Variant("paced", "paced", at_live_budget=True),
    Variant("info_gain", "info_gain", at_live_budget=True),
)
ORDER_BIAS = 0.35  # a milder first-position preference than FIRST_WIN_RATE's, in judge logits (about 59%)


def presentation_order(args, spreads: list[float], sizes: list[int], biases: list[float]) -> None:
    """Run and print the presentation-order table (and write it to ``--out``/order.md)."""
    cells = [
        Cell(
            spread,
            bias,
            n,
            v,
            live_call_count(n) if v.at_live_budget else None,
            args.groups,
            args.seed,
            prefix_aware=aware,
        )  # fmt: skip
        for spread in spreads
        for bias in biases
        for n in sizes
        for v in ORDER_VARIANTS
        for aware in (False, True)
    ]
    command = (
        f"python scripts/bench/ranking.py --order --groups {args.groups} --seed {args.seed} --spreads {args.spreads} "
        f"--target-sizes {args.target_sizes}"
    )
    one_table(args, cells, "Presentation order, SIMULATED judge (logistic)", command, format_order, "order.md")


def one_table(args, cells: list[Cell], title: str, command: str, format_rows, filename: str, plot_rows=None) -> None:
    """Run ``cells`` on ``--workers`` processes, print ``title``, the run's figures, ``command`` and the table
    ``format_rows`` makes of the rows, and write the same to ``--out``/``filename``; with ``plot_rows``, also its
    figure of the rows, ``plot_rows(rows, path)``, next to it (the same name, ``.png``)."""
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_cell, cells))
    elapsed = time.perf_counter() - started
    report = (
        f"{title}, {args.groups} groups per cell, seed {args.seed}, {elapsed:.0f} s with {args.workers} worker(s) on "
        f"{os.cpu_count()} CPUs.\n`{command}`\n\n" + format_rows(rows)
    )
    print(report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, filename), "w") as handle:
        handle.write(report)
    if plot_rows is not None:
        figure = os.path.splitext(filename)[0] + ".png"
        plot_rows(rows, os.path.join(args.out, figure))
        filename += f" and {figure}"
    print(f"wrote {args.out}/{filename}", file=sys.stderr)


def format_order(rows: list[dict]) -> str:
    """One line per (spread, bias, N, strategy): tau with today's order, with the prefix-aware order, and the paired
    per-group difference (prefix-aware - today) with its standard error."""
    taus = {
        (r["cell"].spread, r["cell"].bias, r["cell"].num_items, r["cell"].variant.label, r["cell"].prefix_aware):
        (np.asarray(r["taus"]), r["calls"])
        for r in rows
    }  # fmt: skip
    lines = [
        "| quality spread | first-position bias | N | strategy | calls | tau, today's order | tau, prefix-aware "
        "| prefix-aware - today (paired) |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for spread, bias, n, label in sorted({key[:4] for key in taus}, key=lambda k: (k[0], k[1], k[2], _label(k[3]))):
        today, calls = taus[spread, bias, n, label, False]
        aware, _ = taus[spread, bias, n, label, True]
        t, a, d = mean_se(today), mean_se(aware), mean_se(aware - today)
        lines.append(
            f"| {spread:g} | {bias:.2f} | {n} | {label} | {calls:.0f} | {t[0]:.3f} ± {t[1]:.3f} "
            f"| {a[0]:.3f} ± {a[1]:.3f} | {d[0]:+.3f} ± {d[1]:.3f} |"
        )
    return "\n".join(lines) + "\n"


def _label(name: str) -> int:
    return [v.label for v in ORDER_VARIANTS].index(name)


# The formats table's budgets, cheapest first: knockout's N-1 calls, swiss's own rounds, live's count, all pairs.
FORMAT_TIERS = ("N-1", "swiss", "live", "all pairs")
FORMAT_STRATEGIES = ("live", "paced", "info_gain", "swiss", "knockout", "round_robin")  # the tables' order
OWN_TIER = {"knockout": "N-1", "live": "live", "round_robin": "all pairs"}  # the fixed counts: no budget taken


def swiss_rounds(num_items: int) -> int:
    """The Swiss system's usual number of rounds, ceil(log2 N): enough rounds to leave one trace unbeaten."""
    return max(1, (num_items - 1).bit_length())


def tier_budgets(num_items: int) -> dict[str, int]:
    """The judge calls of each tier of the formats table at N = ``num_items``."""
    n = num_items
    return {
        "N-1": n - 1,
        "swiss": max(n - 1, swiss_rounds(n) * (n // 2)),
        "live": live_call_count(n),
        "all pairs": round_robin_call_count(n),
    }


TIER_NAMES = {"N-1": "N-1", "swiss": "swiss rounds", "live": "live's", "all pairs": "all pairs"}


def tier_label(tier: str, num_items: int) -> str:
    rounds = f"{swiss_rounds(num_items)} " if tier == "swiss" else ""
    return f"{rounds}{TIER_NAMES[tier]} = {tier_budgets(num_items)[tier]}"


def format_plan(num_items: int) -> list[tuple[str, str, int | None, Any]]:
    """(tier, strategy, budget, strategy options) of each cell of the formats table at N = ``num_items``. A strategy
    of fixed count runs at its own tier only (budget None); ``swiss`` at its own tier plays ``swiss_rounds`` rounds,
    elsewhere (no round count, its default) rounds until the budget is spent."""
    budgets = tier_budgets(num_items)
    rounds = SwissOptions(swiss_rounds=swiss_rounds(num_items))
    plan = [(tier, name, None, None) for name, tier in OWN_TIER.items()]
    plan += [("swiss", "swiss", budgets["swiss"], rounds), ("N-1", "swiss", budgets["N-1"], None)]
    plan += [("live", "swiss", budgets["live"], None)]
    plan += [(tier, name, budgets[tier], None) for tier in ("N-1", "swiss", "live") for name in ("paced", "info_gain")]
    return plan


def peer_formats(args, spreads: list[float], sizes: list[int], bias: float) -> None:
    """Run and print the formats table (and write it to ``--out``/ranking_formats.md, its figure beside it)."""
    cells = [
        Cell(
            spread,
            bias,
            n,
            Variant(name, name),
            budget,
            args.groups,
            args.seed,
            noise,
            ties,
            strategy_options=options,
            tier=tier,
        )  # fmt: skip
        for spread in spreads
        for n in sizes
        for noise, ties in JUDGES
        for tier, name, budget, options in format_plan(n)
    ]
    command = (
        f"python scripts/bench/ranking.py --formats --groups {args.groups} --seed {args.seed} --spreads {args.spreads} "
        f"--target-sizes {args.target_sizes}"
    )
    title = f"Tournament formats, SIMULATED judge (four judges, {FIRST_WIN_RATE:.0%} first-position preference)"
    one_table(args, cells, title, command, format_formats, "ranking_formats.md", plot_formats)


def _judge_name(noise: str, ties: float) -> str:
    return f"{noise}{f', {ties:.0%} ties' if ties else ''}"


def format_formats(rows: list[dict]) -> str:
    """A summary of Kendall tau per (judge, spread, N) and budget, then one full table per judge: per (spread, N,
    budget) each strategy's calls, judge rounds after the last trace, tau, top-1 and bottom-1 accuracy, and its paired
    tau difference (per group, the same groups and judge seeds) against ``live`` and against ``paced`` at the same
    budget; a strategy of fixed count that cannot run at a budget is a row saying so."""
    by_key = {
        (_judge_name(r["cell"].noise, r["cell"].tie_rate), r["cell"].spread, r["cell"].num_items, r["cell"].tier,
         r["cell"].variant.label): r
        for r in rows
    }  # fmt: skip
    judges = [name for name in (_judge_name(*judge) for judge in JUDGES) if any(k[0] == name for k in by_key)]
    blocks = sorted({key[1:3] for key in by_key})
    summary_columns = [
        ("knockout", "N-1"), ("swiss", "N-1"), ("paced", "N-1"), ("swiss", "swiss"), ("paced", "swiss"),
        ("swiss", "live"), ("live", "live"), ("paced", "live"), ("info_gain", "live"), ("round_robin", "all pairs"),
    ]  # fmt: skip
    lines = [
        f"Kendall tau against hidden quality, {FIRST_WIN_RATE:.0%} first-position preference (judge calls per group in "
        "brackets; budgets: N-1 = knockout's count, swiss rounds = ceil(log2 N) rounds of N/2 pairs, live's = 3N-6, "
        "all pairs = round robin's; standard errors and the other columns in the full tables below):",
        "",
        "| judge | quality spread | N | " + " | ".join(f"{a} @ {TIER_NAMES[t]}" for a, t in summary_columns) + " |",
        "| --- | ---: | ---: |" + " ---: |" * len(summary_columns),
    ]
    for judge in judges:
        for spread, n in blocks:
            cells = []
            for name, tier in summary_columns:
                row = by_key.get((judge, spread, n, tier, name))
                cells.append(f"{row['tau'][0]:.3f} ({row['calls']:.0f})" if row else "")
            lines.append(f"| {judge} | {spread:g} | {n} | " + " | ".join(cells) + " |")
    for judge in judges:
        lines += [
            "",
            f"### Judge: {judge}",
            "",
            "| quality spread | N | budget (calls) | strategy | judge calls | rounds after last trace | Kendall tau "
            "| top-1 acc | bottom-1 acc | tau - live, same budget (paired) | tau - paced, same budget (paired) |",
            "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for spread, n in blocks:
            for tier in FORMAT_TIERS:
                here = {name: by_key.get((judge, spread, n, tier, name)) for name in FORMAT_STRATEGIES}
                budget = tier_label(tier, n)
                for name in FORMAT_STRATEGIES:
                    row = here[name]
                    if row is None:
                        continue
                    taus = np.asarray(row["taus"])
                    gains = [
                        fmt_gain(taus - np.asarray(here[base]["taus"])) if here[base] and name != base else ""
                        for base in ("live", "paced")
                    ]
                    lines.append(
                        f"| {spread:g} | {n} | {budget} | {name} | {row['calls']:.0f} | {row['rounds']:.1f} "
                        f"| {fmt(row['tau'])} "
                        f"| {fmt(row['top1'])} | {fmt(row['bottom1'])} | " + " | ".join(gains) + " |"
                    )
                absent = [name for name, own in OWN_TIER.items() if own != tier and tier != "all pairs"]
                if absent:
                    counts = ", ".join(f"{name} {tier_budgets(n)[OWN_TIER[name]]}" for name in absent)
                    lines.append(
                        f"| {spread:g} | {n} | {budget} | {', '.join(absent)} | | | not run: a fixed count of calls "
                        f"({counts}), no budget taken | | | | |"
                    )
    return "\n".join(lines) + "\n"


FORMAT_STYLE = {  # strategy: (marker, colour); ours in blues and greens, the peers in reds
    "live": ("*", "tab:blue"),
    "paced": ("o", "tab:green"),
    "info_gain": ("^", "tab:cyan"),
    "swiss": ("s", "tab:red"),
    "knockout": ("X", "tab:orange"),
    "round_robin": ("*", "tab:gray"),
}


def plot_formats(rows: list[dict], path: str) -> None:
    """Kendall tau against judge calls per strategy (± one standard error), one panel per (spread, N), on the
    logistic judge without ties (the other judges: the tables)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if (r["cell"].noise, r["cell"].tie_rate) == JUDGES[0]] or rows
    spreads = sorted({r["cell"].spread for r in rows})
    sizes = sorted({r["cell"].num_items for r in rows})
    fig, axes = plt.subplots(len(spreads), len(sizes), figsize=(5.5 * len(sizes), 4 * len(spreads)), squeeze=False)
    for (i, spread), (j, n) in itertools.product(enumerate(spreads), enumerate(sizes)):
        ax = axes[i][j]
        for name in FORMAT_STRATEGIES:
            points = sorted(
                (r["calls"], *r["tau"])
                for r in rows
                if r["cell"].spread == spread and r["cell"].num_items == n and r["cell"].variant.label == name
            )
            if not points:
                continue
            x, y, se = (np.array(v) for v in zip(*points))
            marker, colour = FORMAT_STYLE[name]
            ax.errorbar(
                x, y, yerr=se, marker=marker, color=colour, capsize=2, ms=11 if marker in "*X" else 6,
                ls="-" if len(x) > 1 else "none", label=name,
            )  # fmt: skip
        for tier in ("N-1", "swiss", "live"):
            ax.axvline(tier_budgets(n)[tier], color="0.8", lw=0.8, zorder=0)
        ax.set_xscale("log")
        ticks = sorted(set(tier_budgets(n).values()))
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_title(f"N={n}, quality spread {spread:g}")
        ax.set_xlabel("judge calls per group (log scale)")
        ax.set_ylabel("Kendall tau vs hidden quality")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="lower right", fontsize=8)
    judge = _judge_name(*JUDGES[0])
    fig.suptitle(
        f"Peers' formats (swiss, knockout) against ours: tau vs judge calls (SIMULATED {judge} judge, "
        f"{FIRST_WIN_RATE:.0%} first-position preference)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


SOFT_VS_HARD_VARIANTS = (Variant("live", "live"), Variant("paced", "paced", at_live_budget=True))


def soft_vs_hard(args, spreads: list[float], sizes: list[int], bias: float, concentrations: list[float]) -> None:
    """Run and print the hard-versus-soft table (and write it to ``--out``/soft_vs_hard.md)."""
    judges = [("generate", DEFAULT_CONCENTRATION)] + [("probability", k) for k in concentrations]
    cells = [
        Cell(
            spread,
            bias,
            n,
            v,
            live_call_count(n) if v.at_live_budget else None,
            args.groups,
            args.seed,
            verdict=verdict,
            concentration=kappa,
        )  # fmt: skip
        for spread in spreads
        for n in sizes
        for verdict, kappa in judges
        for v in SOFT_VS_HARD_VARIANTS
    ]
    command = (
        f"python scripts/bench/ranking.py --soft-vs-hard --groups {args.groups} --seed {args.seed} "
        f"--spreads {args.spreads} --target-sizes {args.target_sizes} --concentrations {args.concentrations}"
    )
    title = f"Soft versus hard verdicts, SIMULATED judge (logistic, {FIRST_WIN_RATE:.0%} first-position preference)"
    one_table(args, cells, title, command, format_soft_vs_hard, "soft_vs_hard.md")


def format_soft_vs_hard(rows: list[dict]) -> str:
    """One line per (spread, N, judge): live's and paced's tau at live's budget, paced's paired edge over live, and
    for a soft judge the paired change from the hard judge of the same groups: of live, of paced, and of the edge
    (the per-group difference of the two edges)."""
    taus = {
        (r["cell"].spread, r["cell"].num_items, r["cell"].verdict, r["cell"].concentration, r["cell"].variant.label):
        np.asarray(r["taus"])
        for r in rows
    }  # fmt: skip
    calls = {(r["cell"].spread, r["cell"].num_items, r["cell"].variant.label): r["calls"] for r in rows}
    lines = [
        "| quality spread | N | calls (live, paced) | verdicts | live tau | paced tau | paced - live "
        "| live: soft - hard | paced: soft - hard | edge: soft - hard |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    keys = sorted({(spread, n, verdict, kappa) for spread, n, verdict, kappa, _ in taus}, key=_soft_order)
    for spread, n, verdict, kappa in keys:
        live, paced = taus[spread, n, verdict, kappa, "live"], taus[spread, n, verdict, kappa, "paced"]
        hard_live = taus[spread, n, "generate", DEFAULT_CONCENTRATION, "live"]
        hard_paced = taus[spread, n, "generate", DEFAULT_CONCENTRATION, "paced"]
        soft = verdict == "probability"
        judge = f"soft, kappa={kappa:g}" if soft else "hard"
        edge_change = (paced - live) - (hard_paced - hard_live)
        changes = (
            [fmt_gain(live - hard_live), fmt_gain(paced - hard_paced), fmt_gain(edge_change)] if soft else [""] * 3
        )
        lines.append(
            f"| {spread:g} | {n} | {calls[spread, n, 'live']:.0f}, {calls[spread, n, 'paced']:.0f} | {judge} "
            f"| {fmt(mean_se(live))} | {fmt(mean_se(paced))} | {fmt_gain(paced - live)} | " + " | ".join(changes) + " |"
        )
    return "\n".join(lines) + "\n"


def _soft_order(key: tuple) -> tuple:
    spread, n, verdict, kappa = key
    return spread, n, verdict == "probability", kappa  # hard first, then the noisiest soft judge first


def fmt_gain(differences: np.ndarray) -> str:
    mean, se = mean_se(differences)
    return f"{mean:+.3f} ± {se:.3f}"


def sweep_budgets(num_items: int) -> list[int]:
    low, live, high = num_items - 1, live_call_count(num_items), round_robin_call_count(num_items)
    return sorted({low, (low + live) // 2, live, (live + high) // 2, high})


def format_table(rows: list[dict], groups: int) -> str:
    lines = [
        "| quality spread | first-position bias | N | strategy | judge calls | rounds after last trace "
        "| Kendall tau | top-1 acc | bottom-1 acc |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cell = row["cell"]
        bias = f"{FIRST_WIN_RATE:.0%} first" if cell.bias else "none"
        lines.append(
            f"| {cell.spread:g} | {bias} | {cell.num_items} | {cell.variant.label} | {row['calls']:.0f} "
            f"| {row['rounds']:.1f} | {fmt(row['tau'])} | {fmt(row['top1'])} | {fmt(row['bottom1'])} |"
        )
    return "\n".join(lines) + "\n"


def fmt(value: tuple[float, float]) -> str:
    return f"{value[0]:.3f} ± {value[1]:.3f}"


def format_targets(rows: list[dict]) -> str:
    """The issue's targets, at live's budget with position bias: each adaptive strategy against live, and the share
    of the live-to-round-robin gap it closes, per judge, spread and N."""
    tau = {(r["cell"].noise, r["cell"].tie_rate, r["cell"].spread, r["cell"].num_items, r["cell"].variant.label): r
           for r in rows}  # fmt: skip
    lines = [
        "| judge | quality spread | N | live tau | round robin tau | strategy | tau | gain over live "
        "| share of live->RR gap |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for noise, ties, spread, n, label in sorted(tau):
        if label != "live":
            continue
        live, full = tau[noise, ties, spread, n, "live"], tau[noise, ties, spread, n, "round_robin"]
        for strategy in ("info_gain", "paced"):
            row = tau.get((noise, ties, spread, n, strategy))
            if row is None:
                continue
            gain = row["paired_gain"]
            gap = full["tau"][0] - live["tau"][0]
            share = gain[0] / gap if gap > 0 else float("nan")
            judge = f"{noise}{f', {ties:.0%} ties' if ties else ''}"
            lines.append(
                f"| {judge} | {spread:g} | {n} | {live['tau'][0]:.3f} | {full['tau'][0]:.3f} | {strategy} "
                f"| {row['tau'][0]:.3f} | {gain[0]:+.3f} ± {gain[1]:.3f} | {share:.0%} |"
            )
    return "With a 63% first-position preference, at live's budget (gain: paired, ± its standard error):\n\n" + (
        "\n".join(lines) + "\n"
    )


def plot(rows: list[dict], sweep_rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spreads = sorted({r["cell"].spread for r in sweep_rows})
    sizes = sorted({r["cell"].num_items for r in sweep_rows})
    fig, axes = plt.subplots(len(spreads), len(sizes), figsize=(5 * len(sizes), 4 * len(spreads)), squeeze=False)
    for (i, spread), (j, n) in itertools.product(enumerate(spreads), enumerate(sizes)):
        ax = axes[i][j]
        for name, marker in (("random", "s"), ("info_gain", "o")):
            points = sorted(
                (r["calls"], *r["tau"])
                for r in sweep_rows
                if r["cell"].spread == spread and r["cell"].num_items == n and r["cell"].variant.label == name
            )
            x, y, se = (np.array(v) for v in zip(*points))
            ax.errorbar(x, y, yerr=se, marker=marker, capsize=2, label=name)
        for r in rows:
            c = r["cell"]
            if c.spread == spread and c.num_items == n and c.bias and c.variant.label in ("live", "round_robin"):
                ax.errorbar(
                    r["calls"],
                    r["tau"][0],
                    yerr=r["tau"][1],
                    marker="*",
                    ms=12,
                    capsize=2,
                    ls="none",
                    label=c.variant.label,
                )
        ax.set_title(f"N={n}, quality spread {spread:g}, {FIRST_WIN_RATE:.0%} first-position bias")
        ax.set_xlabel("judge calls per group")
        ax.set_ylabel("Kendall tau vs hidden quality")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.suptitle("Ranking quality vs judge calls (SIMULATED judge)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
