"""Typed arena settings, read once from verl's config (``reward.arena.*``) and validated at start-up.

Every key has a default, so ``+reward.arena.mode=arena`` on top of verl's own ``ppo_trainer`` is enough. A bad value
or an unknown key is a ``ValueError`` that names the full key (``reward.arena.strategy``).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena_verl.backend_registry import BACKENDS, backend_of
from arena_verl.core.modes import default_strategy, mode_of, needs_judge
from arena_verl.core.names import (
    DIVERSITY_TOL,
    EXTRACTION_MODES,
    FAILURE_POLICIES,
    FIXED_COUNT_STRATEGIES,
    MODES,
    PROBABILITY_READS_PER_VERDICT,
    STRATEGIES,
    VERDICT_MODES,
)
from arena_verl.core.options import RefereeOptions, TournamentOptions, knob_defaults
from arena_verl.core.referee.admission import pool_share
from arena_verl.core.sources import MATH_SOURCES, MULTIPLE_CHOICE_SOURCES

# The judge block's checks (reward.arena.judge.*), and the ones both use.
from arena_verl.settings_judge import (
    _DAY_S,
    _PREFIX,
    _in_range,
    _one_of,
    call_bound_text,
    judge_call_bound_s,
    validate_judge,
)

__all__ = [
    "MODES",
    "JudgeSettings",
    "ArenaSettings",
    "ContradictoryLimits",
    "settings_from_config",
    "config_value",
    "limit_contradictions",
    "referee_options",
    "tournament_options",
]

MIN_TOURNAMENT_TIMEOUT_S = 900.0  # tournament_timeout_s: null is at least this


@dataclass(frozen=True)
class JudgeSettings:
    """``reward.arena.judge.*``: which judge, its prompts, and how hard to try before a call counts as failed."""

    backend: str = "simulated"
    # Prompts (model-backed judges).
    pairwise_template: str | None = None  # None: by task (math, code, generic); or a built-in name or a file path
    pointwise_template: str = "pointwise"
    show_reference: bool = False  # routed groups share one verifier outcome: judge the reasoning, not the answer
    max_trace_tokens: int = 4096  # each trace keeps head and tail within this budget
    # Verdicts: "generate" parses a generated verdict; "probability" reads the labels' next-token probabilities at
    # the verdict position (a number in [0, 1]); think_first generates the reasoning before that position.
    verdict: str = "generate"
    think_first: bool = False
    low_mass_floor: float = 0.5  # probability mode: a call whose labels get less mass is counted as low-mass
    # Calls.
    max_concurrency: int = 32  # judge calls in flight per judge pool: the referee shards share it (pool_share)
    timeout_s: float = 120.0  # one generation
    retries: int = 2  # transient errors (timeout, HTTP 5xx, dead engine): retried with exponential backoff
    backoff_s: float = 1.0
    parse_retries: int = 1  # an unparsable verdict is asked again (at retry_temperature), then counted as failed
    temperature: float = 0.0
    retry_temperature: float = 0.7
    top_p: float = 1.0
    max_new_tokens: int = 512
    # transformers and vllm: a local model folder; openai: the served model's name.
    model_path: str | None = None
    device: str = "cpu"  # transformers
    dtype: str = "auto"
    # openai: any OpenAI-compatible chat endpoint (vllm serve, SGLang, a hosted API, verl's reward-model router);
    # several replicas comma-separated (or a YAML list): every call of a group goes to one of them (group-sticky).
    base_url: str | None = None
    # openai: a file with the endpoint, one address a line (the Slurm launcher's URL file; several: replicas). Read
    # at start and again after a failed request, so that a judge server restarted elsewhere is found without restarting
    # training; a new list replaces the whole old one.
    base_url_file: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    # openai: the tokenizer that counts max_trace_tokens (a local folder or a hub id; one that cannot be loaded is an
    # error at start-up). None: model_path's when it is on this machine; else budgets in UTF-8 bytes, with a warning.
    # transformers and vllm always count with their model's own tokenizer.
    tokenizer: str | None = None
    # vllm: engines in Ray actors on judge GPUs.
    num_engines: int = 1
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.85
    max_model_len: int | None = None
    enable_prefix_caching: bool = True
    # vllm: how long each engine may take to start (load the weights, compile, capture CUDA graphs) before its calls
    # fail (docs/config.md: 3600 s, as scripts/slurm/judge_serve.sbatch's JUDGE_START_TIMEOUT_S).
    start_timeout_s: float = 3600.0
    # python: your own function as the judge, "package.module:function" (importable where the referee runs), called
    # with the problem and the sanitised traces as keyword arguments, plus callable_kwargs (a mapping of plain values;
    # see arena_verl.judge.backends.python_backend). Both keys are refused with any other backend.
    callable: str | None = None
    callable_kwargs: dict[str, Any] | None = None
    # SIMULATED judge only (tests, benchmarks, CPU demo): see arena_verl.judge.simulated.law.
    sim_sharpness: float = 1.0
    sim_position_bias: float = 0.0
    sim_tie_rate: float = 0.0
    sim_parse_failure_rate: float = 0.0
    sim_latency_s: float = 0.0  # mean seconds per call
    sim_latency_sigma: float = 0.0  # 0: exponential latency; > 0: log-normal with this sigma (of the log)
    seed: int = 0

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


@dataclass(frozen=True)
class ArenaSettings:
    """``reward.arena.*``. See docs/config.md for what each key does."""

    mode: str = "arena"
    strategy: str | None = None  # None: the mode's own (tournament_all: round_robin, the ArenaRL baseline; else live)
    budget: int | None = None  # judge calls per routed group for budgeted strategies; None = live's count
    group_size: int = 0  # 0 = actor_rollout_ref.rollout.n
    diversity_tol: float = DIVERSITY_TOL  # verifier rewards closer than this count as equal
    reward_scale: float = 0.5  # reward = verifier + scale * (sigmoid(theta - mean) - 0.5); in (0, 1)
    allow_reward_scale_above_one: bool = False  # opt-in: scale >= 1 lets a routed wrong trace outrank a right one
    # The tournament's keys: their defaults are the core's (TournamentOptions), written once.
    l2: float = TournamentOptions.l2
    order_effect: bool = TournamentOptions.order_effect
    two_sided: bool = TournamentOptions.two_sided
    mirror_augment: bool = TournamentOptions.mirror_augment
    on_judge_failure: str = TournamentOptions.on_failure
    # a batch's shared trace shown first in all its calls (prefix cache; docs/config.md)
    prefix_aware: bool = TournamentOptions.prefix_aware
    speculative: bool = True  # start the live tournament while every verifier reward so far agrees
    # hold an arrival until earlier matches have verdicts (the paper's live rule)
    wait_for_verdicts: bool = TournamentOptions.wait_for_verdicts
    # The strategies' own knobs (core/options.py's STRATEGY_KNOBS: their defaults, and the scheduler that reads them).
    final_calls: int = knob_defaults()["final_calls"]  # paced: opponents of the last arrival, judged in one round
    pace: float = knob_defaults()["pace"]  # paced: how late the budget is spent while the group arrives (larger: later)
    completion_grace: float | None = None  # judge-call latencies a complete group waits for verdicts; None: all
    # A routed group answered with fewer than this share of its planned verdicts gets its verifier rewards (a counted
    # fallback, "thin"): one verdict of six must not become a group's full-size advantages. 0: off.
    min_verdict_share: float = 0.5
    # A routed group's advantages scaled by its verdicts' certainty (core/tournament/certainty.py), through the arena's
    # advantage estimator (algorithm.adv_estimator=arena_grpo): a judge with no signal gives little advantage mass.
    certainty_weighting: bool = False
    group_deadline_s: float = 900.0  # from a group's first sample; then verifier rewards (counted fallback)
    # From group completion; then verifier rewards (counted fallback). None: what the judge needs (one call with its
    # retries, judge_call_bound_s; and completion_grace x judge.timeout_s), at least 900 s.
    tournament_timeout_s: float | None = None
    num_referees: int = 1  # referee actors, groups sharded by uid
    referee_name: str = "arena_referee"
    validation_splits: tuple[str, ...] = ("test", "val", "validation")  # extra_info.split values of validation data
    # data_source substrings of each kind (arena_verl.core.sources has the rule that uses them).
    math_data_sources: tuple[str, ...] = MATH_SOURCES
    multiple_choice_data_sources: tuple[str, ...] = MULTIPLE_CHOICE_SOURCES  # arena_verl.verify.multiple_choice
    verifier_timeout_s: float = 10.0
    verifier_workers: int = 1
    answer_extraction: str = "boxed"  # boxed | lenient: a trace without a box is read by math-verify's extraction
    log_metrics: bool = True  # add the referees' per-step counters to the trainer's tracker (arena/*)
    # The GRPO normalisation the sample-utilisation metrics assume; None: algorithm.norm_adv_by_std_in_grpo (True).
    advantage_norm_by_std: bool | None = None
    judge: JudgeSettings = field(default_factory=JudgeSettings)

    def __post_init__(self):
        if self.strategy is None:
            object.__setattr__(self, "strategy", default_strategy(self.mode))
        if self.tournament_timeout_s is None:
            object.__setattr__(self, "tournament_timeout_s", default_tournament_timeout_s(self))

    @property
    def uses_judge(self) -> bool:
        return needs_judge(self.mode)


def settings_from_config(config: Any) -> ArenaSettings:
    """Read ``config.reward.arena`` (absent = all defaults) and ``actor_rollout_ref.rollout.n``."""
    arena = config_value(config, "reward.arena")
    raw = _to_plain(arena) if arena is not None else {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{_PREFIX} must be a mapping, got {raw!r}")
    judge_raw = raw.get("judge", {}) or {}
    if not isinstance(judge_raw, Mapping):
        raise ValueError(f"{_PREFIX}.judge must be a mapping, got {judge_raw!r}")
    base_url = judge_raw.get("base_url")
    if isinstance(base_url, (list, tuple)):  # several replicas as a YAML list: the comma-separated form
        if not all(isinstance(url, str) for url in base_url):
            raise ValueError(f"{_PREFIX}.judge.base_url must be an address or a list of addresses, got {base_url!r}")
        judge_raw = {**judge_raw, "base_url": ",".join(base_url)}
    judge = _build(JudgeSettings, judge_raw, f"{_PREFIX}.judge")
    settings = _build(ArenaSettings, {k: v for k, v in raw.items() if k != "judge"}, _PREFIX, judge=judge)
    if settings.group_size == 0:
        rollout_n = config_value(config, "actor_rollout_ref.rollout.n")
        if rollout_n is None:
            raise ValueError(f"{_PREFIX}.group_size is 0 and actor_rollout_ref.rollout.n is not set")
        settings = dataclasses.replace(settings, group_size=int(rollout_n))
    if settings.advantage_norm_by_std is None:
        norm = config_value(config, "algorithm.norm_adv_by_std_in_grpo")
        settings = dataclasses.replace(settings, advantage_norm_by_std=True if norm is None else bool(norm))
    validate(settings)
    check_estimator(settings, config_value(config, "algorithm.adv_estimator"))
    return settings


# The advantage estimator that reads the referees' certainties (arena_verl.verl_edge.advantage registers it).
ARENA_ESTIMATOR = "arena_grpo"


def check_estimator(settings: ArenaSettings, adv_estimator: Any) -> None:
    """Refuse a certainty weighting that could not act, naming both keys: another advantage estimator than the arena's
    (verl's own GRPO would cancel any per-group scale), or a mode without tournaments. ``adv_estimator`` None: not
    known here (an offline tool), not refused."""
    if not settings.certainty_weighting:
        return
    if not mode_of(settings.mode).plays_tournaments:  # routed groups judged in a tournament: what it acts on
        raise ValueError(
            f"{_PREFIX}.certainty_weighting=true acts on tournament-judged groups, which {_PREFIX}.mode="
            f"{settings.mode!r} has none of: use mode arena or tournament_all, or certainty_weighting=false"
        )
    if adv_estimator is not None and adv_estimator != ARENA_ESTIMATOR:
        raise ValueError(
            f"{_PREFIX}.certainty_weighting=true needs algorithm.adv_estimator={ARENA_ESTIMATOR} (got "
            f"{adv_estimator!r}): verl's {adv_estimator} estimator would normalise the certainty away. Set "
            f"algorithm.adv_estimator={ARENA_ESTIMATOR} (the shipped configs do), or certainty_weighting=false"
        )


def validate(settings: ArenaSettings) -> None:
    """Reject at start-up what would break later, naming the key and its allowed range."""
    _one_of("mode", settings.mode, MODES)
    _one_of("strategy", settings.strategy, STRATEGIES)
    _one_of("on_judge_failure", settings.on_judge_failure, FAILURE_POLICIES)
    _one_of("answer_extraction", settings.answer_extraction, EXTRACTION_MODES)
    _one_of("judge.backend", settings.judge.backend, tuple(BACKENDS))
    _one_of("judge.verdict", settings.judge.verdict, VERDICT_MODES)
    for prefix, node in (("", settings), ("judge.", settings.judge)):
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{_PREFIX}.{prefix}{f.name} must be a finite number, got {value!r}")
    if settings.group_size < 1:
        raise ValueError(f"{_PREFIX}.group_size must be >= 1, got {settings.group_size}")
    if settings.budget is not None:
        if settings.strategy in FIXED_COUNT_STRATEGIES:
            raise ValueError(f"{_PREFIX}.budget applies to the budgeted strategies, not {settings.strategy!r}")
        needed = (settings.group_size - 1) * (2 if settings.two_sided else 1)
        if settings.budget < needed:
            raise ValueError(
                f"{_PREFIX}.budget={settings.budget} cannot connect a group of {settings.group_size} traces: it must "
                f"be >= {needed} (N - 1{', x2 with two_sided' if settings.two_sided else ''})"
            )
    _in_range("l2", settings.l2, 1e-6, 1e3)
    for key in ("group_deadline_s", "tournament_timeout_s", "verifier_timeout_s"):
        _in_range(key, getattr(settings, key), 0.0, _DAY_S, low_open=True)
    _in_range("diversity_tol", settings.diversity_tol, 0.0, 1.0)
    _in_range("min_verdict_share", settings.min_verdict_share, 0.0, 1.0)
    if settings.allow_reward_scale_above_one:
        _in_range("reward_scale", settings.reward_scale, 0.0, 1e3, low_open=True)
    elif not 0 < settings.reward_scale < 1:
        raise ValueError(
            f"{_PREFIX}.reward_scale must be in (0, 1), got {settings.reward_scale!r}: at 1 or more a routed "
            f"all-incorrect trace can outrank an all-correct one (set {_PREFIX}.allow_reward_scale_above_one=true "
            "to allow it)"
        )
    if settings.mirror_augment and settings.order_effect:
        raise ValueError(
            f"{_PREFIX}.mirror_augment and {_PREFIX}.order_effect exclude each other: mirrored verdicts carry no "
            "position signal, so the order effect could not be fitted"
        )
    for key in ("num_referees", "verifier_workers", "final_calls"):
        if getattr(settings, key) < 1:
            raise ValueError(f"{_PREFIX}.{key} must be >= 1, got {getattr(settings, key)}")
    _in_range("pace", settings.pace, 0.0, 100.0, low_open=True)
    if settings.completion_grace is not None:
        _in_range("completion_grace", settings.completion_grace, 0.0, 1e3, low_open=True)
    validate_judge(settings.judge, needed=settings.uses_judge)
    contradictions = limit_contradictions(settings)
    if contradictions:
        raise ContradictoryLimits(contradictions)


def tournament_options(settings: ArenaSettings, **changes: Any) -> TournamentOptions:
    """The tournament's keys of ``settings`` as the core's type, with ``changes`` applied on top."""
    names = [f.name for f in dataclasses.fields(TournamentOptions) if f.name not in ("on_failure", "strategy_knobs")]
    values = {name: getattr(settings, name) for name in names}
    knobs = {name: getattr(settings, name) for name in knob_defaults()}  # each knob is the settings field of its name
    options = TournamentOptions(**values, on_failure=settings.on_judge_failure, strategy_knobs=knobs)
    return dataclasses.replace(options, **changes)


def referee_options(settings: ArenaSettings) -> RefereeOptions:
    """What the referee reads of ``settings``, as the core's type (built once, where the settings are read)."""
    return RefereeOptions(
        mode=settings.mode,
        group_size=settings.group_size,
        diversity_tol=settings.diversity_tol,
        speculative=settings.speculative,
        group_deadline_s=settings.group_deadline_s,
        tournament_timeout_s=settings.tournament_timeout_s,
        completion_grace=settings.completion_grace,
        reward_scale=settings.reward_scale,
        min_verdict_share=settings.min_verdict_share,
        certainty_weighting=settings.certainty_weighting,
        advantage_norm_by_std=settings.advantage_norm_by_std is not False,
        call_budget_s=settings.judge.call_budget_s,
        judge_slots=pool_share(settings.judge.max_concurrency, settings.num_referees),
        tournament=tournament_options(settings),
    )


class ContradictoryLimits(ValueError):
    """Related limits that contradict each other (each problem names both keys); all of them, not the first."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} contradictory limit{'s' if count != 1 else ''} in {_PREFIX}"
        super().__init__(head + ":" + "".join(f"\n  - {problem}" for problem in self.problems))


def default_tournament_timeout_s(settings: ArenaSettings) -> float:
    """``tournament_timeout_s: null``: long enough for what the judge settings promise (:func:`limit_contradictions`:
    one call with all its retries, and a completion grace at calls near their timeout), at least
    :data:`MIN_TOURNAMENT_TIMEOUT_S` and at most a day (the key's range: a judge that needs more is then refused by
    :func:`limit_contradictions`, naming its keys). Values validation refuses (infinite ones) are left to it."""
    try:
        need = judge_call_bound_s(settings.judge)
        if settings.completion_grace is not None:
            need = max(need, settings.completion_grace * settings.judge.timeout_s)
    except (OverflowError, TypeError, ValueError):  # absurd retries, wrong types, no such backend: validation's
        need = 0.0
    return float(min(_DAY_S, max(MIN_TOURNAMENT_TIMEOUT_S, math.ceil(need) if math.isfinite(need) else 0)))


def limit_contradictions(settings: ArenaSettings) -> list[str]:
    """Pairs of related limits that contradict each other, each named by both keys, with a fix. Empty when they
    agree. (The reward manager's own wait, group_deadline_s + tournament_timeout_s + 60 s, follows from these; verl
    0.9.1 puts no time limit of its own on the reward step: its agent loop awaits each sample's score.)

    - ``tournament_timeout_s`` must hold one judge call with all its retries (:func:`judge_call_bound_s`): the last
      sample's calls start when its group completes, and a tournament cut by its timeout loses every verdict (the
      group falls back, ``judge_error``), so the retries the judge settings promise would never run.
    - ``completion_grace`` x ``judge.timeout_s`` must fit within ``tournament_timeout_s``: the grace answers a complete
      group with the verdicts in hand once its calls take that many typical durations; with calls near their
      timeout a grace past the tournament's timeout never acts, and the whole group falls back instead.
    """
    if not settings.uses_judge:
        return []
    judge, problems = settings.judge, []
    bound = judge_call_bound_s(judge)  # finite: validation bounds the retries
    if settings.tournament_timeout_s < bound:
        keys = "judge.timeout_s, judge.retries, judge.parse_retries" if backend_of(judge).retries else "judge.timeout_s"
        problems.append(
            f"{_PREFIX}.tournament_timeout_s={settings.tournament_timeout_s:g} is shorter than one judge call, "
            f"{call_bound_text(judge)}: a group's last calls start when it completes and would be cut with its whole "
            f"tournament (every verdict lost, fallback judge_error); raise {_PREFIX}.tournament_timeout_s to at "
            f"least {math.ceil(bound)} or lower {keys}"
        )
    grace = settings.completion_grace
    if grace is not None and grace * judge.timeout_s > settings.tournament_timeout_s:
        problems.append(
            f"{_PREFIX}.completion_grace={grace:g} x {_PREFIX}.judge.timeout_s={judge.timeout_s:g} = "
            f"{grace * judge.timeout_s:g} s is longer than {_PREFIX}.tournament_timeout_s="
            f"{settings.tournament_timeout_s:g}: with calls near their timeout the tournament's timeout cuts a "
            "complete group (every verdict lost) before the grace answers it with the verdicts in hand; raise "
            f"tournament_timeout_s to at least {math.ceil(grace * judge.timeout_s)}, or lower completion_grace or "
            "judge.timeout_s"
        )
    return problems


def _build(cls, raw: Mapping, prefix: str, **fixed):
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(raw) - set(hints) - set(fixed))
    if unknown:
        raise ValueError(f"{prefix}.{unknown[0]} is not a known key; known keys: {sorted(hints)}")
    values = dict(fixed)
    for name, value in raw.items():
        values[name] = _coerce(f"{prefix}.{name}", value, hints[name])
    return cls(**{k: v for k, v in values.items() if v is not _DEFAULT})


_DEFAULT = object()


def _coerce(key: str, value: Any, hint: Any) -> Any:
    """``value`` as the field's annotated type; null means None for optional fields and the default otherwise."""
    args = typing.get_args(hint)
    optional = type(None) in args
    if value is None:
        return None if optional else _DEFAULT
    kind = next(a for a in args if a is not type(None)) if optional else hint
    if typing.get_origin(kind) is tuple:  # tuple[str, ...]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ValueError(f"{key} must be a list of strings, got {value!r}")
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer(),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
    }.get(kind, True)
    if not ok:
        raise ValueError(f"{key} must be of type {kind.__name__}, got {value!r}")
    return kind(value) if kind in (int, float) else value


def config_value(config: Any, dotted: str) -> Any:
    """``config``'s value at a dotted key (a DictConfig, a mapping or attributes), or None where a part is missing."""
    node = config
    for part in dotted.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, Mapping) or hasattr(node, "get") else getattr(node, part, None)
    return node


def _to_plain(node: Any) -> Any:
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(node, (DictConfig, ListConfig)):
            return OmegaConf.to_container(node, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf comes with verl
        pass
    return node
