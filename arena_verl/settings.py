"""Typed arena settings, read once from verl's config (``reward.arena.*``) and validated at start-up.

:class:`ArenaSettings` is composed of parts, each declared beside the code it configures and passed whole:
:class:`~arena_verl.core.options.RefereeOptions` and :class:`~arena_verl.core.options.TournamentOptions` (flat keys of
``reward.arena``, with each strategy's own knobs: :mod:`arena_verl.core.strategies`) and
:class:`~arena_verl.settings_judge.JudgeSettings` (``reward.arena.judge``, with the chosen backend's own options:
:mod:`arena_verl.backend_registry`). Every key is declared once, with its default, range and help
(:func:`~arena_verl.core.fields.setting`); one reader (:func:`~arena_verl.core.fields.read_part`) builds them all.
Every key has a default, so ``+reward.arena.mode=arena`` on top of verl's own ``ppo_trainer`` is enough. A bad value
or an unknown key is a ``ValueError`` that names the full key (``reward.arena.strategy``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arena_verl.backend_registry import backend_of
from arena_verl.core.fields import DAY_S, Part, SettingError, flat_part, nested_part, read_part, setting
from arena_verl.core.modes import default_strategy, mode_of, needs_judge
from arena_verl.core.names import EXTRACTION_MODES, MODES
from arena_verl.core.options import RefereeOptions, TournamentOptions
from arena_verl.core.plugin_loader import load_plugins
from arena_verl.core.referee.admission import pool_share
from arena_verl.core.sources import MATH_SOURCES, MULTIPLE_CHOICE_SOURCES
from arena_verl.core.strategies import strategy_of
from arena_verl.settings_judge import (
    JudgeSettings,
    call_bound_text,
    judge_call_bound_s,
    judge_settings,
    longest_timeout_s,
    replicas_as_text,
)

__all__ = [
    "MODES",
    "JudgeSettings",
    "ArenaSettings",
    "ContradictoryLimits",
    "settings_from_config",
    "arena_settings",
    "judge_settings",
    "config_value",
    "limit_contradictions",
    "settings_leaves",
]

_PREFIX = "reward.arena"
MIN_TOURNAMENT_TIMEOUT_S = 900.0  # tournament_timeout_s: null is at least this


@dataclass(frozen=True)
class ArenaSettings(Part):
    """``reward.arena.*``: the referee's and the tournament's parts (flat keys), the judge's (``judge.*``), and the
    keys of the reward workers and the verl edge. See docs/config.md for each key."""

    referee: RefereeOptions = flat_part(RefereeOptions)
    tournament: TournamentOptions = flat_part(TournamentOptions)
    num_referees: int = setting(1, low=1, help="referee actors; groups sharded by uid")
    referee_name: str = setting("arena_referee", help="actor name prefix")
    validation_splits: tuple[str, ...] = setting(
        ("test", "val", "validation"),
        help="`extra_info.split` values of validation samples ([validation](reward_loop.md#validation))",
    )
    math_data_sources: tuple[str, ...] = setting(
        MATH_SOURCES,
        help="`data_source` substrings scored by math-verify (`*`: every source but the multiple-choice ones); "
        "one rule for training, the judge's template and the offline tools: `arena_verl/core/sources.py`",
    )
    multiple_choice_data_sources: tuple[str, ...] = setting(
        MULTIPLE_CHOICE_SOURCES,
        help="`data_source` substrings scored as multiple choice (`arena_verl/verify/multiple_choice.py`: the "
        "letter in the last `\\boxed{}` against a one-letter ground truth; a hedge scores 0)",
    )
    verifier_timeout_s: float = setting(10.0, low=0.0, high=DAY_S, low_open=True, help="one math verification")
    verifier_workers: int = setting(1, low=1, help="math-verify worker processes per reward worker")
    answer_extraction: str = setting(
        "boxed",
        choices=EXTRACTION_MODES,
        help="`boxed`: boxed answers and answer lines; `lenient`: a trace without a box is read by math-verify's "
        "own extraction ([the verifier](verifier.md))",
    )
    log_metrics: bool = setting(True, help="per-step `arena/*` metrics in the tracker ([metrics](metrics.md))")
    plugins: tuple[str, ...] = setting(
        (),
        help="modules to import in every process before the settings are read: your own judge backends and "
        "strategies ([plugins](judges.md#your-own-backend)); installed packages' `arena_verl.plugins` entry points "
        "are imported too",
    )
    judge: JudgeSettings = nested_part(JudgeSettings)

    def __post_init__(self):
        if self.tournament.strategy is None:
            resolved = dataclasses.replace(self.tournament, strategy=default_strategy(self.referee.mode))
            object.__setattr__(self, "tournament", resolved)
        if self.referee.tournament_timeout_s is None:
            timeout = default_tournament_timeout_s(self)
            object.__setattr__(self, "referee", dataclasses.replace(self.referee, tournament_timeout_s=timeout))
        super().__post_init__()

    def rules(self) -> None:
        """Rules between parts. Those that need the group size wait for it (0: ``rollout.n``, filled in by
        :func:`settings_from_config`)."""
        size, tournament = self.referee.group_size, self.tournament
        if tournament.budget is not None and size > 0 and not strategy_of(tournament.strategy).fixed_count:
            needed = (size - 1) * (2 if tournament.two_sided else 1)
            if tournament.budget < needed:
                raise ValueError(
                    f"{_PREFIX}.budget={tournament.budget} cannot connect a group of {size} traces: it must be >= "
                    f"{needed} (N - 1{', x2 with two_sided' if tournament.two_sided else ''})"
                )
        if self.uses_judge:  # rlvr: the judge never runs (a shared config may still name one)
            self.judge.require()

    @property
    def uses_judge(self) -> bool:
        return needs_judge(self.referee.mode)

    @property
    def judge_slots(self) -> int:
        """Each referee's share of the judge's concurrency."""
        return pool_share(self.judge.max_concurrency, self.num_referees)

    def referee_kwargs(self) -> dict[str, Any]:
        """What a :class:`~arena_verl.core.referee.Referee` takes of these settings (its parts, whole), bar the
        judge."""
        return {
            "options": self.referee,
            "tournament": self.tournament,
            "call_budget_s": self.judge.call_budget_s,
            "judge_slots": self.judge_slots,
        }


def arena_settings(keys: Mapping[str, Any] | None = None, **more: Any) -> ArenaSettings:
    """The settings the ``reward.arena`` keys ``keys`` (and ``more``) give, read as a config's are (the judge's keys
    under ``judge``, or ``judge`` a :class:`JudgeSettings` built already). Nothing is taken from verl's config:
    ``group_size`` 0 stays 0 and ``advantage_norm_by_std`` null stays null (:func:`settings_from_config` fills
    them in)."""
    if keys is not None and not isinstance(keys, Mapping):
        raise ValueError(f"{_PREFIX} must be a mapping, got {keys!r}")
    raw = {**(keys or {}), **more}
    fixed = {"judge": raw.pop("judge")} if isinstance(raw.get("judge"), JudgeSettings) else {}
    plugins = raw.get("plugins") or ()
    if not isinstance(plugins, (list, tuple)):
        raise ValueError(f"{_PREFIX}.plugins must be a list of module paths, got {plugins!r}")
    load_plugins(plugins)  # a user's backends and strategies, before their keys are read
    judge_raw = raw.get("judge", {}) or {}
    if not isinstance(judge_raw, Mapping):
        raise ValueError(f"{_PREFIX}.judge must be a mapping, got {judge_raw!r}")
    if isinstance(judge_raw.get("base_url"), (list, tuple)):
        raw = {**raw, "judge": replicas_as_text(judge_raw, f"{_PREFIX}.judge")}
    return read_part(ArenaSettings, raw, _PREFIX, **fixed)


def settings_from_config(config: Any) -> ArenaSettings:
    """Read ``config.reward.arena`` (absent = all defaults) and ``actor_rollout_ref.rollout.n``."""
    arena = config_value(config, "reward.arena")
    raw = _to_plain(arena) if arena is not None else {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{_PREFIX} must be a mapping, got {raw!r}")
    group_size = raw.get("group_size")
    if group_size in (0, None):
        rollout_n = config_value(config, "actor_rollout_ref.rollout.n")
        if rollout_n is None:
            raise ValueError(f"{_PREFIX}.group_size is 0 and actor_rollout_ref.rollout.n is not set")
        raw = {**raw, "group_size": rollout_n}
    if raw.get("advantage_norm_by_std") is None:
        norm = config_value(config, "algorithm.norm_adv_by_std_in_grpo")
        raw = {**raw, "advantage_norm_by_std": True if norm is None else bool(norm)}
    settings = arena_settings(raw)
    if settings.referee.group_size < 1:
        raise SettingError(f"{_PREFIX}.group_size must be >= 1, got {settings.referee.group_size}")
    # A run's limits must agree (a test or a benchmark may build a referee past them on purpose: not refused there).
    contradictions = limit_contradictions(settings)
    if contradictions:
        raise ContradictoryLimits(contradictions)
    check_estimator(settings, config_value(config, "algorithm.adv_estimator"))
    return settings


def settings_leaves(settings: ArenaSettings) -> dict[str, Any]:
    """Every key of ``settings`` and its value, as flat ``reward.arena`` keys (``judge.timeout_s``): what a config
    would set to get them (the snapshot test compares it across versions)."""
    out: dict[str, Any] = {}

    def walk(part: Any, prefix: str) -> None:
        for f in dataclasses.fields(part):
            value, kind = getattr(part, f.name), f.metadata.get("kind")
            if kind in ("flat", "chosen"):
                walk(value, prefix)
            elif kind == "registered":
                for inner in value.values():
                    walk(inner, prefix)
            elif kind == "nested":
                walk(value, f"{prefix}{f.name}.")
            else:
                out[prefix + f.name] = list(value) if isinstance(value, tuple) else value

    walk(settings, "")
    return out


# The advantage estimator that reads the referees' certainties (arena_verl.verl_edge.advantage registers it).
ARENA_ESTIMATOR = "arena_grpo"


def check_estimator(settings: ArenaSettings, adv_estimator: Any) -> None:
    """Refuse a certainty weighting that could not act, naming both keys: another advantage estimator than the arena's
    (verl's own GRPO would cancel any per-group scale), or a mode without tournaments. ``adv_estimator`` None: not
    known here (an offline tool), not refused."""
    if not settings.referee.certainty_weighting:
        return
    if not mode_of(settings.referee.mode).plays_tournaments:  # routed groups judged in a tournament: what it acts on
        raise ValueError(
            f"{_PREFIX}.certainty_weighting=true acts on tournament-judged groups, which {_PREFIX}.mode="
            f"{settings.referee.mode!r} has none of: use mode arena or tournament_all, or certainty_weighting=false"
        )
    if adv_estimator is not None and adv_estimator != ARENA_ESTIMATOR:
        raise ValueError(
            f"{_PREFIX}.certainty_weighting=true needs algorithm.adv_estimator={ARENA_ESTIMATOR} (got "
            f"{adv_estimator!r}): verl's {adv_estimator} estimator would normalise the certainty away. Set "
            f"algorithm.adv_estimator={ARENA_ESTIMATOR} (the shipped configs do), or certainty_weighting=false"
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
        if settings.referee.completion_grace is not None:
            need = max(need, settings.referee.completion_grace * longest_timeout_s(settings.judge))
    except (OverflowError, TypeError, ValueError):  # absurd retries, wrong types, no such backend: validation's
        need = 0.0
    return float(min(DAY_S, max(MIN_TOURNAMENT_TIMEOUT_S, math.ceil(need) if math.isfinite(need) else 0)))


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
    judge, problems, timeout = settings.judge, [], settings.referee.tournament_timeout_s
    bound = judge_call_bound_s(judge)  # finite: validation bounds the retries
    if timeout < bound:
        keys = (
            "judge.timeout_s, judge.retries, judge.parse_retries"
            if backend_of(judge.backend).retries
            else "judge.timeout_s"
        )
        problems.append(
            f"{_PREFIX}.tournament_timeout_s={timeout:g} is shorter than one judge call, "
            f"{call_bound_text(judge)}: a group's last calls start when it completes and would be cut with its whole "
            f"tournament (every verdict lost, fallback judge_error); raise {_PREFIX}.tournament_timeout_s to at "
            f"least {math.ceil(bound)} or lower {keys}"
        )
    grace = settings.referee.completion_grace
    call_timeout = longest_timeout_s(judge)  # an ensemble's: its slowest member's
    if grace is not None and grace * call_timeout > timeout:
        problems.append(
            f"{_PREFIX}.completion_grace={grace:g} x {_PREFIX}.judge.timeout_s={call_timeout:g} = "
            f"{grace * call_timeout:g} s is longer than {_PREFIX}.tournament_timeout_s="
            f"{timeout:g}: with calls near their timeout the tournament's timeout cuts a "
            "complete group (every verdict lost) before the grace answers it with the verdicts in hand; raise "
            f"tournament_timeout_s to at least {math.ceil(grace * call_timeout)}, or lower completion_grace or "
            "judge.timeout_s"
        )
    return problems


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
