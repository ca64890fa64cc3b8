"""Run the grid of arms x seeds through the experiment recipes, one run at a time, resumably.

A run is ``bash recipes/<recipe>.sh <overrides>`` with ``SETTING=cpu``, the warmed policy as ``MODEL_PATH``, the
generated splits as ``TRAIN_FILES``/``VAL_FILES`` and ``SEED``: exactly what a user types. A run is finished when its
``result.json`` is written (every planned step logged once); a finished run is never redone, an unfinished one
(interrupted, failed) is started again from nothing, so that every published curve comes from one uninterrupted run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arena_verl.tools.experiment.arms import Arm, Plan
from arena_verl.tools.experiment.curves import run_curves
from arena_verl.tools.experiment.measures import split_questions, validation_figures

__all__ = ["Run", "RECIPES", "RunStopped", "grid_runs", "run_one"]

RECIPES = Path(__file__).resolve().parents[3] / "recipes"
_POLL_S = 5.0
_GRACE_S = 120.0  # past the run's bound plus this, the experiment stops it itself (the fast trainer has no supervisor)
# The recipe's environment variables a run sets (recorded in its command.json).
_RECIPE_ENV = (
    "SETTING",
    "MODEL_PATH",
    "TRAIN_FILES",
    "VAL_FILES",
    "SEED",
    "RUN_DIR",
    "TOTAL_STEPS",
    "TEST_FREQ",
    "SAVE_FREQ",
    "VAL_N",
    "VAL_TEMPERATURE",
    "TIMEOUT_S",
    "LOGGER",
    "EXPERIMENT_NAME",
    "JUDGE_PLACEMENT",
    "JUDGE",
    "JUDGE_CALLABLE",
)


@dataclass(frozen=True)
class Run:
    arm: Arm
    seed: int
    label: str | None = None  # the run's folder under runs/ when not its arm's name (the gate's pilots)

    @property
    def name(self) -> str:
        return self.label or self.arm.name

    def folder(self, out: Path) -> Path:
        return out / "runs" / self.name / f"seed{self.seed}"


def grid_runs(arms: list[Arm], seeds: int, per_arm: dict[str, int] | None = None) -> list[Run]:
    """Seed-major order: every arm's first seed before any arm's second, so an interrupted grid has comparable arms.
    ``per_arm``: an arm's own seed count where it differs from ``seeds``."""
    counts = {arm.name: (per_arm or {}).get(arm.name, seeds) for arm in arms}
    return [
        Run(arm, seed)
        for seed in range(max(counts.values(), default=0))
        for arm in arms
        if seed < counts[arm.name] and not (arm.cost_only and seed > 0)
    ]


def is_finished(run: Run, out: Path) -> bool:
    return (run.folder(out) / "result.json").is_file()


def run_environment(
    run: Run, plan: Plan, assets: dict[str, Path], folder: Path, threads: int | None = None
) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("RAY_ADDRESS", "VERL_PLATFORM", "JUDGE", "JUDGE_CALLABLE", "JUDGE_PLACEMENT", "JUDGE_MODEL"):
        env.pop(name, None)  # the recipe's CPU branch sets what it needs; nothing of the caller's shell leaks in
    env.update(
        SETTING="cpu",
        MODEL_PATH=str(assets["policy"]),
        TRAIN_FILES=str(assets["train"]),
        VAL_FILES=",".join(str(assets[name]) for name in plan.val_splits),
        SEED=str(run.seed),
        RUN_DIR=str(folder),
        TOTAL_STEPS=str(plan.steps),
        TEST_FREQ=str(plan.test_freq),
        SAVE_FREQ="-1",
        VAL_N=str(plan.val_n),
        # Validation samples as the rollout does (temperature 1, top-p 1): the distribution RL trains is the one
        # measured. At the recipe's top-p 0.95 the tail that RLVR's sharpening removes is cut already, so a policy
        # whose training batches improve can look unmoved (docs/benchmarks/learning.md).
        VAL_TEMPERATURE="1.0",
        VAL_TOP_P="1.0",
        TIMEOUT_S=str(plan.timeout_s),
        LOGGER="[console,file]",
        EXPERIMENT_NAME=f"{run.name}-seed{run.seed}",
        RECIPE_NO_EXEC="0",
    )
    if threads and plan.trainer == "fast":  # runs side by side: one thread each (measured for the fast trainer)
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    if run.arm.judge:
        env.update(JUDGE_PLACEMENT="local", JUDGE="python", JUDGE_CALLABLE=run.arm.judge)
    return env


