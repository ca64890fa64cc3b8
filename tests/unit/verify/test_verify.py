"""The math verifier: equivalent forms pass, wrong answers and loopholes fail, and nothing raises or hangs."""

import os
import signal
import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from arena_verl.verify.extraction import extract_final_answer
from arena_verl.verify.ground_truth import ground_truth_text
from arena_verl.verify.math_verifier import MathVerifier


@pytest.fixture(scope="module")
def verifier():
    v = MathVerifier(timeout_s=3, num_workers=1)
    yield v
    v.close()


@pytest.mark.parametrize(
    "answer",
    [
        r"\boxed{\frac{1}{2}}",
        r"\boxed{1/2}",
        r"\boxed{0.5}",
        r"\boxed{\dfrac12}",
        r"\boxed{\frac{2}{4}}",
        r"\boxed{0.50}",
    ],
)
def test_equivalent_forms_pass(verifier, answer):
    result = verifier.score(f"Some reasoning.\nSo the result is {answer}.", r"\frac{1}{2}")
    assert (result.score, result.status) == (1.0, "correct")


@pytest.mark.parametrize(
    "trace, ground_truth",
    [
        ("We get x = 3.\nThe answer is 42.", "42"),
        ("...\n**Final Answer:** 7", "7"),
        ("Answer: $\\sqrt{2}$", "\\sqrt{2}"),
        ("\\boxed{x^2 + 2x + 1}", "(x+1)^2"),
        ("\\boxed{\\{1, 2\\}}", "\\{2, 1\\}"),
        ("The answer is 42", 42),
        ("The answer is 42", ["42"]),
    ],
)
def test_answer_forms_and_ground_truth_types(verifier, trace, ground_truth):
    assert verifier.score(trace, ground_truth).score == 1.0


def test_percent_keeps_the_number(verifier):
    # Documented choice (math-verify's rule): the sign is dropped, so 50% is 50, not 1/2.
    assert verifier.score(r"\boxed{50\%}", "50").score == 1.0
    assert verifier.score(r"\boxed{50\%}", r"\frac{1}{2}").score == 0.0


@pytest.mark.parametrize(
    "trace, status",
    [
        (r"\boxed{3}", "wrong"),
        ("The answer is 41.\nLet me double check everything once more, maybe later.", "no_answer"),
        (r"It is \boxed{1/2} or maybe \boxed{3}", "hedged"),
        (r"\boxed{3} ... \boxed{1/2}", "hedged"),
        ("", "empty"),
        ("   \n  ", "empty"),
        (r"\boxed{}", "no_answer"),
        (r"\boxed{1/2", "no_answer"),
        ("no answer here at all", "no_answer"),
    ],
)
def test_wrong_answers_and_loopholes_fail(verifier, trace, status):
    result = verifier.score(trace, r"\frac{1}{2}")
    assert (result.score, result.status) == (0.0, status)


def test_same_answer_boxed_twice_is_not_a_hedge(verifier):
    assert verifier.score(r"First \boxed{1/2}. Checking again: \boxed{ 1/2 }", "1/2").score == 1.0


def test_huge_trace_only_the_tail_counts(verifier):
    start = time.perf_counter()
    middle = verifier.score(r"\boxed{1/2}" + "x" * 1_000_000, "1/2")
    end = verifier.score("y" * 1_000_000 + r"\boxed{1/2}", "1/2")
    assert (middle.status, end.status) == ("no_answer", "correct")
    assert time.perf_counter() - start < 10


def test_non_utf8_bytes_do_not_raise(verifier):
    assert verifier.score(b"\xff\xfe\xfa The answer is \xc3\x28 7", "7").score in (0.0, 1.0)
    assert verifier.score(b"\xff\xfe", "7").status == "no_answer"


def test_missing_or_odd_ground_truth_scores_zero_with_error(verifier):
    for truth in (None, "", [], {"a": 1}):
        assert (verifier.score(r"\boxed{1}", truth).score, verifier.score(r"\boxed{1}", truth).status) == (0.0, "error")
    assert verifier.score(r"\boxed{" + "1" * 3000 + "}", "1").status == "error"


def test_latex_that_makes_sympy_hang_times_out_and_counts(verifier):
    start = time.perf_counter()
    result = verifier.score(r"\boxed{9^{9^{9^{9}}}}", "1")
    assert (result.score, result.status) == (0.0, "timeout")
    assert verifier.counts["timeout"] >= 1
    assert time.perf_counter() - start < 3 + 6
    assert verifier.score(r"\boxed{1}", "1").score == 1.0  # the pool still works afterwards
    assert sum(verifier.counts.values()) >= 2


def test_works_from_threads(verifier):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(lambda i: verifier.score(rf"\boxed{{{i}}}", str(i % 3)).score, range(8)))
    assert scores == [1.0 if i == i % 3 else 0.0 for i in range(8)]


