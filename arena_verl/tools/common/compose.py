"""An experiment config as ``python -m verl.trainer.main_ppo --config-path=configs --config-name=NAME`` would
compose it, without importing verl: what ``arena-verl recipe`` shows and checks, and what the experiment's fast trainer
trains with."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CONFIG_DIR", "compose_experiment", "verl_config_dir"]

CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs"  # the repository root's configs/
VERL_CONFIG_PACKAGE = "pkg://verl.trainer.config"  # the search path the experiment configs name


def verl_config_dir() -> Path | None:
    """The folder of verl's packaged trainer configs, found without importing verl (``import verl`` imports torch,
    tensordict and every plugin: about 15 s of a dry run's 20 on 2 cores); None when verl is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("verl")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    folders = [Path(location) / "trainer" / "config" for location in locations]
    return next((folder for folder in folders if (folder / "ppo_trainer.yaml").is_file()), None)


def compose_experiment(config_name: str, overrides: Sequence[str] = (), config_dir: Path = CONFIG_DIR):
    """The config ``python -m verl.trainer.main_ppo --config-path=<config_dir> --config-name=<config_name> <overrides>``
    would run with (hydra.* overrides are dropped: they steer Hydra's run, not the trainer). verl's configs are read
    from their folder (the same files ``pkg://verl.trainer.config`` names) so that composing does not import verl."""
    from hydra import compose, initialize_config_dir

    trainer_overrides = [o for o in overrides if not o.lstrip("+~").startswith("hydra.")]
    search_path = _search_path_without_import(Path(config_dir) / f"{config_name}.yaml")
    if search_path is not None:
        trainer_overrides = [f"hydra.searchpath=[{','.join(search_path)}]", *trainer_overrides]
    with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base=None):
        return compose(config_name, overrides=trainer_overrides)


def _search_path_without_import(config_file: Path) -> list[str] | None:
    """The primary config's ``hydra.searchpath`` with verl's package replaced by its folder; None (compose as
    written) when there is nothing to replace, verl is not installed, or a path would need quoting."""
    import yaml

    try:
        search_path = (yaml.safe_load(config_file.read_text()) or {}).get("hydra", {}).get("searchpath")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    folder = verl_config_dir()
    if not isinstance(search_path, list) or VERL_CONFIG_PACKAGE not in search_path or folder is None:
        return None
    replaced = [f"file://{folder}" if entry == VERL_CONFIG_PACKAGE else entry for entry in search_path]
    plain = all(isinstance(entry, str) and re.fullmatch(r"[\w./:+-]+", entry) for entry in replaced)
    return replaced if plain else None
