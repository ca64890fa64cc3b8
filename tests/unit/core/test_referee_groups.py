"""The referee's group bookkeeping and verdict builders as pure units (no event loop: a plain object stands in for a
future), and the package's old import paths."""

import math

import numpy as np
import pytest

from arena_verl.core.judge_protocol import Trace
from arena_verl.core.names import (
    FALLBACK_DEADLINE,
    FALLBACK_JUDGE_ERROR,
    FALLBACK_THIN,
    ROUTE_POINTWISE,
    ROUTE_VERIFIER,
)
from arena_verl.core.referee.answers import (
    NEUTRAL_SCORE,
    is_thin,
    pointwise_verdicts,
    tournament_verdicts,
    verifier_verdicts,
)
from arena_verl.core.referee.groups import Arrival, Group, GroupBook, Submission, group_key, normalised, stable_seed
from arena_verl.core.tournament.runner import TournamentResult


def sub(key, reward=1.0, uid="g", content=None):
    return Submission(uid, key, "p", Trace(f"t{key}"), reward, content_key=content)


def test_arrivals_new_duplicate_padding_overflow_late():
    group = Group("g", 2)
    assert group.arrival(sub("a", content="x")) == (Arrival.NEW, None)
    group.join(sub("a", content="x"), object())
    assert not group.full
    assert group.arrival(sub("a")) == (Arrival.DUPLICATE, 0)
    group.join(sub("b", content="y"), object())
    assert group.full and group.rewards() == [1.0, 1.0]
    assert group.arrival(sub("c", content="y")) == (Arrival.PADDING, 1)  # a copy of b, padded in by verl
    assert group.arrival(sub("c", content="z")) == (Arrival.OVERFLOW, None)
    assert group.arrival(sub("c")) == (Arrival.OVERFLOW, None)


def test_a_sample_after_an_incomplete_group_was_answered_is_late():
    group = Group("g", 3)
    group.join(sub("a"), object())
    group.answered = True
    assert group.arrival(sub("b")) == (Arrival.LATE, None)
    assert group.arrival(sub("a")) == (Arrival.DUPLICATE, 0)  # a duplicate still gets its answer


def test_the_first_copy_of_a_content_is_the_original():
    group = Group("g", 3)
    for key in ("a", "b", "c"):
        group.join(sub(key, content="same"), object())
    assert group.arrival(sub("d", content="same")) == (Arrival.PADDING, 0)


def test_the_book_forgets_traces_and_keeps_the_last_answered_groups():
    book = GroupBook(group_size=1, remembered=2)
    for uid in ("u1", "u2", "u3"):
        group = book.start(uid)
        group.join(sub("a", uid=uid), object())
        assert book.find(uid) is group
        book.close(group)
        assert uid not in book.open and group.members == [] and group.tournament is None
        assert group.index_of == {"a": 0}  # keys stay: a duplicate of an answered group still gets its answer
    assert list(book.recent) == ["u2", "u3"] and book.find("u1") is None


def test_group_keys_and_seeds_are_stable_for_any_uid():
    assert group_key("abc") == "abc"
    assert group_key(7) == "int:7" and group_key(np.int64(7)) != group_key("7")
    assert stable_seed("abc") == stable_seed("abc") and stable_seed("abc") != stable_seed("abd")
    assert stable_seed(7) == stable_seed("int:7")  # seeded by the key, whatever the uid's type


@pytest.mark.parametrize(("reward", "expected"), [(math.nan, 0.0), (math.inf, 0.0), ("x", 0.0), (1, 1.0), (0.5, 0.5)])
def test_normalised_rewards_are_finite_floats(reward, expected):
    out = normalised(Submission(3, "a", "p", Trace("t"), reward))
    assert out.uid == "int:3" and type(out.verifier_reward) is float and out.verifier_reward == expected


def test_an_already_normal_submission_is_returned_as_is():
    submission = sub("a", 0.5)
    assert normalised(submission) is submission


def test_verifier_verdicts_carry_the_fallback_and_the_groups_calls():
    verdicts = verifier_verdicts([1.0, 0.0], judge_calls=3, fallback=FALLBACK_DEADLINE)
    assert [v.reward for v in verdicts] == [1.0, 0.0]
    assert all(v.route == ROUTE_VERIFIER and v.judge_calls == 3 and v.fallback == FALLBACK_DEADLINE for v in verdicts)
    assert not any(v.routed for v in verdicts)


