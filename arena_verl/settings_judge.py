"""The judge's block of the settings, ``reward.arena.judge.*``: :class:`JudgeSettings`, its common keys and the
chosen backend's own options (``options``, a part declared with the backend's registry entry:
:mod:`arena_verl.backend_registry`), and how long one judge call may take."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena_verl.backend_registry import backend_names, backend_of, option_types
from arena_verl.core.fields import DAY_S, Part, SettingError, chosen_part, key_fields, nested_part, read_part, setting
from arena_verl.core.names import PROBABILITY_READS_PER_VERDICT, VERDICT_MODES

__all__ = [
    "JudgeSettings",
    "EnsembleOptions",
    "ENSEMBLE_COMBINES",
    "ENSEMBLE_SLACK_S",
    "judge_settings",
    "judge_call_bound_s",
    "longest_timeout_s",
    "call_bound_text",
    "MAX_RETRIES",
]

_KEY = "reward.arena.judge"
MAX_RETRIES = 100  # the call budget doubles its backoff with each retry
ENSEMBLE_COMBINES = ("mean", "majority")
# An ensemble call's bound at the referee past its slowest member's own: a member that hangs runs out its bound first
# (its deadline starts a moment after the call's), so the others' verdicts are still combined.
ENSEMBLE_SLACK_S = 1.0
# Keys that say together where a served judge is: a member that sets one of them inherits none of them (a member's
# own address is never replaced by the judge block's URL file).
_ADDRESS_KEYS = ("base_url", "base_url_file")
_MEMBER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")  # a member's name is a part of its metrics' keys


@dataclass(frozen=True)
class EnsembleOptions(Part):
    """``reward.arena.judge.ensemble.*``: further judges that vote with the one the judge block describes (the
    ensemble's first member). Each comparison asks every member (or ``per_comparison`` of them) and combines their
    verdicts into one outcome; no members: one judge, as without this block."""

    PREFIX = f"{_KEY}.ensemble"
    members: tuple[dict[str, Any], ...] = setting(
        (),
        help="further judges, each a mapping of `reward.arena.judge` keys (its own `backend`, replicas, options) "
        "read on top of the judge block's common keys (and its backend's own keys when the backend is the same); "
        "`name` names it in the metrics (default `member1`, ...) ([ensembles](judges.md#judge-ensembles))",
    )
    combine: str = setting(
        "mean",
        choices=ENSEMBLE_COMBINES,
        help="`mean`: the answering members' mean probability; `majority`: 1 or 0 for the side more members "
        "prefer, 0.5 on a tie (pointwise: the median score)",
    )
    per_comparison: int | None = setting(
        None,
        low=1,
        help="members asked per comparison (null: every member); which ones is a seeded hash of the group and the "
        "pair, the same for both presentation orders",
    )
    quorum: int = setting(1, low=1, help="member answers a comparison needs; fewer is a failed call")
    primary_name: str = setting(
        "judge", help="the name of the judge block's own judge (the first member) in the metrics"
    )

    def rules(self) -> None:
        voters = 1 + len(self.members)
        asked = voters if self.per_comparison is None else self.per_comparison
        if asked > voters:
            raise ValueError(f"{self.PREFIX}.per_comparison={asked} is more than the ensemble's {voters} member(s)")
        if self.members and self.quorum > asked:
            raise ValueError(
                f"{self.PREFIX}.quorum={self.quorum} is more than the {asked} member(s) asked per comparison: no "
                "comparison could get a verdict"
            )
        names = [self.primary_name] + [member_name(i + 1, member) for i, member in enumerate(self.members)]
        for name in names:
            if not isinstance(name, str) or not _MEMBER_NAME.fullmatch(name):
                raise ValueError(
                    f"{self.PREFIX}: member name {name!r} must be a letter then up to 39 letters, digits, '_' or '-'"
                )
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"{self.PREFIX}: two members are named {twice[0]!r} (each member's name is its own)")

    @property
    def names(self) -> tuple[str, ...]:
        """Every member's name, the judge block's own first."""
        return (self.primary_name,) + tuple(member_name(i + 1, m) for i, m in enumerate(self.members))


def member_name(index: int, member: Mapping[str, Any]) -> str:
    return member.get("name", f"member{index}")


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
    # Further judges that vote with this one (none: this judge alone).
    ensemble: EnsembleOptions = nested_part(EnsembleOptions)

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
        self.voters()  # each member read now: a bad member key fails at start-up, named

    def voters(self) -> tuple[tuple[str, JudgeSettings], ...]:
        """The judges that vote, by name: this block's own judge (without the ensemble), then each member, read on
        top of this block's common keys (and its backend's own keys when the member's backend is the same). One
        voter without an ensemble."""
        return _voters(self)

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
        if self.ensemble.members:
            keys["ensemble"] = {f.name: getattr(self.ensemble, f.name) for f in key_fields(EnsembleOptions)}
            keys["ensemble"]["members"] = [dict(member) for member in self.ensemble.members]
        return keys

    @property
    def request_path(self) -> str | None:
        """A served judge's request path (its registry entry's)."""
        return backend_of(self.backend).request_path

    @property
    def call_budget_s(self) -> float:
        """The longest one compare/score can take with every retry: the referee's outer timeout (an ensemble's: its
        slowest member's, since the members are asked at once). A generated verdict is up to ``parse_retries + 1``
        generations; a probability verdict up to PROBABILITY_READS_PER_VERDICT reads (after a reasoning generation,
        and as often as ``parse_retries`` allows, with ``think_first``). Each step is tried ``retries + 1`` times,
        each bounded by ``timeout_s``, with the exponential backoff between."""
        voters = self.voters()
        slowest = max(voter._own_call_budget_s() for _, voter in voters)
        return slowest + (ENSEMBLE_SLACK_S if len(voters) > 1 else 0.0)

    def _own_call_budget_s(self) -> float:
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
        for index, (_, member) in enumerate(self.voters()[1:]):
            try:
                member.require()
            except ValueError as exc:
                raise ValueError(_member_error(_member_where(index), exc)) from None


def judge_settings(keys: Mapping[str, Any] | None = None, **more: Any) -> JudgeSettings:
    """The judge settings the ``reward.arena.judge`` keys ``keys`` (and ``more``) give, read as a config's are: the
    backend's own keys beside the common ones (``judge_settings(backend="vllm", model_path=...)``)."""
    return read_part(JudgeSettings, {**(keys or {}), **more}, _KEY)