def run_command(run: Run, plan: Plan, folder: Path) -> list[str]:
    """verl's trainer: the arm's recipe; the fast trainer: the same recipe's config, trained in one process."""
    if plan.trainer == "fast":
        head = [sys.executable, "-m", "arena_verl.tools.experiment.fast", "--recipe", run.arm.recipe, "--run-dir"]
        return [*head, str(folder), *run_overrides(run, plan, folder)]
    if plan.trainer != "verl":
        raise ValueError(f"unknown trainer {plan.trainer!r} (verl or fast)")
    return ["bash", str(RECIPES / f"{run.arm.recipe}.sh"), *run_overrides(run, plan, folder)]


def run_overrides(run: Run, plan: Plan, folder: Path) -> list[str]:
    overrides = [
        *plan.overrides(),
        f"trainer.rollout_data_dir='{folder / 'rollout'}'",
        f"trainer.validation_data_dir='{folder / 'validation'}'",
        *run.arm.overrides,
    ]
    if run.arm.lr_scale != 1.0:
        overrides.append(f"actor_rollout_ref.actor.optim.lr={plan.learning_rate * run.arm.lr_scale!r}")
    if run.arm.judge:
        knobs = {**run.arm.judge_kwargs, "seed": run.seed}
        inner = ",".join(f"{name}:{_hydra_value(value)}" for name, value in sorted(knobs.items()))
        overrides.append(f"reward.arena.judge.callable_kwargs={{{inner}}}")
    return overrides


def _hydra_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    raise ValueError(f"a judge knob must be a number, got {value!r}")


class RunStopped(Exception):
    """``stop`` was set while the run was in progress: its recipe was stopped (everything it started with it)."""


def run_one(
    run: Run,
    plan: Plan,
    assets: dict[str, Path],
    out: Path,
    progress: Callable[[str], None],
    stop: threading.Event | None = None,
    threads: int | None = None,
) -> tuple[int, dict | None]:
    """Run ``run`` from nothing; returns (the recipe's exit status, the run's curves when every step was logged).
    ``stop`` (a run in a worker thread, which no signal reaches): once set, the recipe is stopped and
    :class:`RunStopped` raised."""
    folder = run.folder(out)
    if folder.exists():
        progress(f"{run.name} seed {run.seed}: an unfinished attempt is there; starting it again from nothing")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    command = run_command(run, plan, folder)
    env = run_environment(run, plan, assets, folder, threads)
    revision = code_revision()
    record = {"command": command, "env": _recipe_env(env), "revision": revision}
    (folder / "command.json").write_text(json.dumps(record, indent=1))
    started = time.monotonic()
    with open(folder / "experiment.log", "wb") as log:
        child = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            last, watch = None, _StepWatch(folder)
            while True:
                if stop is not None and stop.is_set():
                    raise RunStopped(f"{run.name} seed {run.seed}")
                try:
                    rc = child.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - started > plan.timeout_s + _GRACE_S:  # the run's own bound did not hold
                        progress(f"past its bound of {plan.timeout_s} s: stopped")
                        _stop(child)
                        rc = 124
                        break
                    step = watch()
                    if step != last:
                        last = step
                        elapsed = time.monotonic() - started
                        progress(f"step {step or 0}/{plan.steps} ({elapsed:.0f} s)")
        except BaseException:
            # Interrupted: the recipe's supervisor stops everything the run started when it gets the signal.
            _stop(child)
            raise
    wall = time.monotonic() - started
    curves = run_curves(folder)
    if rc != 0 or curves["steps_logged"] != list(range(1, plan.steps + 1)):
        return rc or 1, None
    start, end = validation_ends(folder, assets, plan)
    curve = validation_curve(folder, assets, plan, curves["steps"])
    per_step = folder / "per_step.jsonl"
    per_step.write_text("".join(json.dumps(row) + "\n" for row in curves["steps"]))
    result = {
        "arm": run.arm.name,
        "seed": run.seed,
        "trainer": plan.trainer,
        "learning_rate": plan.learning_rate * run.arm.lr_scale,
        "warmup_steps": plan.warmup_steps,
        "prompts_per_step": plan.prompts_per_step,
        "revision": revision,
        "wall_s": round(wall, 1),
        "start": start,
        "end": end,
        "per_step": per_step.name,
        "val_curve": curve,
        **curves,
    }
    tmp = folder / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, folder / "result.json")
    return 0, result