def test_extract_final_answer():
    assert extract_final_answer(r"a \boxed{\frac{1}{2}} b") == (r"\frac{1}{2}", "ok")
    assert extract_final_answer(r"\boxed{\left\{1\right\}}") == (r"\left\{1\right\}", "ok")
    assert extract_final_answer("Thus the final answer is $12$.") == ("12", "ok")
    assert extract_final_answer("the answer is 3\nbut wait") == (None, "no_answer")


# Several boxed answers: one set answer for a set reference, a hedge for a single value.


@pytest.mark.parametrize(
    "trace, ground_truth",
    [
        (r"$$\boxed{(2, 2)} \quad \text{and} \quad \boxed{(6, 2)}$$", "(2, 2), (6, 2)"),
        (r"\boxed{(6,2)}, \boxed{(2,2)}", "(2, 2), (6, 2)"),
        (r"\boxed{1} and \boxed{2} and \boxed{3}", r"\{1,2,3\}"),
        (r"$\boxed{k = 45} \quad \text{and} \quad \boxed{n = 2}$", "k = 45, n = 2"),
        (r"\boxed{-2} \quad \text{and} \quad \boxed{1}", "1, -2"),
    ],
)
def test_several_boxes_are_one_set_answer_for_a_set_reference(verifier, trace, ground_truth):
    result = verifier.score(trace, ground_truth)
    assert (result.score, result.status) == (1.0, "correct")


@pytest.mark.parametrize(
    "trace, ground_truth, status",
    [
        (r"\boxed{(2, 2)} or maybe \boxed{(6, 2)}", "(2, 2)", "hedged"),  # a single tuple is one value
        (r"\boxed{1} or \boxed{2}", "1", "hedged"),
        (r"\boxed{[0, 1)} or \boxed{(0, 1]}", "[0, 1)", "hedged"),  # an interval is one value
        (r"\boxed{1}, \boxed{2}, \boxed{3}", "1, 2", "wrong"),  # a set answer with an extra element
        (r"\boxed{1}, \boxed{3}", "1, 2", "wrong"),
    ],
)
def test_several_boxes_still_hedge_or_fail(verifier, trace, ground_truth, status):
    result = verifier.score(trace, ground_truth)
    assert (result.score, result.status) == (0.0, status)


@pytest.mark.parametrize(
    "trace, ground_truth",
    [
        ("Final Answer: The largest $n$ is 34.", "34"),
        (
            r"So $\boxed{200}$ then $\boxed{255}$. Final Answer: The final answer is $10,455$. I hope it is correct.",
            "10455",
        ),
        ("The answer is $16,\\!386.20$. I apologize for the repetition. Here is the solution: ...", "16386.20"),
        ('Final Answer: The final answer is \\"$12$ and $13$\\". I hope it is correct.', "12, 13"),
    ],
)
def test_answer_lines(verifier, trace, ground_truth):
    result = verifier.score(trace, ground_truth)
    assert (result.score, result.status) == (1.0, "correct"), result


def test_an_answer_line_after_the_boxes_is_the_final_answer(verifier):
    assert verifier.score("\\boxed{3}\nOn second thought, the answer is 5.", "5").score == 1.0
    assert verifier.score("\\boxed{3}\nOn second thought, the answer is 5.", "3").status == "wrong"
    assert verifier.score("\\boxed{5}\nI am sure the answer is correct.", "5").score == 1.0  # no value: the box
    # An answer line before the last box does not count.
    assert verifier.score("The answer is 5. Hmm, \\boxed{1/2} or \\boxed{3}", "5").status == "hedged"


@pytest.fixture(scope="module")
def lenient():
    v = MathVerifier(timeout_s=3, num_workers=1, extraction="lenient")
    yield v
    v.close()


def test_lenient_extraction_reads_the_tail_with_math_verify(verifier, lenient):
    trace = "We solve the system and get $x = 5$, which checks out."
    assert verifier.score(trace, "5").status == "no_answer"  # the default: no box, no answer line
    assert (lenient.score(trace, "5").score, lenient.score(trace, "5").status) == (1.0, "correct")
    assert lenient.score("so the total is 7,425,000 dollars", "7425000").score == 1.0
    assert lenient.score("We get $x = 4$.", "5").status == "wrong"
    assert lenient.score("no number here at all", "5").score == 0.0
    assert lenient.score(r"\boxed{5} or \boxed{6}", "5").status == "hedged"  # boxes: the same rules
    assert lenient.score("", "5").status == "empty"
    start = time.perf_counter()
    assert lenient.score("x" * 1_000_000 + " so $x = 5$", "5").score == 1.0  # only the tail is read
    assert lenient.score("$x = 5$" + "x" * 1_000_000, "5").status == "no_answer"
    assert time.perf_counter() - start < 10


