"""The math verifier: equivalent forms pass, wrong answers and loopholes fail, and nothing raises or hangs."""

import time

import pytest

from arena_verl.verify import MathVerifier, extract_final_answer


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
