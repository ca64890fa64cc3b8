"""Convert a local copy of a paper benchmark (or a training file) to verl's parquet layout.

    python scripts/data/prepare.py list
    python scripts/data/prepare.py aime2025 aime_2025/train.parquet --output data/aime2025.parquet
    python scripts/data/prepare.py gpqa_diamond gpqa_diamond.csv --output data/gpqa_diamond.parquet --seed 0
    python scripts/data/prepare.py livecodebench_v6 lcb/test*.jsonl --output data/lcb_v6.parquet --since 2025-02-01
    python scripts/data/prepare.py train_mix dapo-math-17k.parquet --output data/train.parquet

Nothing is downloaded. Bad input ends with one line naming the file, row and column, and exit code 2.
The command lives in arena_verl/tools/prepare.py; see scripts/data/README.md.
"""

from arena_verl.tools.prepare import main

if __name__ == "__main__":
    raise SystemExit(main())
