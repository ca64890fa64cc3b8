"""The ``arena-verl`` commands and other tools (layer L6): demo, analyze, score, recipe, runlog, the supervisor; what
several of them share is in :mod:`arena_verl.tools.common` (no tool imports another)."""
