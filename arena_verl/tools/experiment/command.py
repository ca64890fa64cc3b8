"""``arena-verl experiment``: the learning experiment, the arena against RLVR, RLVR + DAPO and a random judge, with
verl's real trainer on CPU through the experiment recipes.

    arena-verl experiment --out runs/learning --gate              # the gate's pilots: can this policy learn at all?
    arena-verl experiment --out runs/learning                     # the full grid (hours; resumable), after the gate
    arena-verl experiment --out /tmp/quick --quick                # CI's form: one seed, rlvr and arena_live, 3 steps
    arena-verl experiment --trainer verl ...                      # verl's own trainer (the default where a GPU is)
    arena-verl experiment --out runs/learning --arms rlvr,arena_live --seeds 1
    arena-verl experiment --out runs/learning --report-only       # results.json and the report from finished runs

It builds what the runs share (the warmed policy, cached by its settings under ``--cache``; under ``OUT/assets`` the
hard training mix, the hard test split, the gate's own hard draw and the fixed all-wrong set), then runs every arm x
seed: with ``--trainer fast`` (the default without a GPU) through the fast trainer
(:mod:`arena_verl.tools.experiment.fast`: the recipe's config, the arena's reward manager, referee and estimator and
verl's loss in one process), with ``--trainer verl`` as ``bash recipes/<recipe>.sh`` with ``SETTING=cpu`` (verl's real
trainer). One run at a time by default (a run takes both cores;
``--jobs N``: N at once, whose step times are not comparable with a run alone). A finished run (its ``result.json``)
is never redone; an unfinished one is started again from nothing. After each run ``OUT/results.json``,
``OUT/report.html`` and the PNG plots are written again from every finished run. Progress: one line per change
(run k of n, step, ETA).

**The gate.** ``--gate`` fixes its candidate settings and rule in ``OUT/gate.json`` before its first pilot, then runs
the valid-chain reference and RLVR at every candidate with the gate's own seeds, validated on the gate's own hard draw
(:mod:`.gate`); the grid runs only at a candidate where the reference moved the policy in every seed.

The judges are programs (:mod:`arena_verl.judge.programs`), standing in for an LLM judge: see
:mod:`arena_verl.tools.experiment.arms`. Exit status: 0 every run finished, 1 a run failed (the others still ran;
rerun to retry it), 2 bad input (one line).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from arena_verl.core.errors import InputError
from arena_verl.tools.experiment.arms import (
    ARMS,
    DEFAULT_ARMS,
    FAST,
    FAST_QUICK,
    FULL,
    GATE_ARM,
    GATE_CANDIDATES,
    GATE_REFERENCE_ARM,
    GATE_SEEDS,
    GRID_ARMS,
    QUICK,
    Candidate,
    Plan,
)
from arena_verl.tools.experiment.gate_runs import gate_label, gate_plan, gated_plan, register_gate, write_gate
from arena_verl.tools.experiment.grid import RECIPES, Run, grid_runs, is_finished, run_one
from arena_verl.tools.experiment.report import write_report
from arena_verl.tools.experiment.results import GRID_MIN_SEEDS, aggregate

__all__ = ["configure_parser", "run", "QUICK_ARMS"]

QUICK_ARMS = ("rlvr", "arena_live")  # the control and the arena: two trainer starts in CI
MAX_JOBS = 8
MAX_SEEDS = 20
MAX_PROMPTS_PER_STEP = 256
MAX_STEPS = 2000
TRAINERS = ("auto", "verl", "fast")


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="the grid's folder (runs, assets, results, report)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per arm (default 4; --quick: 1)")
    parser.add_argument(
        "--arms",
        default=None,
        help=f"comma-separated arms (default: {','.join(DEFAULT_ARMS)}; --quick: {','.join(QUICK_ARMS)})",
    )
    parser.add_argument("--quick", action="store_true", help="CI's form: a small policy, few steps, small splits")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("ARENA_VERL_CACHE", Path.home() / ".cache" / "arena-verl")),
        help="where warmed policies are kept, one folder per settings ($ARENA_VERL_CACHE, ~/.cache/arena-verl)",
    )
    parser.add_argument(
        "--policy", type=Path, default=None, help="a policy folder to train instead of the warmed one (not built)"
    )
    parser.add_argument(
        "--trainer",
        choices=TRAINERS,
        default="auto",
        help="fast: the fast trainer (one process); verl: verl's trainer through the recipes; auto (default): verl "
        "where a GPU is, fast otherwise",
    )
    parser.add_argument("--gate", action="store_true", help="run the gate's pilots instead of the grid")
    parser.add_argument(
        "--candidates",
        default=None,
        help="the gate's candidates, comma-separated lr:prompts:steps:warmup (default "
        + ",".join(_candidate_text(c) for c in GATE_CANDIDATES)
        + "); fixed in gate.json before the first pilot",
    )
    parser.add_argument("--report-only", action="store_true", help="no runs: results and report from finished runs")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs at once (default 1, --quick too). Runs that share the machine slow each other: their "
        "step times are not comparable with a run alone (the learning figures were measured one at a time)",
    )


def _candidate_text(c: Candidate) -> str:
    return f"{c.learning_rate:g}:{c.prompts_per_step}:{c.steps}:{c.warmup_steps}"


def candidates(text: str | None, default: tuple[Candidate, ...]) -> tuple[Candidate, ...]:
    """``--candidates``: lr:prompts:steps:warmup, comma-separated, distinct."""
    if text is None:
        return default
    found = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            rate, prompts, steps, warmup = float(parts[0]), int(parts[1]), int(parts[2]), int(parts[3])
        except (ValueError, IndexError):
            raise InputError(f"--candidates {text!r}: lr:prompts:steps:warmup, e.g. 1e-4:32:300:0") from None
        if len(parts) != 4 or not (math.isfinite(rate) and 0 < rate < 1):
            raise InputError(f"--candidates {text!r}: a learning rate in (0, 1), four fields each")
        _count_flag("--candidates' prompts", prompts, MAX_PROMPTS_PER_STEP)
        _count_flag("--candidates' steps", steps, MAX_STEPS)
        if not 0 <= warmup < steps:
            raise InputError(f"--candidates {text!r}: warm-up steps in [0, steps)")
        found.append(Candidate(rate, prompts, steps, warmup))
    if len(set(found)) != len(found):
        raise InputError(f"--candidates {text!r}: a candidate twice")
    return tuple(found)


def _trainer(name: str) -> str:
    if name == "auto":
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            import torch

            return "verl" if torch.cuda.is_available() else "fast"
        return "fast"
    return name


def _arms(text: str | None, quick: bool, trainer: str = "verl") -> list:
    default = QUICK_ARMS if quick else (GRID_ARMS if trainer == "fast" else DEFAULT_ARMS)
    names = [n.strip() for n in text.split(",")] if text else list(default)
    unknown = [n for n in names if n not in ARMS]
    if unknown or not names or len(set(names)) != len(names):
        raise InputError(f"--arms {text!r}: an unknown, empty or repeated arm (arms: {', '.join(ARMS)})")
    return [ARMS[n] for n in names]


def _check_out(out: Path) -> Path:
    text = str(out)
    if any(c in text for c in "',\"\\$") or not text.isprintable():
        raise InputError(f"--out {text!r}: no quotes, commas, dollars, backslashes or control characters, please")
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: not a folder")
    return out


def _policy_settings(quick: bool):
    from arena_verl.testing.step_policy import PolicySettings

    return PolicySettings(steps=60, batch_size=32, train_rows=2000, measure_prompts=8) if quick else PolicySettings()


def _experiment_record(plan: Plan, quick: bool) -> dict:
    from arena_verl.data.chain_arithmetic import SPLITS

    return {
        "plan": {k: v for k, v in dataclasses.asdict(plan).items() if k not in ("learning_rate", "val_splits")},
        "quick": quick,
        "policy": dataclasses.asdict(_policy_settings(quick)),
        "levels": {name: SPLITS[split] for name, split in ASSET_SPLITS.items()},
    }


def _claim(out: Path, record: dict) -> None:
    """One experiment's settings per folder: a folder started with other settings is refused, not mixed."""
    path = out / "experiment.json"
    record = json.loads(json.dumps(record))  # as it reads back (tuples are lists in JSON)
    if path.is_file():
        try:
            previous = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: unreadable ({exc}); remove it or use another --out") from None
        if previous != record:
            raise InputError(f"{out} holds an experiment with other settings ({path}); use another --out")
        return
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


