"""The report of a score file (groups, calls, failures, the first-shown trace's share of decided verdicts) and the
agreement of two score files on the groups both scored. Decided verdicts and the first-shown trace's share are the
tracker's (:func:`~arena_verl.core.referee.metrics.position_figures`): a soft outcome counts its value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.evaluation.tables import MISSING, number, percent
from arena_verl.tools.score.score_file import settings_text

__all__ = ["compare_runs", "render_comparison", "render_report", "summarise"]


def summarise(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over score lines: groups, calls, failures and the first-shown trace's share of decided verdicts."""
    calls = sum(line["judge_calls"] for line in lines)
    decided = sum(line["decided"] for line in lines)
    first_wins = sum(line["first_wins"] for line in lines)
    return {
        "groups": len(lines),
        "steps": len({line["step"] for line in lines}),
        "judge_calls": calls,
        "calls_per_group": calls / len(lines) if lines else 0.0,
        "failures": sum(line["failures"] for line in lines),
        "decided": decided,
        "first_wins": first_wins,
        "first_win_share": first_wins / decided if decided else None,
        "simulated": any(line.get("simulated") for line in lines),
    }


def compare_runs(lines: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement between two score files on the groups both scored (same step, group and samples).

    ``kendall_tau``: the mean over those groups of Kendall's tau-b between the two files' rewards (groups where
    either file gives every trace the same reward have no tau; counted in ``no_tau``). ``top1_agreement``: the share
    of groups whose best trace (highest reward, earliest on ties) is the same in both."""
    from scipy.stats import kendalltau

    theirs = {(line["step"], line["group"]): line for line in other}
    taus, top1, mismatched, no_tau = [], [], 0, 0
    for line in lines:
        match = theirs.get((line["step"], line["group"]))
        if match is None:
            continue
        if match.get("sample_digests") != line.get("sample_digests"):
            mismatched += 1  # the same key over different samples: not the same group
            continue
        mine, yours = np.asarray(line["rewards"]), np.asarray(match["rewards"])
        top1.append(int(np.argmax(mine)) == int(np.argmax(yours)))
        if np.ptp(mine) == 0 or np.ptp(yours) == 0:
            no_tau += 1
        else:
            taus.append(float(kendalltau(mine, yours).statistic))
    return {
        "common": len(top1),
        "kendall_tau": float(np.mean(taus)) if taus else None,
        "tau_groups": len(taus),
        "no_tau": no_tau,
        "top1_agreement": float(np.mean(top1)) if top1 else None,
        "mismatched": mismatched,
    }


def render_report(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    s = summary
    lines = [
        f"score report ({settings_text(settings)})",
        f"  groups scored: {s['groups']} over {s['steps']} step(s)",
        f"  judge calls: {s['judge_calls']} ({s['calls_per_group']:.2f} per group)",
        f"  failures: {s['failures']} ({_share(s['failures'], s['judge_calls'])} of calls)",
    ]
    if s["first_win_share"] is None:
        lines.append("  position bias: no decided verdicts")
    else:
        lines.append(
            f"  position bias: the trace shown first won {percent(s['first_win_share'])} of {s['decided']} decided "
            "verdicts (50% = no bias; a soft verdict counts its probability; ties and failures excluded)"
        )
    if s["simulated"]:
        lines.append("  (SIMULATED judge: these verdicts come from hashes of the texts, not from a model)")
    return "\n".join(lines)


def render_comparison(c: dict[str, Any], path: Path, other: Path) -> str:
    lines = [f"agreement of {path} with {other}: {c['common']} groups in both"]
    if c["common"]:
        lines.append(
            f"  mean Kendall tau of rewards: {number(c['kendall_tau'])} over {c['tau_groups']} groups"
            + (f" ({c['no_tau']} with all rewards equal in a file: no tau)" if c["no_tau"] else "")
        )
        lines.append(f"  top-1 agreement: {percent(c['top1_agreement'])}")
    if c["mismatched"]:
        lines.append(f"  {c['mismatched']} groups share a key but not their samples (different dumps?): left out")
    return "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return percent(part / whole) if whole else MISSING
