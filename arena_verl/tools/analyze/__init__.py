"""Analysis of rollout dumps (``arena-verl analyze``): the non-diverse share of a run's GRPO groups, the
zero-advantage samples the arena recovers, judge cost, reward and length distributions; an HTML report with plots.

groups (dump -> verified groups) -> summary (the numbers) -> report (PNGs, index.html, summary.json); command is the
command line.
"""

from arena_verl.evaluation.groups import Group, read_groups
from arena_verl.tools.analyze.summary import count_groups, summarise

__all__ = ["Group", "read_groups", "count_groups", "summarise"]
