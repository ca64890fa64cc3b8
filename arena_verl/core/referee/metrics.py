"""The referee's metrics: the counters every ``metrics()`` answer carries, their accounting per training step, the
counts of one answered group, and the figures derived from them (the tracker's ``arena/*``). Pure: numpy and the
core's names only, so that the tracker hook reads them without the asyncio referee."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence

import numpy as np

from arena_verl.core.names import FALLBACK_REASONS
from arena_verl.core.referee.members import is_member_counter, member_metrics

__all__ = [
    "COUNTERS",
    "JUDGE_STAT_COUNTERS",
    "StepCounters",
    "group_counts",
    "utilisation_counts",
    "derive_metrics",
    "grpo_advantages",
    "position_figures",
    "GRPO_STD_EPS",
    "NONZERO_ADVANTAGE_TOL",
]

# verl's grpo estimator: (r - mean) / (std + eps). A term of the advantage, not a tolerance on rewards.
GRPO_STD_EPS = 1e-6
# |advantage| above this moves the policy. A tolerance on advantages, not on rewards: whether a group's verifier
# rewards are equal is decided with reward.arena.diversity_tol (core.names.DIVERSITY_TOL). Computed in float64: a
# constant group's advantage is ~1e-10 here, while verl's float32 arithmetic leaves some constant groups of
# non-dyadic rewards (e.g. all 0.7) a uniform ~0.05.
NONZERO_ADVANTAGE_TOL = 1e-6
# Every metrics() answer carries these counters (0 when nothing happened), so tracker series stay aligned.
COUNTERS = (
    "samples",
    "samples_routed",
    "duplicates",
    "groups",
    "groups_routed",
    "groups_uniform",
    "groups_all_correct",
    "groups_all_incorrect",
    "judge_calls",
    "judge_calls_routed",
    "judge_calls_wasted",
    "judge_failures",
    "judge_calls_dropped",  # in flight at a complete group's grace deadline (completion_grace): cancelled
    "judge_calls_low_mass",  # probability verdicts whose labels got less than judge.low_mass_floor (still used)
    # What the judge's engine computed (JudgeStats; 0 from a judge that reads no tokens or reports no usage):
    "judge_prompt_tokens",  # prompt tokens of every generation and read, re-asks and retries included
    "judge_cached_tokens",  # ... of them served from the engine's prefix cache
    "judge_trace_tokens",  # the judged traces' tokens as shown, once per group (the cost bound's N x L)
    "judge_calls_rerouted",  # requests sent past their group's replica or engine, which was out of the ring
    "judge_calls_simulated",  # ... made by a SIMULATED judge (no model read the traces): arena/simulated_judge
    # Thin groups (fallback_thin): the verdicts they got and the verdicts their tournaments planned.
    "thin_verdicts",
    "thin_planned",
    "shed_speculation",  # idle-time speculative work held back: the judge pool had a full pool's worth queued
    "shed_budget",  # a complete group's remaining budget given up: the judge pool was far behind
    "breaker_openings",  # the judge breaker opened: the judge had stopped answering (core/referee/breaker.py)
    "breaker_closings",  # ... closed: a probe was answered
    "breaker_probes",  # probes sent while it was open
    *(f"fallback_{name}" for code, name in FALLBACK_REASONS.items() if code),
    # Sample utilisation (the paper's Figure 5): GRPO's outcome advantage of every answered sample, from the rewards
    # the referee gave and from the verifier rewards alone (what RLVR gives the same samples).
    "advantage_samples",
    "nonzero_advantage",
    "nonzero_advantage_rlvr",
    "abs_advantage_sum",
    "abs_advantage_sum_rlvr",
    # The judge's position bias, from the verdicts that entered tournament fits (soft outcomes: position_figures).
    "verdicts_decided",  # outcome other than 0.5: a preference for one side (ties and failed calls are not)
    "verdicts_first_won",  # ... the sum of their outcomes: the trace shown first's share (hard: its wins)
    "order_pairs",  # pairs judged in both presentation orders, decided in each
    "order_pairs_consistent",  # ... where every verdict preferred the same trace (outcome on its side of 0.5)
    "order_effect_sum",  # the fitted first-position bonus (order_effect: true), summed over routed tournaments
    "order_effect_fits",
    "certainty_sum",  # routed tournaments' certainty that their traces differ (core/tournament/certainty.py), summed
    "certainty_groups",  # ... over this many routed tournaments
)


# Step counters read from the judge's own cumulative stats (JudgeStats field), charged to the next group answered.
JUDGE_STAT_COUNTERS = {
    "judge_calls_low_mass": "low_mass",
    "judge_prompt_tokens": "prompt_tokens",
    "judge_cached_tokens": "cached_tokens",
    "judge_trace_tokens": "trace_tokens",
    "judge_calls_rerouted": "rerouted",
}


class StepCounters:
    """Counters since the start and per training step; the last ``kept`` steps are kept (a step's counters are
    created by its first count, the oldest step is dropped past the cap; ``reward.arena.steps_remembered``)."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.total: collections.Counter[str] = collections.Counter()
        self.by_step: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    def add(self, step: int | None, key: str, amount: float = 1) -> None:
        self.total[key] += amount
        if step is not None:
            self.by_step[step][key] += amount
            if len(self.by_step) > self.kept:
                del self.by_step[min(self.by_step)]

    def add_all(self, step: int | None, amounts: dict[str, float]) -> None:
        for key, amount in amounts.items():
            self.add(step, key, amount)

    def counts(self, step: int | None = None) -> dict[str, float]:
        """Every counter of ``COUNTERS``, for one step or since the start (0 for a step not kept or never seen), and
        a judge ensemble's per-member counters (:mod:`~arena_verl.core.referee.members`) where there are any."""
        counts = self.by_step.get(step, collections.Counter()) if step is not None else self.total
        out = {key: float(counts[key]) for key in COUNTERS}
        out.update({key: float(value) for key, value in counts.items() if is_member_counter(key)})
        return out


