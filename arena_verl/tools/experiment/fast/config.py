"""The config verl would receive for a recipe run: the recipe's own command (its ``--dry-run``, with the caller's
environment: SETTING, MODEL_PATH, TRAIN_FILES, VAL_FILES, SEED, ...), composed with Hydra as ``main_ppo`` would
compose it (:func:`arena_verl.tools.common.compose.compose_experiment`). The fast trainer reads every setting from
it, so an arm's loss, estimator, judge and shapes are the recipe's, not a second copy."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

from arena_verl.core.errors import InputError

__all__ = ["recipe_command", "recipe_config"]

RECIPES = Path(__file__).resolve().parents[4] / "recipes"


def recipe_command(recipe: str, env: dict[str, str], overrides: Sequence[str] = ()) -> list[str]:
    """The ``main_ppo`` command ``bash recipes/<recipe>.sh <overrides>`` would run (its dry run's command line)."""
    script = RECIPES / f"{recipe}.sh"
    if not script.is_file():
        raise InputError(f"no recipe {script}")
    shown = subprocess.run(
        ["bash", str(script), "--dry-run", *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    lines = shown.stdout.splitlines()
    if shown.returncode != 0 or "# command" not in lines:
        raise InputError(f"{script} --dry-run failed (exit {shown.returncode}): {shown.stderr.strip()[-2000:]}")
    return shlex.split(lines[lines.index("# command") + 1])


def recipe_config(recipe: str, env: dict[str, str], overrides: Sequence[str] = ()):
    """The composed config of the recipe's command."""
    from arena_verl.tools.common.compose import compose_experiment

    command = recipe_command(recipe, env, overrides)
    options = {w.split("=", 1)[0]: (i, w.split("=", 1)[1]) for i, w in enumerate(command) if w.startswith("--config-")}
    if "--config-name" not in options or "--config-path" not in options:
        raise InputError(f"recipes/{recipe}.sh: no --config-path/--config-name in its command")
    last = max(index for index, _ in options.values())
    return compose_experiment(options["--config-name"][1], command[last + 1 :], Path(options["--config-path"][1]))
