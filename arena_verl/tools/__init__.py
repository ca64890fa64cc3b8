"""The ``arena-verl`` commands and other tools (layer L6): demo, analyze, score, recipe, runlog, the supervisor."""
