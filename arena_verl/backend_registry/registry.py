"""The registry itself: the entry type and the table (the package's ``__init__`` adds the built-in entries)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena_verl.core.fields import Part
from arena_verl.core.plugin_loader import load_plugins

__all__ = ["JudgeBackend", "BACKENDS", "register", "backend_of", "backend_names", "option_types", "spec_error"]

_KEY = "reward.arena.judge"


@dataclass(frozen=True)
class JudgeBackend:
    """One judge backend: its options, how it is built, named on the command line, placed and pre-flighted."""

    name: str  # reward.arena.judge.backend
    options: type  # its own keys: a Part dataclass (PREFIX reward.arena.judge)
    # (JudgeSettings) -> Judge: a callable, or its path "package.module:attribute" (imported when a judge is built)
    factory: str | Callable[[Any], Any]
    spec_form: str  # its --judge form, e.g. "vllm:PATH"
    parse_spec: Callable[[str], dict[str, Any]]  # a --judge spec -> reward.arena.judge keys (backend excluded)
    format_spec: Callable[[Any], str]  # JudgeSettings -> the canonical spec (score files record it)
    # Its own start-up rules beyond what the facts below require, run when the judge will run: (JudgeSettings) -> None.
    validate: Callable[[Any], None] | None = None
    model_folder: bool = False  # judge.model_path is a local model folder it loads: required, and must exist
    needs_url: bool = False  # judge.base_url (or judge.base_url_file) is required
    verl_router: bool = False  # judge.base_url may be "verl": the judge verl serves, through verl's router
    # A served judge: the path of its requests under each base URL (one rule: core/urls.request_url), which is also
    # a replica's identity; None: not served over HTTP.
    request_path: str | None = None
    # A served judge's readiness probe, "package.module:function": (argv) -> exit code, argv "URL [--timeout S]
    # [--expect-model NAME] [--api-key-env VAR]", 0 up, 1 not up yet, 2 never (fix a setting): arena_verl.judge.probe's;
    # the recipes run it before a run starts (python -m arena_verl.backend_registry probe NAME ...). None: no probe.
    probe: str | None = None
    label_probabilities: bool = True  # it can read label probabilities (judge.verdict=probability)
    # Which tokenizer counts its traces, checked by the recipes' pre-flight: "model_path" (its model folder's),
    # "tokenizer" (judge.tokenizer, when set), or None (it reads no tokens).
    tokenizer: str | None = None
    gpu_engines: bool = False  # its engines are Ray actors on GPUs of their own (placed; the tools start Ray)
    prompts: bool = True  # renders the judge templates (checked at start-up)
    retries: bool = True  # a call is retried and re-asked (bounded by judge.call_budget_s), else by timeout_s alone
    simulated: bool = False  # verdicts are synthetic (no model): the tools say so
    # The judge layer's start-up check of what the settings cannot check without importing user code (the python
    # backend imports its function): "package.module:function" (JudgeSettings) -> None, or None.
    preflight: str | None = None

    def __post_init__(self):
        if not (dataclasses.is_dataclass(self.options) and issubclass(self.options, Part)):
            raise TypeError(f"judge backend {self.name!r}: options must be a Part dataclass, got {self.options!r}")
        if self.options.PREFIX != _KEY:
            raise ValueError(f"judge backend {self.name!r}: its options' PREFIX must be {_KEY!r}")
        if self.request_path is not None and not self.request_path.startswith("/"):
            raise ValueError(
                f"judge backend {self.name!r}: request_path must start with '/', got {self.request_path!r}"
            )


BACKENDS: dict[str, JudgeBackend] = {}


def register(backend: JudgeBackend) -> JudgeBackend:
    """Add ``backend`` (a name already taken is an error: replace an entry by assigning ``BACKENDS[name]``). A key
    another backend declares too must mean the same: the same type and default (verl's yaml lists each key once)."""
    if backend.name in BACKENDS:
        raise ValueError(f"judge backend {backend.name!r} is registered already")
    mine, my_hints = {f.name: f for f in dataclasses.fields(backend.options)}, typing.get_type_hints(backend.options)
    for other in BACKENDS.values():
        their_hints = typing.get_type_hints(other.options)
        for theirs in dataclasses.fields(other.options):
            ours = mine.get(theirs.name)
            if ours is None:
                continue
            declared = (their_hints[theirs.name], _default(theirs))
            if (my_hints[ours.name], _default(ours)) != declared:
                raise ValueError(
                    f"judge backend {backend.name!r}: {_KEY}.{ours.name} is declared by the {other.name} backend as "
                    f"{declared[0]} = {declared[1]!r}, here as {my_hints[ours.name]} = {_default(ours)!r}: one key "
                    "means one thing (rename yours)"
                )
    BACKENDS[backend.name] = backend
    return backend


def _default(field: dataclasses.Field) -> Any:
    return field.default_factory() if field.default is dataclasses.MISSING else field.default


def backend_names() -> tuple[str, ...]:
    load_plugins()
    return tuple(BACKENDS)


def option_types() -> dict[str, type]:
    """Each backend's options type, by name (what the settings' reader reads ``reward.arena.judge`` into)."""
    load_plugins()
    return {name: entry.options for name, entry in BACKENDS.items()}


def backend_of(judge: Any) -> JudgeBackend:
    """The registry entry of ``judge.backend`` (a JudgeSettings, or a backend name); a ``ValueError`` naming the key."""
    load_plugins()
    name = judge if isinstance(judge, str) else judge.backend
    try:
        return BACKENDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"{_KEY}.backend must be one of {tuple(BACKENDS)}, got {name!r}") from None


def spec_error(spec: Any, reason: str) -> ValueError:
    forms = ", ".join(entry.spec_form for entry in BACKENDS.values())
    return ValueError(f"judge {spec!r}: {reason}; expected one of {forms}")