def group_counts(
    verdicts: Sequence,
    verifier_rewards: Sequence[float],
    *,
    uniform: bool,
    complete: bool,
    position: dict[str, float],
    order_effect: float | None,
    norm_by_std: bool,
) -> collections.Counter[str]:
    """The counters one answered group adds. Routed means "the reward came from judge verdicts": a group counts as
    routed when at least one of its samples' rewards did (``samples_routed`` counts them one by one), and its judge
    calls are charged as routed; calls of a group that got no reward from them (it turned out diverse, every call
    failed, the deadline or an error came first) are charged as wasted.

    Parameters
    ----------
    verdicts : sequence of Verdict
        The group's answers (``judge_calls`` and ``judge_failures`` are the group's, on every verdict).
    verifier_rewards : sequence of float
        The verifier reward of each member, in the order of ``verdicts``.
    uniform : bool
        Whether the verifier rewards are equal within ``diversity_tol``.
    complete : bool
        Whether every sample arrived: only a complete group counts as uniform or in the advantage figures (an
        incomplete group's advantages are not the ones verl computes for its uid).
    position : dict
        ``position_figures`` of the group's tournament verdicts (empty without a tournament).
    order_effect : float or None
        The tournament's fitted first-position bonus, None when not fitted.
    norm_by_std : bool
        verl's ``norm_adv_by_std_in_grpo``.
    """
    calls = verdicts[0].judge_calls if verdicts else 0
    routed = sum(v.routed for v in verdicts)
    counts: collections.Counter[str] = collections.Counter()
    counts["groups"] += 1
    counts["judge_calls"] += calls
    counts["samples_routed"] += routed
    if routed:
        counts["groups_routed"] += 1
        counts["judge_calls_routed"] += calls
    else:
        counts["judge_calls_wasted"] += calls
    if uniform and complete:
        counts["groups_uniform"] += 1
        counts["groups_all_correct" if verifier_rewards[0] > 0 else "groups_all_incorrect"] += 1
    counts["judge_failures"] += verdicts[0].judge_failures if verdicts else 0
    for verdict in verdicts:
        if verdict.fallback:
            counts[f"fallback_{FALLBACK_REASONS[verdict.fallback]}"] += 1
    if complete:
        counts.update(utilisation_counts([v.reward for v in verdicts], verifier_rewards, norm_by_std))
    if routed:
        counts.update(position)
        if verdicts[0].certainty >= 0:
            counts["certainty_sum"] += verdicts[0].certainty
            counts["certainty_groups"] += 1
        if order_effect is not None:
            counts["order_effect_sum"] += order_effect
            counts["order_effect_fits"] += 1
    return counts


def utilisation_counts(
    rewards: Sequence[float], verifier_rewards: Sequence[float], norm_by_std: bool
) -> dict[str, float]:
    """GRPO advantages of one group's samples under the given rewards and under the verifier's alone (RLVR, the
    ``_rlvr`` counters): how many samples, how many move the policy, and the sum of ``|advantage|``."""
    counts: dict[str, float] = {"advantage_samples": len(rewards)}
    for suffix, values in (("", rewards), ("_rlvr", verifier_rewards)):
        advantages = np.abs(grpo_advantages(values, norm_by_std))
        counts[f"nonzero_advantage{suffix}"] = int((advantages > NONZERO_ADVANTAGE_TOL).sum())
        counts[f"abs_advantage_sum{suffix}"] = float(advantages.sum())
    return counts