# The assets' splits (arena_verl.data.chain_arithmetic.SPLITS); the all-wrong set is drawn from its pool split.
ASSET_SPLITS = {"train": "hard_train", "test": "hard_test", "pilot": "hard_pilot", "all_wrong": "hard_pool"}


def build_assets(out: Path, plan: Plan, cache: Path, quick: bool, log, policy: Path | None = None) -> dict[str, Path]:
    from arena_verl.data.chain_arithmetic import make_problems, write_problems, write_split
    from arena_verl.testing.step_policy import build_step_policy

    if policy is not None:
        if not (policy / "config.json").is_file():
            raise InputError(f"--policy {policy}: not a model folder (no config.json)")
        policy = policy.resolve()
    else:
        settings = _policy_settings(quick)
        log(f"policy: warmed Qwen2 {settings.key()} under {cache} (built once per settings: minutes)")
        policy = build_step_policy(cache, settings, log=log)
    assets = out / "assets"
    sizes = {"train": plan.train_rows, "test": plan.val_rows, "pilot": plan.val_rows}
    files = {name: assets / f"{name}.parquet" for name in ASSET_SPLITS}
    for name, rows in sizes.items():
        if not files[name].is_file():
            write_split(files[name], rows, ASSET_SPLITS[name], seed=0)
    if not files["all_wrong"].is_file():
        from arena_verl.tools.experiment.task_mix import all_wrong_problems

        pool = make_problems(4 * plan.all_wrong_rows, ASSET_SPLITS["all_wrong"], seed=0)
        log(f"all-wrong set: sampling the starting policy on {len(pool)} hard problems")
        found = all_wrong_problems(policy, pool, group_size=8)
        chosen = found[: plan.all_wrong_rows]
        (assets / "all_wrong.json").write_text(
            json.dumps({"pool": len(pool), "all_wrong": len(found), "kept": len(chosen), "group_size": 8}) + "\n"
        )
        write_problems(files["all_wrong"], chosen, ASSET_SPLITS["all_wrong"], data_source="chain_all_wrong")
    return {"policy": policy, **files}


