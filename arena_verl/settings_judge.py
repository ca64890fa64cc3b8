"""The judge's block of the settings, ``reward.arena.judge.*``: :class:`JudgeSettings`, its common keys and the
chosen backend's own options (``options``, a part declared with the backend's registry entry:
:mod:`arena_verl.backend_registry`), and how long one judge call may take."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena_verl.backend_registry import backend_names, backend_of, option_types
from arena_verl.core.fields import DAY_S, Part, chosen_part, key_fields, read_part, setting
from arena_verl.core.names import PROBABILITY_READS_PER_VERDICT, VERDICT_MODES

__all__ = ["JudgeSettings", "judge_settings", "judge_call_bound_s", "call_bound_text", "MAX_RETRIES"]

_KEY = "reward.arena.judge"
MAX_RETRIES = 100  # the call budget doubles its backoff with each retry


@dataclass(frozen=True)
class JudgeSettings(Part):
    """``reward.arena.judge.*``: which judge, its prompts, how hard to try before a call counts as failed, and the
    backend's own options (``options``: the keys of ``backend``'s registry entry, beside these)."""

    PREFIX = _KEY
    backend: str = setting("simulated", choices=backend_names, help="which judge ([judges](judges.md))")
    # Prompts (model-backed judges).
    pairwise_template: str | None = setting(
        None,
        help="null: by task (math, code, generic); or a built-in name or a template file, checked at start-up "
        "(readable, with `{first}` and `{second}`)",
    )
    pointwise_template: str = setting(
        "pointwise", help="built-in name or template file, checked at start-up (readable, with `{trace}`)"
    )
    show_reference: bool = setting(
        False, help="show the reference answer to the judge (routed groups share one verifier outcome)"
    )
    max_trace_tokens: int = setting(
        4096, low=1, help="per trace, head and tail kept (judge tokenizer; without one, UTF-8 bytes)"
    )
    verdict: str = setting(
        "generate",
        choices=VERDICT_MODES,
        help="`generate`: a generated verdict, parsed; `probability`: the labels' next-token probabilities at the "
        "verdict position, renormalised, give an outcome in [0, 1] (a backend that cannot read them refuses it)",
    )
    think_first: bool = setting(
        False, help="probability mode: generate the reasoning (up to `max_new_tokens`) before the verdict position"
    )
    low_mass_floor: float = setting(
        0.5,
        low=0.0,
        high=1.0,
        help="probability mode: a call whose labels get less probability mass than this is counted as low-mass",
    )
    # Calls.
    max_concurrency: int = setting(
        32,
        low=1,
        help="calls in flight per judge pool: the referee shards share it (each takes "
        "`ceil(max_concurrency / num_referees)`)",
    )
    timeout_s: float = setting(
        120.0, low=0.0, high=DAY_S, low_open=True, help="one generation (python: one call of the function, not retried)"
    )
    retries: int = setting(
        2,
        low=0,
        high=MAX_RETRIES,
        help="transient errors (timeouts, HTTP 5xx and 429, a dead engine): retries with exponential backoff "
        "(`arena_setting=paper` sets 1)",
    )
    backoff_s: float = setting(1.0, low=0.0, high=3600.0, help="backoff base (doubling)")
    parse_retries: int = setting(
        1, low=0, high=MAX_RETRIES, help="re-asks after an unparsable verdict (at `retry_temperature`)"
    )
    temperature: float = setting(0.0, low=0.0, high=100.0, help="sampling temperature")
    retry_temperature: float = setting(0.7, low=0.0, high=100.0, help="temperature of a re-ask")
    top_p: float = setting(1.0, low=0.0, high=1.0, low_open=True, help="nucleus sampling")
    max_new_tokens: int = setting(
        512,
        low=1,
        help="judge reply length (raise it for reasoning judges: a cut reply has no verdict; `arena_setting=node8` "
        "sets 1024, `paper` 8192)",
    )
    seed: int = setting(0, help="seed of the judge's sampling (vllm) or of the SIMULATED judge's verdicts")
    # The chosen backend's own keys (its registry entry's options type; None: its defaults).
    options: Any = chosen_part(by="backend", types=option_types)

    def __post_init__(self):
        if self.options is None and self.backend in backend_names():
            object.__setattr__(self, "options", backend_of(self.backend).options())
        super().__post_init__()

    def rules(self) -> None:
        expected = backend_of(self.backend).options
        if type(self.options) is not expected:
            raise ValueError(
                f"{_KEY}: the {self.backend} backend's options are {expected.__name__}, got "
                f"{type(self.options).__name__}"
            )
        if self.verdict == "probability" and not backend_of(self.backend).label_probabilities:
            raise ValueError(
                f"{_KEY}.verdict=probability: the {self.backend} backend cannot give label probabilities (its "
                f"registry entry says label_probabilities=False); use {_KEY}.verdict=generate"
            )

    def key(self, name: str) -> Any:
        """The value of the key ``name`` (a common key, or the backend's own); an ``AttributeError`` naming the key
        when neither has it (another backend's key)."""
        if hasattr(self.options, name):
            return getattr(self.options, name)
        if name in self.__dataclass_fields__ and name != "options":
            return getattr(self, name)
        raise AttributeError(f"{_KEY}.{name} is not a key of the {self.backend} backend")

    def as_keys(self) -> dict[str, Any]:
        """The ``reward.arena.judge`` keys that read back to these settings (the backend's own beside the common
        ones): what a config would set."""
        keys = {f.name: getattr(self, f.name) for f in key_fields(type(self))}
        keys.update({f.name: getattr(self.options, f.name) for f in key_fields(type(self.options))})
        return keys

    @property
    def request_path(self) -> str | None:
        """A served judge's request path (its registry entry's)."""
        return backend_of(self.backend).request_path

    @property
    def call_budget_s(self) -> float:
        """The longest one compare/score can take with every retry: the referee's outer timeout. A generated verdict
        is up to ``parse_retries + 1`` generations; a probability verdict up to PROBABILITY_READS_PER_VERDICT reads
        (after a reasoning generation, and as often as ``parse_retries`` allows, with ``think_first``). Each step is
        tried ``retries + 1`` times, each bounded by ``timeout_s``, with the exponential backoff between."""
        per_step = (self.retries + 1) * self.timeout_s + (2 ** (self.retries + 1)) * self.backoff_s
        if self.verdict == "probability":
            steps = PROBABILITY_READS_PER_VERDICT + (1 if self.think_first else 0)
            asks = self.parse_retries + 1 if self.think_first else 1
        else:
            steps, asks = 1, self.parse_retries + 1
        return asks * steps * per_step

    def require(self) -> None:
        """What a judge that will run needs of its backend (a model folder, an address; the backend's own rules):
        a ``ValueError`` naming the key. Templates' files are checked by the judge layer
        (:func:`arena_verl.judge.prompting.templates.check_judge_templates`)."""
        backend = backend_of(self.backend)
        if backend.model_folder and not self.key("model_path"):
            raise ValueError(f"{_KEY}.model_path is required for the {backend.name} backend")
        if backend.needs_url and not self.key("base_url") and not self.key("base_url_file"):
            verl = " ('verl': verl's own router)" if backend.verl_router else ""
            raise ValueError(f"{_KEY}.base_url is required for the {backend.name} backend{verl}")
        if backend.validate is not None:
            backend.validate(self)


def judge_settings(keys: Mapping[str, Any] | None = None, **more: Any) -> JudgeSettings:
    """The judge settings the ``reward.arena.judge`` keys ``keys`` (and ``more``) give, read as a config's are: the
    backend's own keys beside the common ones (``judge_settings(backend="vllm", model_path=...)``)."""
    return read_part(JudgeSettings, {**(keys or {}), **more}, _KEY)


def judge_call_bound_s(judge: JudgeSettings) -> float:
    """The longest one judge call may take at the referee: a backend that does not retry (python) bounds each call by
    ``timeout_s`` alone; every other judge's call is bounded by ``call_budget_s`` (its retries included)."""
    return judge.call_budget_s if backend_of(judge).retries else judge.timeout_s


def call_bound_text(judge: JudgeSettings) -> str:
    """:func:`judge_call_bound_s` with the keys that make it."""
    if not backend_of(judge).retries:
        return f"{judge.timeout_s:g} s ({_KEY}.timeout_s; the {judge.backend} backend does not retry)"
    if judge.verdict == "probability":
        steps = PROBABILITY_READS_PER_VERDICT + (1 if judge.think_first else 0)
        asks = judge.parse_retries + 1 if judge.think_first else 1
        how = f"{steps * asks} reads{' and generations' if judge.think_first else ''} (verdict=probability)"
    else:
        how = f"judge.parse_retries {judge.parse_retries} + 1 generations"
    return (
        f"{judge.call_budget_s:g} s ({_KEY}.call_budget_s: {how}, each tried judge.retries {judge.retries} "
        f"+ 1 times for up to {_KEY}.timeout_s={judge.timeout_s:g} s, with judge.backoff_s="
        f"{judge.backoff_s:g} doubling between)"
    )
