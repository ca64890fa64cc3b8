"""Evaluation helpers (pure numpy): unbiased pass@k and the average pass ratio, per benchmark."""

from arena_verl.evaluation.pass_at_k import average_pass_ratio, pass_at_k

__all__ = ["pass_at_k", "average_pass_ratio"]