def _finished_results(out: Path, arms: list) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {}
    for arm in arms:
        for folder in sorted((out / "runs" / arm.name).glob("seed*")):
            path = folder / "result.json"
            if path.is_file():
                results.setdefault(arm.name, []).append(json.loads(path.read_text()))
    return results


def _plan(quick: bool, trainer: str) -> Plan:
    if trainer == "fast":
        return FAST_QUICK if quick else FAST
    return QUICK if quick else FULL


def write_results(out: Path, arms: list, plan: Plan, assets: dict[str, Path]) -> dict | None:
    """``OUT/results.json`` and the report from the finished grid runs and the gate's pilots; with pilots and no grid
    run it holds the gate and empty arms, and ``grid`` says why no run is there. None when there is neither."""
    results = _finished_results(out, arms)
    gate_path = out / "gate.json"
    gate = json.loads(gate_path.read_text()) if gate_path.is_file() else None
    if not results and gate is None:
        return None
    policy_record = {}
    built = Path(assets["policy"]) / "built.json"
    if built.is_file():
        policy_record = json.loads(built.read_text())
    summary = aggregate(
        results,
        {arm.name: arm.summary for arm in arms},
        dataclasses.asdict(plan),
        {"policy": str(assets["policy"]), "policy_build": policy_record, **{k: str(v) for k, v in assets.items()}},
    )
    summary["gate"] = gate
    if results:
        summary["grid"] = "ran"
    elif gate is not None and not gate["passed"] and gate.get("complete", True):
        summary["grid"] = "not run: no candidate of the gate passed"
    else:
        summary["grid"] = "not run yet"
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    os.replace(tmp, out / "results.json")
    if results:  # no report of a grid that has not run
        write_report(summary, out)
    return summary


class _Stopped(Exception):
    """SIGTERM or SIGHUP: stop the run in progress (its recipe's supervisor stops everything it started)."""


def _raise_stopped(signum, frame):
    raise _Stopped(signal.Signals(signum).name)


