"""``docs/metrics.md`` and the code agree on the per-step metrics: every name the per-step sections document is one
the code logs, and every name the code logs is documented.

What the code logs is read from the code that makes each step's log: the referee's counters and the figures derived
from them (``core/referee/metrics.py``: ``COUNTERS``, ``derive_metrics``), what the tracker hook adds per step
(``verl_edge/tracking.py``: ``ArenaMetricsReader.step_metrics``, ``generation_metrics``) and the advantage figures of
the arena's estimator (``verl_edge/advantage.py``: ``route_figures``). The documented names are
the ``arena/...`` names of the per-step sections (``a_b|c`` stands for ``a_b`` and ``a_c``), and the bare counter
names of the "and the counters ..." paragraph, which the tracker logs as ``arena/<counter>`` (backticked words inside
parentheses there are explanations, not names).
"""

import re
import sys
import types
from pathlib import Path

from arena_verl.core.referee.metrics import COUNTERS, derive_metrics
from arena_verl.settings import arena_settings
from arena_verl.verl_edge.advantage import ROUTES, route_figures
from arena_verl.verl_edge.tracking import ArenaMetricsReader, generation_metrics

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
_PREFIX = "arena/"
_NAME = re.compile(r"(arena/)?[a-z][a-z0-9_]*(\|[a-z][a-z0-9_]*)*")
# The list of counters in the "Per step" section: from these words to the end of their paragraph.
_COUNTER_LIST_START = "and the counters"


def _unreachable(shard: int):
    raise ConnectionError(f"referee shard {shard} is not up")  # the reader logs no shard's counters, its own only


def emitted_names(monkeypatch) -> set[str]:
    """Every per-step name the code logs: the derived figures of counts where every counter is non-zero (so that the
    figures left out of a step with nothing to measure are there too), plus the tracker hook's own."""
    names = set(derive_metrics({key: 1.0 for key in COUNTERS}))
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))  # no referee shard is read: no Ray needed
    names |= set(ArenaMetricsReader(arena_settings(), read_shard=_unreachable).step_metrics())
    names |= set(generation_metrics({}, prompts_per_batch=1, group_size=1))
    names |= set(route_figures([1.0] * len(ROUTES), ROUTES))
    return names


def _expand(token: str) -> list[str]:
    """``fallback_deadline|judge_error`` -> ``fallback_deadline``, ``fallback_judge_error``."""
    first, *rest = token.split("|")
    stem = first[: first.index("_") + 1] if rest else ""
    return [first, *(stem + other for other in rest)]


def _backticked(text: str) -> list[tuple[str, int]]:
    """``(token, parenthesis depth)`` of each backticked token of ``text`` (depth counted outside backticks)."""
    out, depth = [], 0
    for index, part in enumerate(text.split("`")):
        if index % 2:
            out.append((part, depth))
            continue
        for char in part:
            depth = depth + 1 if char == "(" else max(0, depth - 1) if char == ")" else depth
    return out


def documented_names(doc: str) -> set[str]:
    per_step = doc[doc.index("## Per step") :]
    names: set[str] = set()
    for token, _ in _backticked(per_step):
        if _NAME.fullmatch(token) and token.startswith(_PREFIX):
            names.update(_PREFIX + name for name in _expand(token[len(_PREFIX) :]))
    start = per_step.index(_COUNTER_LIST_START)
    end = per_step.find("\n\n", start)  # the paragraph's end
    counters = per_step[start : end if end >= 0 else None]
    for token, depth in _backticked(counters):
        if depth == 0 and _NAME.fullmatch(token):
            names.update(_PREFIX + name for name in _expand(token.removeprefix(_PREFIX)))
    return names


def test_every_documented_per_step_metric_is_logged(monkeypatch):
    documented, emitted = documented_names(DOC.read_text(encoding="utf-8")), emitted_names(monkeypatch)
    assert sorted(documented - emitted) == [], "docs/metrics.md names per-step metrics the code does not log"


def test_every_logged_per_step_metric_is_documented(monkeypatch):
    documented, emitted = documented_names(DOC.read_text(encoding="utf-8")), emitted_names(monkeypatch)
    assert sorted(emitted - documented) == [], "the code logs per-step metrics docs/metrics.md does not name"


def test_the_doc_check_can_fail():
    doc = (
        "## Per step\n`arena/alpha` and the counters `arena/groups`, `no_such_counter` (a `completion_grace` "
        "note), `fallback_deadline|late`, and `arena/tail_after_last_sample_s`.\n\nThen `grpo`."
    )
    assert documented_names(doc) == {
        "arena/alpha",
        "arena/groups",
        "arena/no_such_counter",
        "arena/fallback_deadline",
        "arena/fallback_late",
        "arena/tail_after_last_sample_s",
    }
