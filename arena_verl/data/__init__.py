"""Data (layer L2): verl parquet rows, rollout dumps, metrics logs, benchmark presets."""