def test_extraction_mode_is_checked():
    with pytest.raises(ValueError, match="extraction"):
        MathVerifier(extraction="loose")


# Ground truths as verl's data pipeline hands them over (parquet rows become numpy arrays and scalars).


@pytest.mark.parametrize(
    "ground_truth",
    [
        np.int64(42),
        np.int32(42),
        np.float64(42.0),
        42.0,
        np.array(["42"]),
        np.array([42]),
        np.array("42"),
        np.array(["42"], dtype=object),
        np.str_("42"),
        b"42",
        np.bytes_(b"42"),
        ["42"],
        ("42",),
        [["42"]],
        Decimal("42"),
    ],
    ids=repr,
)
def test_ground_truth_types(verifier, ground_truth):
    result = verifier.score(r"\boxed{42}", ground_truth)
    assert (result.score, result.status) == (1.0, "correct")
    assert verifier.score(r"\boxed{41}", ground_truth).status == "wrong"


def test_ground_truth_lists_of_several_values_are_set_answers(verifier):
    for truth in (["2", "3"], np.array(["2", "3"]), np.array([2, 3]), (3, 2)):
        assert verifier.score(r"\boxed{2} and \boxed{3}", truth).score == 1.0
        assert verifier.score(r"\boxed{\{3, 2\}}", truth).score == 1.0
        assert verifier.score(r"\boxed{2}", truth).status == "wrong"
    assert verifier.score(r"\boxed{\frac{1}{2}}", Fraction(1, 2)).score == 1.0
    assert verifier.score(r"\boxed{0.5}", np.float32(0.5)).score == 1.0


def test_ground_truth_text():
    assert ground_truth_text(np.int64(42)) == "42" and ground_truth_text(42.0) == "42"
    assert ground_truth_text(np.array([["42"]])) == "42" and ground_truth_text([" 1 ", 2]) == "1, 2"
    assert ground_truth_text(2.5) == "2.5" and ground_truth_text(Fraction(3, 4)) == "3/4"
    for missing in (None, "", "  ", [], np.array([]), {"a": 1}, True, np.bool_(True), float("nan"), [None], [""]):
        assert ground_truth_text(missing) is None, missing


# Worker processes: a killed one costs its task, never a hang (a multiprocessing.Pool whose idle worker was killed
# hung in terminate() and at interpreter exit, and respawned an orphan).


def worker_pids() -> set[int]:
    import psutil

    return {
        child.pid
        for child in psutil.Process().children()
        if "_worker_main" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE
    }


def test_a_killed_worker_is_replaced_and_close_never_blocks():
    v = MathVerifier(timeout_s=3, num_workers=2)
    try:
        before = worker_pids()
        assert v.score(r"\boxed{1}", "1").score == 1.0
        mine = worker_pids() - before
        assert len(mine) == 1  # started on demand, one per task in flight
        for pid in mine:
            os.kill(pid, signal.SIGKILL)  # idle, as an OOM kill or a SIGKILL to the process group would find it
        time.sleep(0.2)
        assert v.score(r"\boxed{2}", "2").score == 1.0  # the dead worker is noticed and replaced
        for pid in worker_pids() - before:
            os.kill(pid, signal.SIGTERM)  # a worker never ignores SIGTERM
        start = time.perf_counter()
        v.close()
        assert time.perf_counter() - start < 5
        assert not worker_pids() - before
    finally:
        v.close()


def test_close_kills_the_workers_and_a_later_score_starts_new_ones():
    v = MathVerifier(timeout_s=3, num_workers=1)
    before = worker_pids()
    assert v.score(r"\boxed{1}", "1").score == 1.0
    v.close()
    assert not worker_pids() - before
    assert v.score(r"\boxed{1}", "1").score == 1.0
    del v  # weakref.finalize closes a verifier that is collected
    import gc

    gc.collect()
    assert not worker_pids() - before


def test_a_worker_that_does_not_answer_is_killed_and_replaced():
    # 3 s, not 1: a fresh worker's first verification (sympy's first parse) can take over a second on a loaded machine
    # (the fast tier runs in two processes), and math-verify's own alarm then says "error".
    v = MathVerifier(timeout_s=3, num_workers=1)
    try:
        before = worker_pids()
        assert v.score(r"\boxed{1}", "1").score == 1.0
        (stuck,) = worker_pids() - before
        os.kill(stuck, signal.SIGSTOP)  # as a worker stuck in C code that ignores math-verify's alarm
        start = time.perf_counter()
        result = v.score(r"\boxed{2}", "2")
        assert (result.score, result.status) == (0.0, "timeout")
        assert time.perf_counter() - start < 3 + 5 + 3 and v.pool_restarts == 1
        assert stuck not in worker_pids()  # killed, not left behind
        assert v.score(r"\boxed{3}", "3").score == 1.0  # a new worker took its place
    finally:
        v.close()
