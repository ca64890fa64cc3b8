"""``arena-verl experiment``: the learning experiment, the arena against RLVR, RLVR + DAPO and a random judge, with
verl's real trainer on CPU through the experiment recipes.

    arena-verl experiment --out runs/learning --gate              # the gate's pilots: RLVR must move the policy
    arena-verl experiment --out runs/learning                     # the full grid (hours; resumable), after the gate
    arena-verl experiment --out /tmp/quick --quick                # CI's form: one seed, rlvr and arena_live, 3 steps
    arena-verl experiment --out runs/learning --arms rlvr,arena_live --seeds 1
    arena-verl experiment --out runs/learning --report-only       # results.json and the report from finished runs

It builds what the runs share (the warmed policy, cached by its settings under ``--cache``; under ``OUT/assets`` the
hard training mix, the hard test split, the gate's own hard draw and the fixed all-wrong set), then runs every arm x
seed as ``bash recipes/<recipe>.sh`` with ``SETTING=cpu`` (one at a time by default: a run takes both cores;
``--jobs N``: N at once, whose step times are not comparable with a run alone). A finished run (its ``result.json``)
is never redone; an unfinished one is started again from nothing. After each run ``OUT/results.json``,
``OUT/report.html`` and the PNG plots are written again from every finished run. Progress: one line per change
(run k of n, step, ETA).

**The gate.** ``--gate`` runs RLVR alone at each of ``--learning-rates`` (seed 0), validated on the gate's own hard
draw, and writes ``OUT/gate.json``; the grid runs only once a pilot has moved the policy (its pass rate or its valid
prefix rose by at least three standard errors, neither fell by three), at that pilot's learning rate.

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
from arena_verl.tools.experiment.arms import ARMS, DEFAULT_ARMS, FULL, GATE_ARM, GATE_LEARNING_RATES, QUICK, Plan
from arena_verl.tools.experiment.gate import gate_record, learning_rates
from arena_verl.tools.experiment.grid import RECIPES, Run, grid_runs, is_finished, run_one
from arena_verl.tools.experiment.report import write_report
from arena_verl.tools.experiment.results import aggregate

__all__ = ["configure_parser", "run", "QUICK_ARMS"]

QUICK_ARMS = ("rlvr", "arena_live")  # the control and the arena: two trainer starts in CI
MAX_JOBS = 8
MAX_SEEDS = 20
MAX_PROMPTS_PER_STEP = 256
MAX_STEPS = 1000


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
    parser.add_argument("--gate", action="store_true", help="run the gate's pilots (RLVR alone) instead of the grid")
    parser.add_argument(
        "--learning-rates",
        default=None,
        help="the gate's learning rates, comma-separated (default "
        + ",".join(f"{lr:g}" for lr in GATE_LEARNING_RATES)
        + ")",
    )
    parser.add_argument(
        "--prompts-per-step",
        type=int,
        default=None,
        help=f"the gate's batch: prompts per step (default {FULL.prompts_per_step}; the grid takes its pilot's)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"the gate's training steps (default {FULL.steps}; the grid takes its pilot's)",
    )
    parser.add_argument("--report-only", action="store_true", help="no runs: results and report from finished runs")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs at once (default 1, --quick too). Runs that share the machine slow each other: their "
        "step times are not comparable with a run alone (the learning figures were measured one at a time)",
    )


def _arms(text: str | None, quick: bool) -> list:
    names = [n.strip() for n in text.split(",")] if text else list(QUICK_ARMS if quick else DEFAULT_ARMS)
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
    elif gate is not None and not gate["passed"]:
        summary["grid"] = "not run: no pilot of the gate moved the policy without collapse"
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
    arms = _arms(args.arms, args.quick)
    seeds = _count_flag("--seeds", args.seeds if args.seeds is not None else (1 if args.quick else 4), MAX_SEEDS)
    # One at a time, --quick too: two trainers starting side by side on 2 cores gained nothing here (264 s for both
    # at once, 250 s one after the other, 2026-12-04), and on CI's machine the second ran past its run's bound
    # without logging a step while the first finished.
    jobs = _count_flag("--jobs", args.jobs, MAX_JOBS)
    if not (RECIPES / "rlvr.sh").is_file():
        raise InputError(f"the experiment recipes are not at {RECIPES} (run from a clone of the repository)")
    plan = QUICK if args.quick else FULL
    record = _experiment_record(plan, args.quick)
    if args.policy is not None:
        record["policy"] = str(args.policy.resolve())
    rates = learning_rates(args.learning_rates, GATE_LEARNING_RATES)
    prompts = _count_flag(
        "--prompts-per-step",
        args.prompts_per_step if args.prompts_per_step is not None else plan.prompts_per_step,
        MAX_PROMPTS_PER_STEP,
    )
    steps = _count_flag("--steps", args.steps if args.steps is not None else plan.steps, MAX_STEPS)
    _claim(out, record)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    assets = build_assets(out, plan, args.cache, args.quick, log, args.policy)
    if args.gate:
        planned = [
            (Run(ARMS[GATE_ARM], 0, label=_gate_label(lr, prompts, steps, plan)), gate_plan(plan, lr, prompts, steps))
            for lr in rates
        ]
    else:
        if not args.quick:
            plan = _gated_plan(out, plan)
        planned = [(item, plan) for item in grid_runs(arms, seeds)]
    if args.report_only:
        summary = write_results(out, arms, plan, assets)
        log(f"results: {out / 'results.json'}" if summary else "no finished run yet")
        return 0
    todo = [(r, p) for r, p in planned if not is_finished(r, out)]
    what = (
        f"{_count(len(rates), 'pilot')} of the gate"
        if args.gate
        else f"{_count(len(arms), 'arm')} x {_count(seeds, 'seed')}"
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
            eta = f", ETA {(len(todo) - index) * mean_s / 60 / jobs:.0f} min" if mean_s else ""
            head = f"run {number} of {len(planned)}: {item.name} seed {item.seed}{eta}"
            log(head)
        started = time.monotonic()
        rc, result = run_one(
            item, item_plan, assets, out, lambda line: log(f"  {head}: {line}"), stop if jobs > 1 else None
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
        log(
            f"gate: {out / 'gate.json'}: "
            + (f"passed at {gate['learning_rate']:g}" if gate["passed"] else "not passed")
        )
    else:
        summary = write_results(out, arms, plan, assets)
        if summary:
            log(f"results: {out / 'results.json'}, report: {out / 'report.html'}")
    if failed:
        log(f"{len(failed)} run(s) failed: {', '.join(f'{r.name} seed {r.seed}' for r in failed)}; rerun to retry")
        return 1
    return 0


def _gate_label(rate: float, prompts: int, steps: int, plan: Plan) -> str:
    return (
        f"gate_lr{rate:g}"
        + ("" if prompts == plan.prompts_per_step else f"_p{prompts}")
        + ("" if steps == plan.steps else f"_s{steps}")
    )


def _count_flag(flag: str, value, high: int) -> int:
    """A whole-number flag in [1, ``high``]; an InputError naming ``flag`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InputError(f"{flag} must be between 1 and {high}, got {value}")
    return value


def _trained(plan: Plan, rate: float, prompts: int, steps: int) -> Plan:
    """``plan`` at a learning rate, batch and length, validated before training and after its last step. Its bound
    grows with the samples it trains on (never shrinks): a 64-prompt step took about 140 s here against 4 s at 8, and
    a 30-step pilot at 64 prompts would have outlasted the plan's 30 minutes."""
    work = (prompts * steps) / (plan.prompts_per_step * plan.steps)
    timeout_s = max(plan.timeout_s, math.ceil(plan.timeout_s * work))
    return dataclasses.replace(
        plan, learning_rate=rate, prompts_per_step=prompts, steps=steps, test_freq=steps, timeout_s=timeout_s
    )


def gate_plan(plan: Plan, rate: float, prompts: int | None = None, steps: int | None = None) -> Plan:
    """A pilot's plan: the grid's shapes at ``rate`` (``prompts`` a step, ``steps`` steps when given), validated on
    the gate's own draw before and after training."""
    pilot = _trained(plan, rate, prompts or plan.prompts_per_step, steps or plan.steps)
    return dataclasses.replace(pilot, val_splits=("pilot",))


def write_gate(out: Path) -> dict:
    """``OUT/gate.json`` from every finished pilot."""
    results = []
    for path in sorted((out / "runs").glob("gate_lr*/seed0/result.json")):
        result = json.loads(path.read_text())
        if result.get("prompts_per_step") is None:  # a pilot from before results recorded it: its command has it
            result["prompts_per_step"] = _batch_of(path.parent / "command.json")
        results.append(result)
    record = gate_record(results)
    tmp = out / "gate.json.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, out / "gate.json")
    return record


def _batch_of(command_json: Path) -> int | None:
    """``data.train_batch_size`` as the run's command set it (the last override wins, as in Hydra)."""
    try:
        words = json.loads(command_json.read_text())["command"]
    except (OSError, ValueError, KeyError):
        return None
    sizes = [w.split("=", 1)[1] for w in words if isinstance(w, str) and w.startswith("data.train_batch_size=")]
    return int(sizes[-1]) if sizes and sizes[-1].isdigit() else None


def _gated_plan(out: Path, plan: Plan) -> Plan:
    """The grid's plan at the gate's learning rate; the grid does not run on a policy RLVR did not move."""
    path = out / "gate.json"
    if not path.is_file():
        raise InputError(
            f"no gate in {out}: run the gate's pilots first (--gate); the grid runs on a policy RLVR moves"
        )
    gate = write_gate(out)
    if not gate["passed"]:
        raise InputError(f"{path}: no pilot moved the policy without collapse; the grid is not run (see the pilots)")
    return _trained(plan, gate["learning_rate"], gate["prompts_per_step"], gate["steps"])


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