def derive_metrics(counts: dict[str, float]) -> dict[str, float]:
    """``arena/<counter>`` for every counter, plus the ratios a user watches: alpha (the non-diverse share of groups,
    split into all-correct and all-incorrect), the share routed to the judge, judge calls per routed group, sample
    utilisation under the arena's rewards and under RLVR's (``*_rlvr``), and the judge's position bias. A ratio whose
    denominator is 0 is 0.0, except the position-bias figures, which are left out when nothing measured them (a
    0.0 or 0.5 would read as a measurement)."""
    out = {f"arena/{key}": float(counts.get(key, 0.0)) for key in COUNTERS}
    groups, routed, uniform = counts.get("groups", 0), counts.get("groups_routed", 0), counts.get("groups_uniform", 0)

    def share(numerator: str, denominator: float) -> float:
        return counts.get(numerator, 0.0) / denominator if denominator else 0.0

    out["arena/alpha"] = uniform / groups if groups else 0.0
    # The share of the step's judge calls that a SIMULATED judge answered (1.0: no model judged anything).
    out["arena/simulated_judge"] = share("judge_calls_simulated", counts.get("judge_calls", 0))
    out["arena/all_correct_share"] = share("groups_all_correct", groups)
    out["arena/all_incorrect_share"] = share("groups_all_incorrect", groups)
    out["arena/all_correct_share_of_uniform"] = share("groups_all_correct", uniform)
    out["arena/alpha_routed"] = routed / groups if groups else 0.0
    out["arena/judge_calls_per_routed_group"] = share("judge_calls_routed", routed)
    # Computed tokens (prompt - cached) per trace shown: the bound is about (N + C) / N trace lengths plus template.
    computed = counts.get("judge_prompt_tokens", 0) - counts.get("judge_cached_tokens", 0)
    out["arena/judge_computed_tokens"] = float(computed)
    out["arena/judge_computed_per_trace_token"] = computed / counts["judge_trace_tokens"] \
        if counts.get("judge_trace_tokens", 0) else 0.0  # fmt: skip
    samples = counts.get("advantage_samples", 0)
    for suffix in ("", "_rlvr"):
        out[f"arena/nonzero_advantage_share{suffix}"] = share(f"nonzero_advantage{suffix}", samples)
        out[f"arena/mean_abs_advantage{suffix}"] = share(f"abs_advantage_sum{suffix}", samples)
    if counts.get("thin_planned", 0):  # left out in a step without a thin group
        out["arena/thin_verdict_share"] = share("thin_verdicts", counts["thin_planned"])
    if counts.get("verdicts_decided", 0):
        out["arena/first_position_win_share"] = share("verdicts_first_won", counts["verdicts_decided"])
    if counts.get("order_pairs", 0):
        out["arena/self_consistency"] = share("order_pairs_consistent", counts["order_pairs"])
    if counts.get("certainty_groups", 0):  # left out in a step without a routed tournament
        out["arena/certainty"] = share("certainty_sum", counts["certainty_groups"])
    if counts.get("order_effect_fits", 0):
        out["arena/order_effect"] = share("order_effect_sum", counts["order_effect_fits"])
    out.update(member_metrics(counts))  # a judge ensemble's members (none: nothing)
    return out


def grpo_advantages(rewards, norm_by_std: bool = True) -> np.ndarray:
    """The outcome advantage verl's ``grpo`` estimator gives one group: ``(r - mean) / (std + 1e-6)`` with the
    unbiased std (``r - mean`` without ``norm_adv_by_std_in_grpo``); a group of one keeps its reward, as in verl."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.size < 2:
        return rewards.copy()
    centred = rewards - rewards.mean()
    return centred / (rewards.std(ddof=1) + GRPO_STD_EPS) if norm_by_std else centred


def position_figures(comparisons: Iterable[tuple[int, int, float | None]]) -> dict[str, float]:
    """Position-bias counts over one tournament's verdicts ``(first, second, outcome)`` in presentation order.

    Outcomes are soft: a number in [0, 1], P(the trace shown first is better); hard verdicts are 0, 0.5 and 1, and
    for them every figure is a plain count. A verdict is *decided* unless its outcome is exactly 0.5 (a tie, a
    failed call counted as a tie, or a judge without a preference) or None (a failed call); it *prefers* the trace
    on its side of 0.5 (the first above, the second below).

    Returns
    -------
    dict
        ``verdicts_decided``: the decided verdicts; ``verdicts_first_won``: the sum of their outcomes, the first-shown
        trace's share of the preference (a hard verdict adds 1 or 0, a soft 0.7 adds 0.7), so that
        ``verdicts_first_won / verdicts_decided`` is the mean outcome of decided verdicts (0.5: no position bias);
        ``order_pairs``: pairs judged with each trace shown first and decided in each order;
        ``order_pairs_consistent``: those whose decided verdicts all prefer the same trace.
    """
    decided = [
        (first, second, outcome) for first, second, outcome in comparisons if outcome is not None and outcome != 0.5
    ]
    preferred: dict[tuple[int, int], dict[int, set[int]]] = collections.defaultdict(
        lambda: collections.defaultdict(set)
    )
    for first, second, outcome in decided:
        preferred[(min(first, second), max(first, second))][first].add(first if outcome > 0.5 else second)
    pairs = consistent = 0
    for by_first in preferred.values():
        if len(by_first) == 2:  # judged with each trace shown first
            pairs += 1
            one, other = by_first.values()
            consistent += len(one) == 1 and one == other
    return {
        "verdicts_decided": len(decided),
        "verdicts_first_won": float(sum(outcome for _, _, outcome in decided)),
        "order_pairs": pairs,
        "order_pairs_consistent": consistent,
    }
