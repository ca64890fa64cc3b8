"""The GPU branch's log on a Slurm TERM: the recipe used to pipe the trainer through `tee` (`exec > >(tee ...)`), and
a TERM to every process of the step ended `tee` first, so the trainer's shutdown output met a broken pipe (lost
lines, and a Python trainer dying on BrokenPipeError with another exit status). Now the trainer writes train.log
itself and the console follows the file.

A stand-in trainer (a small Python script the fake PYTHON runs for `-m verl.trainer.main_ppo`; the pre-flight runs
the real one) logs during its shutdown after SIGTERM; the whole process group gets the TERM, as from Slurm. No
trainer, no Ray: about 20 s (the pre-flight composes the config).

    .venv/bin/python -m pytest -q tests/integration/test_recipe_signals.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from helpers import paths

REPO = paths.REPO
STAND_IN = """
    import signal, sys, time
    stop = False
    def on_term(signum, frame):
        global stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    print("stand-in: training", flush=True)
    deadline = time.monotonic() + 120
    while not stop and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(1, 6):  # a trainer's shutdown: workers stopped, checkpoints closed, ... each said
        print(f"stand-in: shutdown line {i}", flush=True)
        time.sleep(0.1)
    print("stand-in: done", file=sys.stderr, flush=True)
    sys.exit(7 if stop else 3)
"""
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "${1:-}" = -m ] && [ "${2:-}" = verl.trainer.main_ppo ]; then exec "$REAL_PYTHON" "$STAND_IN"; fi
exec "$REAL_PYTHON" "$@"
"""


def wait_for(condition, what: str, process: subprocess.Popen, timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, f"the recipe exited ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def stand_in_recipe(tmp_path, program: str) -> tuple[dict, Path]:
    """The GPU branch's environment with the fake PYTHON running ``program`` as the trainer; returns it and the run
    folder."""
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(textwrap.dedent(program))
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    for name in ("train.parquet", "val.parquet"):
        (tmp_path / name).write_text("not read here")
    (tmp_path / "policy").mkdir()
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING", "VERL_"))}
    env.update(PYTHON=str(fake), REAL_PYTHON=sys.executable, STAND_IN=str(stand_in), SETTING="node8",
               RUN_DIR=str(run_dir), MODEL_PATH=str(tmp_path / "policy"), TRAIN_FILES=str(tmp_path / "train.parquet"),
               VAL_FILES=str(tmp_path / "val.parquet"))  # fmt: skip
    return env, run_dir


def test_a_caller_that_captures_the_output_gets_it_all_and_its_end(tmp_path):
    """A parent that reaps the recipe only once its pipe closes (subprocess.run with captured output): the console's
    follower must end when the trainer has exited, not when it has been reaped (it waited forever: `tail --pid` takes
    an unreaped process for a live one)."""
    env, run_dir = stand_in_recipe(tmp_path, 'print("stand-in: trained", flush=True)\nraise SystemExit(5)\n')
    result = subprocess.run(["bash", str(REPO / "recipes" / "rlvr.sh")], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=120)  # fmt: skip
    assert result.returncode == 5, result.stderr[-3000:]
    assert "stand-in: trained" in result.stdout and "stand-in: trained" in (run_dir / "train.log").read_text()


def test_a_term_to_every_process_keeps_the_trainers_shutdown_lines_and_its_exit_status(tmp_path):
    env, run_dir = stand_in_recipe(tmp_path, STAND_IN)
    console = tmp_path / "console.txt"
    log = run_dir / "train.log"
    with console.open("w") as out:
        recipe = subprocess.Popen(["bash", str(REPO / "recipes" / "rlvr.sh")], stdout=out, stderr=subprocess.STDOUT,
                                  env=env, cwd=tmp_path, start_new_session=True)  # fmt: skip
    try:
        wait_for(lambda: log.exists() and "stand-in: training" in log.read_text(), "the stand-in's start", recipe)
        # The console still shows the run (a follower of the file), not only the log.
        wait_for(lambda: "stand-in: training" in console.read_text(), "the console's copy", recipe, timeout_s=30)
        os.killpg(recipe.pid, signal.SIGTERM)  # Slurm's TERM reaches every process of the step
        rc = recipe.wait(timeout=60)
    finally:
        if recipe.poll() is None:
            os.killpg(recipe.pid, signal.SIGKILL)
            recipe.wait(timeout=30)
    text = log.read_text()
    assert rc == 7, (rc, text, console.read_text())  # the trainer's own exit status (the recipe exec'd it)
    for i in range(1, 6):
        assert f"stand-in: shutdown line {i}\n" in text, text
    assert "stand-in: done" in text  # stderr too
    assert "BrokenPipeError" not in text + console.read_text()
