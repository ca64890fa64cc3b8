"""verl's parquet layout: one row per prompt, as verl's own preprocessing scripts write it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MATH_SUFFIX", "verl_row", "write_parquet"]

MATH_SUFFIX = "Please reason step by step, and put your final answer within \\boxed{}."


def verl_row(
    data_source: str, user_message: str, ground_truth: str, split: str, index: int, ability: str = "math"
) -> dict:
    """``prompt`` (one user message), ``data_source`` (picks the scorer), ``ability``, ``reward_model`` (the ground
    truth as text) and ``extra_info.split/index``."""
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": user_message}],
        "ability": ability,
        "reward_model": {"style": "rule", "ground_truth": ground_truth},
        "extra_info": {"split": split, "index": index},
    }


def write_parquet(records: list[dict], path: str | Path) -> None:
    """The records as a parquet file (its folder is created)."""
    import pandas as pd

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame.from_records(records).to_parquet(path)