def test_pointwise_verdicts_score_a_failed_call_as_neutral():
    verdicts = pointwise_verdicts("adaptive_pointwise", [1.0, None, ValueError()], [1.0, 1.0, 0.0], 0.5, True)
    assert [v.reward for v in verdicts] == [1.25, 1.0 + 0.5 * (NEUTRAL_SCORE - 0.5), 0.0]
    assert [v.fallback for v in verdicts] == [0, FALLBACK_JUDGE_ERROR, FALLBACK_JUDGE_ERROR]
    assert [v.routed for v in verdicts] == [True, False, False]
    assert all(v.judge_calls == 3 and v.judge_failures == 2 and v.route == ROUTE_POINTWISE for v in verdicts)
    judge_only = pointwise_verdicts("pointwise", [None], [1.0], 0.5, True)
    assert judge_only[0].reward == NEUTRAL_SCORE  # the judge-only baseline never falls back on the verifier


def test_tournament_verdicts_mark_members_without_games_and_all_failed_fits():
    result = TournamentResult(
        comparisons=[(0, 1, 1.0)],
        strengths=np.array([0.5, -0.5, 0.0]),
        wins=np.array([1.0, 0.0, 0.0]),
        games=np.array([1, 1, 0]),
        judge_calls=2,
        failed_calls=1,
        dropped_calls=0,
    )
    verifier = [1.0, 1.0, 1.0]
    verdicts = tournament_verdicts(result, np.array([1.1, 0.9, 1.0]), True, verifier, planned=2, min_share=0.5)
    assert [v.win_rate for v in verdicts] == [1.0, 0.0, -1.0]
    assert [v.strength for v in verdicts] == [0.5, -0.5, 0.0] and all(v.routed for v in verdicts)
    assert [v.reward for v in verdicts] == [1.1, 0.9, 1.0]
    result.failed_calls = 2
    failed = tournament_verdicts(result, np.array([1.0, 1.0, 1.0]), True, verifier, planned=2, min_share=0.5)
    assert not any(v.routed for v in failed) and {v.fallback for v in failed} == {FALLBACK_JUDGE_ERROR}


@pytest.mark.parametrize(
    "answered, planned, min_share, thin",
    [(1, 6, 0.5, True), (2, 6, 0.5, True), (3, 6, 0.5, False), (6, 6, 1.0, False), (5, 6, 1.0, True),
     (1, 18, 0.0, False), (0, 0, 0.5, False)],
)  # fmt: skip
def test_a_group_with_fewer_than_its_share_of_planned_verdicts_is_thin(answered, planned, min_share, thin):
    assert is_thin(answered, planned, min_share) is thin


def test_a_thin_tournament_gives_its_verifier_rewards_as_a_counted_fallback():
    # One verdict of six planned (a judge that died after its first answer): the fit would still spread the
    # strengths, and GRPO would blow that spread up to full-size advantages.
    result = TournamentResult(
        comparisons=[(0, 1, 1.0)],
        strengths=np.array([0.3, -0.3, 0.0, 0.0]),
        wins=np.array([1.0, 0.0, 0.0, 0.0]),
        games=np.array([1, 1, 0, 0]),
        judge_calls=6,
        failed_calls=5,
    )
    verifier = [0.0, 0.0, 0.0, 0.0]
    verdicts = tournament_verdicts(result, np.array([0.1, -0.1, 0.0, 0.0]), True, verifier, planned=6, min_share=0.5)
    assert [v.reward for v in verdicts] == verifier
    assert {v.fallback for v in verdicts} == {FALLBACK_THIN} and not any(v.routed for v in verdicts)
    assert all(v.judge_failures == 5 and v.judge_calls == 6 for v in verdicts)
    kept = tournament_verdicts(result, np.array([0.1, -0.1, 0.0, 0.0]), True, verifier, planned=6, min_share=0.0)
    assert all(v.routed and not v.fallback for v in kept) and kept[0].reward == 0.1


def test_the_old_import_paths_still_work():
    from arena_verl.core import referee
    from arena_verl.core.judge_protocol import Judge, JudgeStats, Reply  # noqa: F401
    from arena_verl.core.judge_protocol import Trace as JudgeTrace
    from arena_verl.core.referee import (  # noqa: F401
        COUNTERS,
        FALLBACK_REASONS,
        NEUTRAL_SCORE,
        Referee,
        Submission,
        Verdict,
        derive_metrics,
        group_key,
        grpo_advantages,
        position_figures,
    )

    assert JudgeTrace is Trace
    # The seed is read from its own module, not through a private alias of the package.
    assert referee.stable_seed("u") == stable_seed("u")
    with pytest.raises(AttributeError):
        referee.no_such_name  # noqa: B018
