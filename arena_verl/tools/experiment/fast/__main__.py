"""One recipe run through the fast trainer, configured as ``bash recipes/<recipe>.sh`` would configure verl (the same
environment variables: SETTING, MODEL_PATH, TRAIN_FILES, VAL_FILES, SEED, TOTAL_STEPS, TEST_FREQ, VAL_N, ...)::

    SETTING=cpu MODEL_PATH=... TRAIN_FILES=... VAL_FILES=... TOTAL_STEPS=300 \\
        python -m arena_verl.tools.experiment.fast --recipe arena_live --run-dir runs/x [Hydra overrides ...]

Exit status: 0 every step ran with a finite loss, 1 a non-finite loss, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from arena_verl.core.errors import InputError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", required=True, help="recipes/<recipe>.sh")
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides after the recipe's own")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        from arena_verl.tools.experiment.fast.config import recipe_config
        from arena_verl.tools.experiment.fast.trainer import FastTrainer

        env = {**os.environ, "RUN_DIR": str(args.run_dir)}
        config = recipe_config(args.recipe, env, args.overrides)
        return FastTrainer(config, args.run_dir, log).fit()
    except (InputError, FileNotFoundError) as exc:  # a bad config or setting, an absent data or model file
        log(f"error: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