def run(args: argparse.Namespace) -> int:
    """The grid, with SIGTERM and SIGHUP turned into an exception (as SIGINT already is), so that a stopped grid
    stops its run in progress and leaves nothing running; the run is redone from nothing next time."""
    previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _run(args)
    except _Stopped as stopped:
        print(f"stopped ({stopped}): the unfinished run will start again from nothing", file=sys.stderr, flush=True)
        return 128 + signal.Signals[str(stopped)].value
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run(args: argparse.Namespace) -> int:
    out = _check_out(args.out)
    trainer = _trainer(args.trainer)
    arms = _arms(args.arms, args.quick, trainer)
    # The fast grid's default: the pre-registered seed counts (6 an arm, 8 for the noisy judge's pair)
    default_seeds = 1 if args.quick else (GRID_MIN_SEEDS["default"] if trainer == "fast" else 4)
    seeds = _count_flag("--seeds", args.seeds if args.seeds is not None else default_seeds, MAX_SEEDS)
    per_arm = GRID_MIN_SEEDS if (trainer == "fast" and not args.quick and args.seeds is None) else {}
    # One at a time, --quick too: two trainers starting side by side on 2 cores gained nothing here (264 s for both
    # at once, 250 s one after the other, 2026-12-04), and on CI's machine the second ran past its run's bound
    # without logging a step while the first finished.
    jobs = _count_flag("--jobs", args.jobs, MAX_JOBS)
    if not (RECIPES / "rlvr.sh").is_file():
        raise InputError(f"the experiment recipes are not at {RECIPES} (run from a clone of the repository)")
    plan = _plan(args.quick, trainer)
    record = _experiment_record(plan, args.quick)
    if args.policy is not None:
        record["policy"] = str(args.policy.resolve())
    default_candidates = (Candidate(plan.learning_rate, plan.prompts_per_step, plan.steps),) if args.quick else None
    gate_candidates = candidates(args.candidates, default_candidates or GATE_CANDIDATES)
    gate_seeds = GATE_SEEDS[:1] if args.quick else GATE_SEEDS
    _claim(out, record)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    assets = build_assets(out, plan, args.cache, args.quick, log, args.policy)
    if args.gate:
        register_gate(out, gate_candidates, gate_seeds, plan)
        planned = [
            (Run(ARMS[arm], seed, label=gate_label(candidate, arm)), gate_plan(plan, candidate))
            for seed in gate_seeds
            for candidate in gate_candidates
            for arm in (GATE_REFERENCE_ARM, GATE_ARM)
        ]
    else:
        if not args.quick:
            plan = gated_plan(out, plan)
        planned = [(item, plan) for item in grid_runs(arms, seeds, per_arm)]
    if args.report_only:
        summary = write_results(out, arms, plan, assets)
        log(f"results: {out / 'results.json'}" if summary else "no finished run yet")
        return 0
    todo = [(r, p) for r, p in planned if not is_finished(r, out)]
    what = (
        f"{_count(len(gate_candidates), 'candidate')} x {_count(len(gate_seeds), 'seed')} x 2 arms of the gate"
        if args.gate
        else f"{_count(len(arms), 'arm')} x {_count(seeds, 'seed')}"
        + (" (the noisy judge's pair: 8)" if per_arm else "")
    )
    log(f"{_count(len(planned), 'run')} ({what}), {len(planned) - len(todo)} finished, {len(todo)} to run")
    failed = []
    durations = [
        json.loads((r.folder(out) / "result.json").read_text()).get("wall_s", 0.0)
        for r, _ in planned
        if is_finished(r, out)
    ]
    lock, stop = threading.Lock(), threading.Event()

    def attempt(index: int, pair) -> None:
        item, item_plan = pair
        with lock:
            number = [r for r, _ in planned].index(item) + 1
            mean_s = sum(durations) / len(durations) if durations else None
            threads = 1 if jobs > 1 else None
            eta = f", ETA {(len(todo) - index) * mean_s / 60 / jobs:.0f} min" if mean_s else ""
            head = f"run {number} of {len(planned)}: {item.name} seed {item.seed}{eta}"
            log(head)
        started = time.monotonic()
        rc, result = run_one(
            item, item_plan, assets, out, lambda line: log(f"  {head}: {line}"), stop if jobs > 1 else None, threads
        )
        with lock:  # one writer of results.json and the report at a time
            if result is None:
                failed.append(item)
                log(f"  {head}: failed (exit {rc}); see {item.folder(out) / 'experiment.log'}")
            else:
                durations.append(time.monotonic() - started)
                log(f"  {head}: done in {durations[-1]:.0f} s")
                if args.gate:
                    write_gate(out)
                else:
                    write_results(out, arms, plan, assets)

    if jobs == 1:
        for index, pair in enumerate(todo):
            attempt(index, pair)
    else:
        _in_threads(attempt, todo, jobs, stop)
    if args.gate:
        gate = write_gate(out)
        write_results(out, arms, plan, assets)  # the gate's record in results.json too, while no grid run is there
        log(f"gate: {out / 'gate.json'}: " + (f"passed at {gate['chosen']}" if gate["passed"] else "not passed"))
    else:
        summary = write_results(out, arms, plan, assets)
        if summary:
            log(f"results: {out / 'results.json'}, report: {out / 'report.html'}")
    if failed:
        log(f"{len(failed)} run(s) failed: {', '.join(f'{r.name} seed {r.seed}' for r in failed)}; rerun to retry")
        return 1
    return 0


def _count_flag(flag: str, value, high: int) -> int:
    """A whole-number flag in [1, ``high``]; an InputError naming ``flag`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InputError(f"{flag} must be between 1 and {high}, got {value}")
    return value


def _in_threads(attempt, todo: list, jobs: int, stop: threading.Event) -> None:
    """``attempt(index, run)`` for every run, ``jobs`` at once, each in a worker thread. Signals reach the main thread
    only: on one (or any error) ``stop`` is set, so every run in progress stops its recipe, and the error is raised
    once they have."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="run") as pool:
        futures = [pool.submit(attempt, index, item) for index, item in enumerate(todo)]
        try:
            for future in concurrent.futures.as_completed(futures):
                future.result()
        except BaseException:
            stop.set()
            for future in futures:
                future.cancel()  # not started yet: never starts
            concurrent.futures.wait(futures)
            raise


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
