"""Verifiers (layer L2): math (math-verify in a signal-safe worker pool) and multiple choice."""
