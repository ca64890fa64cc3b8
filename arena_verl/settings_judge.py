"""The judge's block of the settings (``reward.arena.judge.*``, :class:`~arena_verl.settings.JudgeSettings`): its
checks at start-up, each backend's own read from the registry (:mod:`arena_verl.backend_registry`), and how long one
judge call may take. The checks :mod:`arena_verl.settings` shares (``_in_range``, ``_one_of``) are written here."""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from arena_verl.backend_registry import backend_of, required_fields
from arena_verl.core.names import PROBABILITY_READS_PER_VERDICT

if TYPE_CHECKING:
    from arena_verl.settings import JudgeSettings

__all__ = ["PYTHON_JUDGE_ARGUMENTS", "validate_judge", "judge_call_bound_s", "call_bound_text"]

_DAY_S = 86_400.0
_PREFIX = "reward.arena"
_MAX_RETRIES = 100
# judge.callable: a dotted module path, a colon, a function name.
_CALLABLE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)
# Keyword arguments the python backend passes itself: callable_kwargs may not name them.
PYTHON_JUDGE_ARGUMENTS = ("problem", "first", "second", "trace")


def judge_call_bound_s(judge: JudgeSettings) -> float:
    """The longest one judge call may take at the referee: a backend that does not retry (python) bounds each call by
    ``timeout_s`` alone; every other judge's call is bounded by ``call_budget_s`` (its retries included)."""
    return judge.call_budget_s if backend_of(judge).retries else judge.timeout_s


def call_bound_text(judge: JudgeSettings) -> str:
    """:func:`judge_call_bound_s` with the keys that make it."""
    if not backend_of(judge).retries:
        return f"{judge.timeout_s:g} s ({_PREFIX}.judge.timeout_s; the {judge.backend} backend does not retry)"
    if judge.verdict == "probability":
        steps = PROBABILITY_READS_PER_VERDICT + (1 if judge.think_first else 0)
        asks = judge.parse_retries + 1 if judge.think_first else 1
        how = f"{steps * asks} reads{' and generations' if judge.think_first else ''} (verdict=probability)"
    else:
        how = f"judge.parse_retries {judge.parse_retries} + 1 generations"
    return (
        f"{judge.call_budget_s:g} s ({_PREFIX}.judge.call_budget_s: {how}, each tried judge.retries {judge.retries} "
        f"+ 1 times for up to {_PREFIX}.judge.timeout_s={judge.timeout_s:g} s, with judge.backoff_s="
        f"{judge.backoff_s:g} doubling between)"
    )


def validate_judge(judge: JudgeSettings, needed: bool = True) -> None:
    """Ranges always; what only a judge that will run needs (a model, an address, templates) when ``needed``."""
    for key in ("max_concurrency", "max_new_tokens", "max_trace_tokens", "num_engines", "tensor_parallel_size"):
        if getattr(judge, key) < 1:
            raise ValueError(f"{_PREFIX}.judge.{key} must be >= 1, got {getattr(judge, key)}")
    for key in ("retries", "parse_retries"):
        if getattr(judge, key) < 0:
            raise ValueError(f"{_PREFIX}.judge.{key} must be >= 0, got {getattr(judge, key)}")
        if getattr(judge, key) > _MAX_RETRIES:  # the call budget doubles its backoff with each retry
            raise ValueError(f"{_PREFIX}.judge.{key} must be <= {_MAX_RETRIES}, got {getattr(judge, key)}")
    _in_range("judge.timeout_s", judge.timeout_s, 0.0, _DAY_S, low_open=True)
    _in_range("judge.backoff_s", judge.backoff_s, 0.0, 3600.0)
    _in_range("judge.start_timeout_s", judge.start_timeout_s, 0.0, _DAY_S, low_open=True)
    _in_range("judge.gpu_memory_utilization", judge.gpu_memory_utilization, 0.0, 1.0, low_open=True)
    _in_range("judge.temperature", judge.temperature, 0.0, 100.0)
    _in_range("judge.retry_temperature", judge.retry_temperature, 0.0, 100.0)
    _in_range("judge.top_p", judge.top_p, 0.0, 1.0, low_open=True)
    _in_range("judge.low_mass_floor", judge.low_mass_floor, 0.0, 1.0)
    _in_range("judge.sim_latency_s", judge.sim_latency_s, 0.0, 3600.0)
    _in_range("judge.sim_latency_sigma", judge.sim_latency_sigma, 0.0, 3.0)
    for key in ("sim_tie_rate", "sim_parse_failure_rate"):
        _in_range(f"judge.{key}", getattr(judge, key), 0.0, 1.0)
    _validate_callable(judge)
    if not needed:  # rlvr: the judge never runs (a shared config may still name one)
        return
    required_fields(judge)  # what its backend needs (a model folder, an address, a function), and its own rules
    # The python backend's function is imported (a missing module or function is an error) when the judge is built and
    # by check_judge_templates, in the judge layer: settings import no user code. The templates' files are checked by
    # the judge layer (arena_verl.judge.prompting.templates.check_judge_templates), which the reward manager, the
    # recipes' pre-flight and the tools' --judge call right after these settings.


def _validate_callable(judge: JudgeSettings) -> None:
    """``judge.callable`` is ``package.module:function``; ``judge.callable_kwargs`` maps keyword-argument names
    (identifiers, not the ones the backend passes itself) to plain values (null, a bool, a finite number, a string)."""
    if judge.callable is not None and (not isinstance(judge.callable, str) or not _CALLABLE.fullmatch(judge.callable)):
        raise ValueError(
            f"{_PREFIX}.judge.callable must be 'package.module:function' (a dotted module path, a colon, a function "
            f"name), got {judge.callable!r}"
        )
    kwargs = judge.callable_kwargs
    if kwargs is None:
        return
    key = f"{_PREFIX}.judge.callable_kwargs"
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{key} must be a mapping of keyword arguments (or null), got {kwargs!r}")
    for name, value in kwargs.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"{key}: {name!r} is not a keyword-argument name")
        if name in PYTHON_JUDGE_ARGUMENTS:
            raise ValueError(
                f"{key}.{name}: the python backend passes {', '.join(PYTHON_JUDGE_ARGUMENTS)} itself; choose another "
                "name"
            )
        plain = value is None or isinstance(value, (bool, int, float, str))
        if not plain:
            raise ValueError(f"{key}.{name} must be a plain value (null, a bool, a number or a string), got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key}.{name} must be a finite number, got {value!r}")


def _in_range(key: str, value: float, low: float, high: float, low_open: bool = False) -> None:
    ok = (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"{_PREFIX}.{key} must be in {bracket}{low:g}, {high:g}], got {value!r}")


def _one_of(key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{_PREFIX}.{key} must be one of {allowed}, got {value!r}")