def _voters(judge: JudgeSettings) -> tuple[tuple[str, JudgeSettings], ...]:
    cached = judge.__dict__.get("_voters")
    if cached is not None:
        return cached
    ensemble = judge.ensemble
    if not ensemble.members:
        voters = ((ensemble.primary_name, judge),)
    else:
        primary = dataclasses.replace(judge, ensemble=EnsembleOptions())
        own = {f.name: getattr(judge, f.name) for f in key_fields(JudgeSettings) if f.name != "backend"}
        backend_own = {f.name: getattr(judge.options, f.name) for f in key_fields(type(judge.options))}
        voters = [(ensemble.primary_name, primary)]
        for index, member in enumerate(ensemble.members, start=1):
            where = _member_where(index - 1)
            if "ensemble" in member:
                raise SettingError(f"{where}.ensemble: a member is one judge (members do not nest)")
            member = replicas_as_text(member, where)
            keys = {"backend": judge.backend, **{name: value for name, value in member.items() if name != "name"}}
            inherited = {**own, **(backend_own if keys["backend"] == judge.backend else {})}
            if any(key in keys for key in _ADDRESS_KEYS):
                inherited = {key: value for key, value in inherited.items() if key not in _ADDRESS_KEYS}
            try:
                voter = read_part(JudgeSettings, {**inherited, **keys}, where)
            except ValueError as exc:  # a part's own check names its keys from the judge block: name the member's
                raise SettingError(_member_error(where, exc)) from None
            voters.append((member_name(index, member), voter))
        voters = tuple(voters)
    object.__setattr__(judge, "_voters", voters)  # read once (a frozen part: its members never change)
    return voters


def replicas_as_text(keys: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``keys`` with a ``base_url`` given as a YAML list of replicas in its comma-separated form (one rule for the
    judge block and each ensemble member)."""
    base_url = keys.get("base_url")
    if not isinstance(base_url, (list, tuple)):
        return dict(keys)
    if not all(isinstance(url, str) for url in base_url):
        raise SettingError(f"{where}.base_url must be an address or a list of addresses, got {base_url!r}")
    return {**keys, "base_url": ",".join(base_url)}


def _member_where(index: int) -> str:
    return f"{_KEY}.ensemble.members[{index}]"


def _member_error(where: str, exc: Exception) -> str:
    """``exc``'s message with the judge block's keys named as the member's (``where``)."""
    text = str(exc) if where in str(exc) else str(exc).replace(f"{_KEY}.", f"{where}.")
    return text if where in text else f"{where}: {text}"


def _own_call_bound_s(judge: JudgeSettings) -> float:
    return judge._own_call_budget_s() if backend_of(judge).retries else judge.timeout_s


def longest_timeout_s(judge: JudgeSettings) -> float:
    """The longest ``timeout_s`` of one generation among the judges that vote (one judge: its own)."""
    return max(voter.timeout_s for _, voter in judge.voters())


def judge_call_bound_s(judge: JudgeSettings) -> float:
    """The longest one judge call may take at the referee: a backend that does not retry (python) bounds each call by
    ``timeout_s`` alone; every other judge's call is bounded by ``call_budget_s`` (its retries included). An
    ensemble's call is its slowest member's (the members are asked at once)."""
    voters = judge.voters()
    slowest = max(_own_call_bound_s(voter) for _, voter in voters)
    return slowest + (ENSEMBLE_SLACK_S if len(voters) > 1 else 0.0)


def call_bound_text(judge: JudgeSettings) -> str:
    """:func:`judge_call_bound_s` with the keys that make it."""
    voters = judge.voters()
    if len(voters) > 1:
        name, slowest = max(voters, key=lambda voter: _own_call_bound_s(voter[1]))
        return (
            f"{judge_call_bound_s(judge):g} s, the ensemble's slowest member's bound + {ENSEMBLE_SLACK_S:g} s; "
            f"{name}: {call_bound_text(slowest)}"
        )
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
