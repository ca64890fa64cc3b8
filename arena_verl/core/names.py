"""The arena's vocabulary, declared once: modes, strategies, failure policies, answer extraction modes, judge backends,
verification statuses, routes, fallback reasons and source kinds. Plain tuples and dicts (stdlib only), so that the
settings can validate against them without importing what implements them.

Words used throughout: a *non-diverse* group is one whose verifier rewards are all equal within
``DIVERSITY_TOL`` (its GRPO advantage is zero; some metric names say ``uniform``); the *strategy* picks which pairs a
tournament judges (implemented by a *scheduler*); a sample's *kind* (math, multiple choice, code) decides how it is
verified and which judge template it gets.
"""

__all__ = [
    "MODES",
    "FAILURE_POLICIES",
    "EXTRACTION_MODES",
    "VERDICT_MODES",
    "PROBABILITY_READS_PER_VERDICT",
    "VERIFY_STATUSES",
    "ROUTE_VERIFIER",
    "ROUTE_TOURNAMENT",
    "ROUTE_POINTWISE",
    "ROUTE_NAMES",
    "FALLBACK_REASONS",
    "FALLBACK_DEADLINE",
    "FALLBACK_JUDGE_ERROR",
    "FALLBACK_REFEREE_LOST",
    "FALLBACK_OVERFLOW",
    "FALLBACK_LATE",
    "FALLBACK_THIN",
    "FALLBACK_JUDGE_DOWN",
    "DIVERSITY_TOL",
]

# reward.arena.mode: RLVR, RLAIF pointwise, ArenaRL (full tournament), adaptive pointwise, the arena. What each one
# means (its routes, rewards, speculation and default strategy): arena_verl/core/modes.py.
MODES = ("rlvr", "pointwise", "tournament_all", "adaptive_pointwise", "arena")

# The strategies (reward.arena.strategy) are a registry: arena_verl/core/strategies.py.
FAILURE_POLICIES = ("tie", "drop")  # what a failed judge call becomes in the fit
EXTRACTION_MODES = ("boxed", "lenient")  # reward.arena.answer_extraction
# reward.arena.judge.verdict: a generated verdict token, or the label probabilities at the verdict position.
VERDICT_MODES = ("generate", "probability")
# A probability verdict reads the next-token probabilities at most this many times (the verdict position, and up to
# two continuations for tokens that start labels of different outcomes): the call budget counts them.
PROBABILITY_READS_PER_VERDICT = 3
VERIFY_STATUSES = ("correct", "wrong", "no_answer", "hedged", "empty", "timeout", "error")

# Routes (extra info "arena/route").
ROUTE_VERIFIER, ROUTE_TOURNAMENT, ROUTE_POINTWISE = 0, 1, 2
ROUTE_NAMES = {ROUTE_VERIFIER: "verifier", ROUTE_TOURNAMENT: "tournament", ROUTE_POINTWISE: "pointwise"}

# Fallback reason codes (extra info "arena/fallback"): 0 = none. The names are the tracker's arena/fallback_<name>.
FALLBACK_REASONS = {
    0: "none",
    1: "deadline",  # the group was still incomplete at its deadline
    2: "judge_error",  # the tournament or pointwise judging failed or timed out
    3: "referee_lost",  # the referee actor died or could not be reached (set by the reward manager)
    4: "overflow",  # more samples than the group size
    5: "late",  # arrived after its group was answered
    6: "thin",  # its tournament got fewer than reward.arena.min_verdict_share of its planned verdicts
    7: "judge_down",  # the judge breaker was open: the judge had stopped answering (core/referee/breaker.py)
}
FALLBACK_DEADLINE, FALLBACK_JUDGE_ERROR, FALLBACK_REFEREE_LOST, FALLBACK_OVERFLOW, FALLBACK_LATE = 1, 2, 3, 4, 5
FALLBACK_THIN = 6
FALLBACK_JUDGE_DOWN = 7

# Verifier rewards closer than this count as equal (reward.arena.diversity_tol's default, and the tolerance every
# offline tool uses to call a group non-diverse).
DIVERSITY_TOL = 1e-6
