"""The real-run soak's report (``scripts/bench/soak_run.py``): ``OUT/soak.json``, and with ``--page`` the markdown
page and its figure. Each check's bound is stated beside its figure; a check that fails is a finding (exit 1).

Bounds:
- steps: every training step from 1 to the last logged exactly once in the union of the attempts' metrics files, but
  a step whose checkpoint a later attempt started from and that no file logs (a kill cut its log: verl writes the
  checkpoint first), listed with the attempt that found it;
- samples: every logged step's rollout dump holds 2 x 4 finite scores;
- memory: per process life of 15 minutes or more, the least-squares slope of USS over its samples after its first 5
  minutes (a window of 10 minutes at least: over a shorter one a few MB of late warm-up read as tens of MB an hour)
  within ``MAX_USS_SLOPE_MB_PER_H``, and its descriptors at the end within ``MAX_FD_GROWTH`` of their count 5 minutes
  in; the referee's caps and Ray's GCS task-event cap are set small by the soak, so that they fill before;
- step time: the median of the healthy steps (not within 2 steps of a fault or a start) of the last tenth within a
  quarter of the first tenth's;
- checkpoints: never more on disk than ``KEEP_CHECKPOINTS`` of this attempt and of the one before (verl deletes its
  own attempt's only; the recipes prune the earlier ones at each start);
- nothing left: no process with any attempt's metrics file in its environment after the end, no Ray temp folder of
  any attempt's supervisor (``<tmp>/arena-ray-<pid>``) and no new ``session_*`` folder in ``/tmp/ray``;
- a hanging judge (``judge_hang``, and ``judge_hang_first`` met by a fresh referee): the extra step time of the steps it
  hung through, against healthy steps (an attempt's first step against the other attempts' first steps), within one
  call budget plus a probe period in all.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from soak_run import BATCH, RESUMES, N, ray_sessions, training_records

from arena_verl.tools.common.ray_temp import PREFIX as RAY_TEMP_PREFIX
from helpers.cpu_runs import processes_with_marker

BREAKER = ("openings", "closings", "probes")
HANGS = ("judge_hang", "judge_hang_first")
# The soak's judge (timeout 3 s, 1 retry, backoff 0.2 s): one call's budget at the referee; the breaker's probe period.
CALL_BUDGET_S = (2 * 3.0 + 2**2 * 0.2) * 2
PROBE_S = 10.0
HANG_BOUND_S = CALL_BUDGET_S + PROBE_S
MAX_USS_SLOPE_MB_PER_H = 50.0
MAX_FD_GROWTH = 20
LIFE_MIN_S, LIFE_WARMUP_S = 900.0, 300.0
STEP_TIME_DRIFT = 0.25
_WARNING = re.compile(r"arena step (\d+): (.*)")


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    if len(points) < 3:
        return None
    ts, ys = [p[0] for p in points], [p[1] for p in points]
    mean_t, mean_y = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - mean_t) ** 2 for t in ts)
    return None if var == 0 else 3600 * sum((t - mean_t) * (y - mean_y) for t, y in zip(ts, ys)) / var


def _score(line: str):
    """A dump line's score (None for a line a kill cut)."""
    try:
        return json.loads(line).get("score")
    except (ValueError, AttributeError):
        return None


