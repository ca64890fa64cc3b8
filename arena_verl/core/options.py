"""The parts of ``reward.arena.*`` the core reads, declared here with their keys' defaults, ranges and help
(:func:`~arena_verl.core.fields.setting`), and passed whole: :class:`TournamentOptions` steer a
:class:`~arena_verl.core.tournament.runner.Tournament` in the referee (training) and in ``arena-verl score``
(offline), so that an offline replay schedules and fits as training does; :class:`RefereeOptions` are what the
referee reads of a group's life. Both sit flat in ``reward.arena`` (``reward.arena.l2``, not
``reward.arena.l2``): the settings (:class:`arena_verl.settings.ArenaSettings`) hold them, read by one
reader. Stdlib only: the settings import it without the tournament's numerics."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from arena_verl.core.fields import DAY_S, Part, registered_parts, setting
from arena_verl.core.names import DIVERSITY_TOL, FAILURE_POLICIES, MODES
from arena_verl.core.strategies import strategy_names, strategy_of, strategy_option_types

__all__ = ["TournamentOptions", "RefereeOptions", "DEFAULT_L2"]

# The tournament's numeric default, written once: the fit, the schedulers, the runner and the settings read it.
DEFAULT_L2 = 0.1  # Bradley-Terry L2 prior (reward.arena.l2)


@dataclass(frozen=True)
class TournamentOptions(Part):
    """The tournament's keys of ``reward.arena``, and each strategy's own knobs (``strategy_options``)."""

    strategy: str | None = setting(
        None,
        choices=strategy_names,
        help="the tournament schedule ([strategies](tournament.md#strategies-strategies)); null: the mode's own, "
        "`round_robin` for `tournament_all` (the paper's ArenaRL baseline), `live` otherwise",
    )
    budget: int | None = setting(
        None,
        low=1,
        help="judge calls per routed group for the budgeted strategies (`random`, `info_gain`, `paced`, `swiss`; "
        "null: live's count, 3N-6); at least N-1 (2(N-1) with `two_sided`)",
    )
    l2: float = setting(
        DEFAULT_L2, low=1e-6, high=1e3, help="Bradley-Terry L2 prior (a fit that stops at its iteration limit warns)"
    )
    order_effect: bool = setting(False, help="fit a first-position bonus with the strengths")
    two_sided: bool = setting(False, help="judge each pair in both orders (2 calls per pair, counted in `budget`)")
    mirror_augment: bool = setting(
        False,
        help="the paper's mirror augmentation (excludes `order_effect`: mirrored verdicts have no position signal)",
    )
    on_judge_failure: str = setting(
        "tie", choices=FAILURE_POLICIES, help="what a failed judge call counts as in the fit (never a win)"
    )
    prefix_aware: bool = setting(
        False,
        help="presentation order for the judge's prefix cache: every trace shown first within one call of half its "
        "calls, and where that leaves the order open the trace whose head the group's engine already computed goes "
        "first ([benchmark](benchmarks/ranking.md#presentation-order))",
    )
    wait_for_verdicts: bool = setting(
        False,
        help="`true`: an arrival is scheduled only once every match in flight has its verdict (the paper's live "
        "rule, slower); `false`: at once, on the verdicts in hand",
    )
    # Every registered strategy's own knobs (core/strategies.py), by strategy: its scheduler gets its own.
    strategy_options: dict[str, Any] = registered_parts(strategy_option_types)

    def rules(self) -> None:
        if self.mirror_augment and self.order_effect:
            raise ValueError(
                f"{self.PREFIX}.mirror_augment and {self.PREFIX}.order_effect exclude each other: mirrored verdicts "
                "carry no position signal, so the order effect could not be fitted"
            )
        if self.budget is not None and self.strategy is not None and strategy_of(self.strategy).fixed_count:
            raise ValueError(f"{self.PREFIX}.budget applies to the budgeted strategies, not {self.strategy!r}")

    def tournament_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``Tournament(num_items, judge, **kwargs, seed=..., idle_gate=...)``."""
        strategy = self.strategy if self.strategy is not None else "live"
        return {
            "strategy": strategy,
            "budget": self.budget,
            "l2": self.l2,
            "order_effect": self.order_effect,
            "two_sided": self.two_sided,
            "mirror_augment": self.mirror_augment,
            "on_failure": self.on_judge_failure,
            "prefix_aware": self.prefix_aware,
            "wait_for_verdicts": self.wait_for_verdicts,
            "strategy_options": self.strategy_options.get(strategy),
        }

    def with_strategy(self, strategy: str, **changes: Any) -> TournamentOptions:
        return dataclasses.replace(self, strategy=strategy, **changes)