def code_revision() -> str | None:
    """The commit the recipes run from (``+dirty`` when tracked files differ from it); None outside a git clone."""
    root = RECIPES.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def validation_ends(folder: Path, assets: dict[str, Path], plan: Plan) -> tuple[dict, dict]:
    """The figures of the validation before training (step 0) and of the last one, per validation split, from verl's
    validation dumps; ``{}`` for one that was not dumped."""
    questions = split_questions({name: Path(assets[name]) for name in plan.val_splits})
    dumps = {int(p.stem): p for p in (folder / "validation").glob("*.jsonl") if p.stem.isdigit()}
    start = validation_figures(dumps[0], questions) if 0 in dumps else {}
    last = max(dumps, default=None)
    end = validation_figures(dumps[last], questions) if last else {}
    return start, end


def validation_curve(folder: Path, assets: dict[str, Path], plan: Plan, steps: list[dict]) -> list[dict]:
    """Every validation of the run (step 0 the one before training): its step, the generations trained on by then,
    and per split the pass rate and the valid prefix (mean and standard error), from verl's validation dumps."""
    questions = split_questions({name: Path(assets[name]) for name in plan.val_splits})
    generations = {row["step"]: row.get("generations_cumulative") for row in steps}
    rows = []
    for dump in sorted((folder / "validation").glob("*.jsonl"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1):
        if not dump.stem.isdigit():
            continue
        step = int(dump.stem)
        figures = validation_figures(dump, questions)
        row = {"step": step, "generations_cumulative": generations.get(step, 0.0 if step == 0 else None)}
        for split, value in figures.items():
            row[split] = {m: {k: value[m][k] for k in ("mean", "se")} for m in ("pass", "prefix")}
        rows.append(row)
    return rows


def _recipe_env(env: dict[str, str]) -> dict[str, str]:
    return {name: env[name] for name in _RECIPE_ENV if name in env}


class _StepWatch:
    """The last training step logged in a run's metrics files, reading only what was appended since the last look (a
    rescan of the whole file every poll cost a core's third by step 130 of a fast run)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.offsets: dict[Path, int] = {}
        self.last: int | None = None

    def __call__(self) -> int | None:
        for path in sorted((self.folder / "metrics").glob("*.jsonl")):
            try:
                with open(path, "rb") as handle:
                    handle.seek(self.offsets.get(path, 0))
                    chunk = handle.read()
            except OSError:
                continue
            complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits for the next look
            self.offsets[path] = self.offsets.get(path, 0) + len(complete)
            for line in complete.splitlines():
                try:
                    step = json.loads(line).get("data", {}).get("training/global_step")
                except (ValueError, AttributeError):
                    continue
                if isinstance(step, (int, float)) and not isinstance(step, bool):
                    self.last = max(self.last or 0, int(step))
        return self.last


def _stop(child: subprocess.Popen, grace_s: float = 30.0) -> None:
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=grace_s)
    except (ProcessLookupError, PermissionError):
        return
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    print("", file=sys.stderr)