def write_report(soak, page: Path | None) -> list[str]:
    out, run_dir, findings = soak.out, soak.run_dir, []
    records = training_records(run_dir / "metrics")
    logged = defaultdict(list)
    for record in records:
        logged[int(record["training/global_step"])].append(record)
    last = max(logged, default=0)
    resumed_from = {step: a["attempt"] for a in soak.attempts[1:] for step in a["checkpoints_at_start"][-1:]}
    missing = [s for s in range(1, last + 1) if s not in logged]
    kill_cut = {s: resumed_from[s] for s in missing if s in resumed_from}
    lost = [s for s in missing if s not in kill_cut]
    twice = sorted(s for s, rs in logged.items() if len(rs) > 1)
    if lost:
        findings.append(f"steps never logged and not cut by a kill: {lost}")
    if twice:
        findings.append(f"steps logged twice: {twice}")

    unrewarded = {}
    for step in logged:
        dump = run_dir / "rollout" / f"{step}.jsonl"
        lines = dump.read_text(errors="replace").split("\n") if dump.exists() else []  # not splitlines: a toy
        scores = [_score(line) for line in lines if line.strip()]  # policy's text holds \x1c and \u2028
        finite = [s for s in scores if isinstance(s, (int, float)) and math.isfinite(s)]
        if len(finite) != BATCH * N or len(scores) != BATCH * N:
            unrewarded[step] = f"{len(finite)} finite of {len(scores)} scores"
    if unrewarded:
        findings.append(f"steps whose dump lacks a finite reward for every sample: {unrewarded}")

    warnings = {}
    for attempt in soak.attempts:
        for line in Path(attempt["log"]).read_text(errors="replace").splitlines():
            match = _WARNING.search(line)
            if match:
                warnings[int(match.group(1))] = match.group(2)[:300]
    faults = []
    for fault in soak.faults:
        first = fault["step_before"] + 1
        window = [s for s in range(first, first + 3) if s in logged]
        sums = defaultdict(float)
        for step in window:
            for key, value in logged[step][-1].items():
                if key.startswith(("arena/fallback_", "arena/breaker_")) and isinstance(value, (int, float)):
                    sums[key.removeprefix("arena/")] += value
        faults.append({**fault, "steps": window, "counters": {k: v for k, v in sums.items() if v},
                       "warnings": {s: warnings[s] for s in window if s in warnings}})  # fmt: skip

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    lives = defaultdict(list)
    for sample in samples:
        for proc in sample["processes"]:
            lives[(proc["role"], proc["pid"], proc["started"])].append((sample["t"], proc))
    empty = {"lives": 0, "lives_checked": 0, "worst_uss_slope_mb_per_h": None, "worst_fd_growth": None,
             "max_uss_mb": 0.0, "max_rss_mb": 0.0}  # fmt: skip
    roles: dict[str, dict] = defaultdict(lambda: dict(empty))
    for (role, pid, _), points in lives.items():
        entry = roles[role]
        entry["lives"] += 1
        entry["max_uss_mb"] = max(entry["max_uss_mb"], max(p["uss_mb"] for _, p in points))
        entry["max_rss_mb"] = max(entry["max_rss_mb"], max(p["rss_mb"] for _, p in points))
        if points[-1][0] - points[0][0] < LIFE_MIN_S:
            continue
        entry["lives_checked"] += 1
        settled = [(t, p) for t, p in points if t - points[0][0] >= LIFE_WARMUP_S]
        slope = slope_per_hour([(t, p["uss_mb"]) for t, p in settled])
        growth = settled[-1][1]["fds"] - settled[0][1]["fds"]
        if slope is not None and (
            entry["worst_uss_slope_mb_per_h"] is None or slope > entry["worst_uss_slope_mb_per_h"]
        ):
            entry["worst_uss_slope_mb_per_h"] = slope
        if entry["worst_fd_growth"] is None or growth > entry["worst_fd_growth"]:
            entry["worst_fd_growth"] = growth
        if slope is not None and slope > MAX_USS_SLOPE_MB_PER_H:
            findings.append(
                f"{role} pid {pid}: USS grows {slope:.1f} MB/h after warm-up (bound {MAX_USS_SLOPE_MB_PER_H})"
            )
        if growth > MAX_FD_GROWTH:
            findings.append(f"{role} pid {pid}: {growth} more descriptors after warm-up (bound {MAX_FD_GROWTH})")

    near = set()  # steps a fault or a start touched: from the fault to 3 steps after its last part
    for fault in soak.faults:
        end = max([fault["step_before"], *(then["step"] for then in fault.get("then", []))])
        near |= set(range(fault["step_before"], end + 4))
    first_steps = {}  # each attempt's first step: what a start costs, the control of a hang at a start
    for attempt in soak.attempts:
        start = (attempt["checkpoints_at_start"] or [0])[-1]
        near |= set(range(start, start + 3))
        if start + 1 in logged and "timing_s/step" in logged[start + 1][-1]:
            first_steps[start + 1] = logged[start + 1][-1]["timing_s/step"]
    healthy = [
        (s, logged[s][-1]["timing_s/step"])
        for s in sorted(logged)
        if s not in near and "timing_s/step" in logged[s][-1]
    ]
    tenth = max(1, len(healthy) // 10)
    first_tenth = statistics.median(t for _, t in healthy[:tenth]) if healthy else None
    last_tenth = statistics.median(t for _, t in healthy[-tenth:]) if healthy else None
    drift = None if not first_tenth else last_tenth / first_tenth - 1
    healthy_median = statistics.median(t for _, t in healthy) if healthy else None
    for fault in faults:  # what a hanging judge cost the steps it hung through, against a healthy step
        if fault["kind"] not in HANGS or healthy_median is None:
            continue
        end = next((t["step"] for t in fault.get("then", []) if t["what"] == "judge answers again"), last)
        hung = [s for s in range(fault["step_before"] + 1, end + 2) if s in logged]

        def usual_s(step: int) -> float:
            others = [t for s, t in first_steps.items() if s != step]
            return statistics.median(others) if step in first_steps and others else healthy_median

        fault["hang_steps"] = hung
        fault["hang_extra_s"] = sum(logged[s][-1].get("timing_s/step", 0.0) - usual_s(s) for s in hung)
        fault["hang_bound_s"] = HANG_BOUND_S
        if fault["hang_extra_s"] > HANG_BOUND_S:
            findings.append(
                f"the judge hang at {fault['t'] / 60:.1f} min cost {fault['hang_extra_s']:.0f} s of step time "
                f"(bound: one call budget {CALL_BUDGET_S:g} s + a probe period {PROBE_S:g} s)"
            )
    if drift is not None and drift > STEP_TIME_DRIFT:
        findings.append(f"healthy step time drifted {drift:+.0%} (last tenth's median against the first's)")

    most_checkpoints = max((s["checkpoints"] for s in samples), default=0)
    if most_checkpoints > 2 * soak.args.keep:
        findings.append(f"{most_checkpoints} checkpoints on disk at once (bound {2 * soak.args.keep})")
    left = [p for f in sorted((run_dir / "metrics").glob("*.jsonl")) for p in processes_with_marker(str(f))]
    if left:
        findings.append(f"processes left after the run: {left}")
    temp = Path(tempfile.gettempdir())
    ray_left = [str(temp / f"{RAY_TEMP_PREFIX}{a['pid']}") for a in soak.attempts]
    ray_left = [path for path in ray_left if Path(path).exists()]
    ray_left += sorted(ray_sessions() - soak.ray_sessions_before)
    if ray_left:
        findings.append(f"Ray temp folders left after the run: {ray_left}")
    unplanned = [a["attempt"] for a in soak.attempts if a.get("unplanned")]
    if unplanned:
        findings.append(f"attempts that ended on their own: {unplanned}")

    def growth_per_step(key: str) -> float | None:
        points = [(s["step"], s[key]) for s in samples if s["step"]]
        rate = slope_per_hour(points)
        return None if rate is None else rate / 3600 / 1024

    report = {
        "minutes": soak.args.minutes, "seed": soak.args.seed, "recipe": soak.args.recipe,
        "steps": {"last": last, "logged": len(logged), "kill_cut": kill_cut, "lost": lost, "twice": twice},
        "samples_unrewarded": unrewarded,
        "faults": faults,
        "fault_counts": {k: sum(f["kind"] == k for f in faults) for k in sorted({f["kind"] for f in faults})},
        "resumes": {k: sum(f["kind"] == k for f in faults) for k in RESUMES},
        "attempts": soak.attempts,
        "breaker": {k: sum(r.get(f"arena/breaker_{k}", 0) for r in records) for k in BREAKER},
        "roles": dict(roles),
        "step_time": {"healthy_steps": len(healthy), "first_tenth_median_s": first_tenth,
                      "last_tenth_median_s": last_tenth, "drift": drift},
        "checkpoints_most_on_disk": most_checkpoints,
        "dump_kib_per_step": growth_per_step("dump_bytes"),
        "metrics_kib_per_step": growth_per_step("metrics_bytes"),
        "left_processes": left,
        "left_ray_temp": ray_left,
        "bounds": {"uss_slope_mb_per_h": MAX_USS_SLOPE_MB_PER_H, "fd_growth": MAX_FD_GROWTH,
                   "step_time_drift": STEP_TIME_DRIFT, "checkpoints": 2 * soak.args.keep},
        "findings": findings,
    }  # fmt: skip
    (out / "soak.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    if page is not None:
        write_page(report, samples, logged, page)
    return findings


def _f(value, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _span(steps: list[int]) -> str:
    return f"{steps[0]}-{steps[-1]}" if steps else "none"


def write_page(report: dict, samples: list[dict], logged: dict, page: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, steps) = plt.subplots(2, 1, figsize=(11, 8))
    series = defaultdict(list)
    for sample in samples:
        by_role = defaultdict(float)
        for proc in sample["processes"]:
            by_role[proc["role"]] += proc["uss_mb"]
        for role, uss in by_role.items():
            series[role].append((sample["t"] / 60, uss))
    colours = plt.get_cmap("tab20").colors  # a colour of its own for each of up to 20 roles
    for k, (role, points) in enumerate(sorted(series.items())):
        memory.plot(*zip(*points), label=role, lw=1, color=colours[k % len(colours)])
    for fault in report["faults"]:
        memory.axvline(fault["t"] / 60, color="grey", lw=0.6, ls=":")
        memory.text(fault["t"] / 60, 0, fault["kind"], rotation=90, fontsize=6, va="bottom")
    memory.set(
        xlabel="minutes", ylabel="USS, MB (all processes of the role)", title="Memory per process role, faults dotted"
    )
    memory.legend(fontsize=7, ncol=3)
    xs = sorted(logged)
    steps.plot(xs, [logged[s][-1].get("timing_s/step", float("nan")) for s in xs], lw=0.8)
    for fault in report["faults"]:
        steps.axvline(fault["step_before"] + 1, color="grey", lw=0.6, ls=":")
    steps.set(xlabel="training step", ylabel="timing_s/step", title="Step time, faults dotted", yscale="log")
    figure.tight_layout()
    figure.savefig(page.with_suffix(".png"), dpi=110)
    s = report
    lines = [
        f"Real-run soak, {s['minutes']:g} minutes, recipe {s['recipe']}, seed {s['seed']} (SETTING=cpu, RANDOM-weight "
        "toy policy, loopback judge: NOT a model).",
        f"`python scripts/bench/soak_run.py --out OUT --minutes {s['minutes']:g} --seed {s['seed']} --page {page}`",
        "",
        f"- steps: {s['steps']['logged']} logged, last {s['steps']['last']}; cut by a kill: {s['steps']['kill_cut']}; "
        f"lost: {s['steps']['lost']}; twice: {s['steps']['twice']}",
        f"- samples without a finite reward: {s['samples_unrewarded'] or 'none'}",
        f"- faults: {s['fault_counts']}; resumes: {s['resumes']}; breaker: {s['breaker']}",
        f"- step time (healthy steps, {s['step_time']['healthy_steps']}): median of the first tenth "
        f"{_f(s['step_time']['first_tenth_median_s'])} s, of the last tenth "
        f"{_f(s['step_time']['last_tenth_median_s'])} s, drift {_f(s['step_time']['drift'], '+.1%')} "
        f"(bound {STEP_TIME_DRIFT:.0%})",
        f"- checkpoints on disk at most: {s['checkpoints_most_on_disk']} (bound {s['bounds']['checkpoints']})",
        f"- growth per step: dumps {_f(s['dump_kib_per_step'])} KiB, metrics {_f(s['metrics_kib_per_step'])} KiB",
        f"- left processes: {s['left_processes'] or 'none'}; left Ray temp folders: {s['left_ray_temp'] or 'none'}",
        "- judge hangs (extra step time of the steps hung through, bound: one call budget + a probe period): "
        + (
            "; ".join(
                f"{f['kind']} at {f['t'] / 60:.1f} min, steps {_span(f['hang_steps'])}: "
                f"{f['hang_extra_s']:+.1f} s (bound {f['hang_bound_s']:.1f} s)"
                for f in s["faults"]
                if "hang_extra_s" in f
            )
            or "none"
        ),
        f"- findings: {s['findings'] or 'none'}",
        "",
        "| role | lives | lives >= 15 min | max USS MB | max RSS MB | worst USS slope MB/h (after 5 min, lives >= 15 "
        "min) | worst fd growth |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for role, entry in sorted(s["roles"].items()):
        slope = entry["worst_uss_slope_mb_per_h"]
        growth = entry["worst_fd_growth"]
        lines.append(f"| {role} | {entry['lives']} | {entry['lives_checked']} | {entry['max_uss_mb']:.0f} | "
                     f"{entry['max_rss_mb']:.0f} | "
                     f"{'-' if slope is None else f'{slope:.1f}'} | {'-' if growth is None else growth} |")  # fmt: skip
    lines += ["", "| t (min) | fault | steps after | counters | warning line |", "| ---: | --- | --- | --- | --- |"]
    for fault in s["faults"]:
        warning = next(iter(fault["warnings"].values()), "")
        lines.append(f"| {fault['t'] / 60:.1f} | {fault['kind']} | {fault['steps']} | {fault['counters']} | "
                     f"{warning.replace('|', '/')[:160]} |")  # fmt: skip
    lines += ["", f"![memory and step time]({page.with_suffix('.png').name})", ""]
    page.write_text("\n".join(lines))