@dataclass(frozen=True)
class RefereeOptions(Part):
    """The referee's keys of ``reward.arena``: which groups go where, how long a group may take, and how verdicts
    become rewards."""

    mode: str = setting(
        "arena",
        choices=MODES,
        help="the route of each group ([modes](reward_loop.md#modes-every-baseline-of-the-paper))",
    )
    group_size: int = setting(0, low=0, help="samples per group; 0 = `actor_rollout_ref.rollout.n`")
    diversity_tol: float = setting(
        DIVERSITY_TOL, low=0.0, high=1.0, help="verifier rewards closer than this are equal (the group is non-diverse)"
    )
    reward_scale: float = setting(  # its range depends on allow_reward_scale_above_one: rules()
        0.5,
        help="width of the judge's reward spread around the verifier reward, in (0, 1) unless "
        "`allow_reward_scale_above_one`: reward = verifier + scale x (sigmoid(theta - mean) - 0.5)",
    )
    allow_reward_scale_above_one: bool = setting(
        False, help="opt-in for `reward_scale >= 1`, where a routed all-incorrect trace can outrank an all-correct one"
    )
    speculative: bool = setting(True, help="run the tournament while a group's verifier rewards still agree")
    completion_grace: float | None = setting(
        None,
        low=0.0,
        high=1e3,
        low_open=True,
        help="judge-call latencies a complete group waits for verdicts in flight before it is answered with those "
        "in hand (null: waits for all, up to `tournament_timeout_s`); `configs/arena_paced.yaml` sets 1.3",
    )
    min_verdict_share: float = setting(
        0.5,
        low=0.0,
        high=1.0,
        help="a routed group whose tournament got fewer than this share of its planned verdicts gets its verifier "
        "rewards, a counted fallback (`arena/fallback_thin`; [failures](failures.md)); 0 turns the rule off",
    )
    certainty_weighting: bool = setting(
        False,
        help="scale each routed tournament group's GRPO advantages by its certainty that its traces differ "
        "([reward loop](reward_loop.md#certainty-weighting)); needs `algorithm.adv_estimator=arena_grpo` and a "
        "tournament mode, refused otherwise naming both keys",
    )
    group_deadline_s: float = setting(
        900.0,
        low=0.0,
        high=DAY_S,
        low_open=True,
        help="an incomplete group gets verifier rewards after this (from its first sample; `arena_setting=node8` "
        "sets 1800, `paper` 3600)",
    )
    tournament_timeout_s: float | None = setting(
        None,
        low=0.0,
        high=DAY_S,
        low_open=True,
        help="judging of a complete group past this falls back to verifier rewards (`judge_error`). Null: what the "
        "judge settings need, one judge call with all its retries and `completion_grace x judge.timeout_s`, at "
        "least 900 s ([limits that must agree](#limits-that-must-agree))",
    )
    breaker_open_after_s: float | None = setting(
        None,
        low=0.0,
        high=DAY_S,
        help="the judge breaker ([failures](failures.md#a-judge-that-does-not-answer)): after this long without an "
        "answer, only transport failures and timeouts meanwhile, a referee sends no more judge calls and its groups "
        "fall back at once (`judge_down`) until a probe answers; null: one judge call's bound (its timeout and "
        "retries: a judge that stops answering costs at most one call), at most 60 s; 0: off",
    )
    breaker_probe_s: float = setting(
        10.0,
        low=0.0,
        high=DAY_S,
        low_open=True,
        help="while the breaker is open: one probe (a real comparison, bounded by this) this often; its answer "
        "closes the breaker and starts the latency estimate afresh",
    )
    groups_remembered: int = setting(
        20_000,
        low=1,
        help="answered groups a referee shard remembers (without their traces) to answer a duplicate or late sample "
        "of one; the oldest is forgotten first. Keep it above a step's groups (a forgotten group's late sample "
        "opens a new group that waits out `group_deadline_s`)",
    )
    steps_remembered: int = setting(
        512, low=2, help="training steps whose per-step counters a referee shard keeps for the step's metrics"
    )
    advantage_norm_by_std: bool | None = setting(
        None,
        help="the GRPO normalisation the sample-utilisation metrics assume; null: "
        "`algorithm.norm_adv_by_std_in_grpo` (true when unset)",
    )

    def rules(self) -> None:
        if self.allow_reward_scale_above_one and not 0 < self.reward_scale <= 1e3:
            raise ValueError(f"{self.PREFIX}.reward_scale must be in (0, 1000], got {self.reward_scale!r}")
        if not self.allow_reward_scale_above_one and not 0 < self.reward_scale < 1:
            raise ValueError(
                f"{self.PREFIX}.reward_scale must be in (0, 1), got {self.reward_scale!r}: at 1 or more a routed "
                f"all-incorrect trace can outrank an all-correct one (set {self.PREFIX}.allow_reward_scale_above_one"
                "=true to allow it)"
            )
