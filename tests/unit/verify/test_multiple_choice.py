import time

import pytest

from arena_verl.verify.multiple_choice import extract_choice, score


@pytest.mark.parametrize(
    "reply, letter",
    [
        ("Hence the answer is \\boxed{B}.", "B"),
        ("\\boxed{\\text{C}}", "C"),
        ("\\boxed{\\textbf{(C)}}", "C"),
        ("\\boxed{(D)}", "D"),
        ("\\boxed{A)}", "A"),
        ("\\boxed {b}", "B"),  # lower case inside a box
        ("$\\boxed{B}$", "B"),
        ("\\fbox{A}", "A"),
        ("\\boxed{B) 42 eV}", "B"),  # the option's text after the letter
        ("\\boxed{(B) 3\\times10^8 m/s}", "B"),
        ("First \\boxed{A}.\nOn reflection the first step was wrong.\nSo \\boxed{C}", "C"),  # the last box wins
        ("\\boxed{B}. A careful check confirms it.", "B"),  # an article after the box is prose
        ("Answer: B", "B"),
        ("**Final answer:** (C)", "C"),
        ("Let me think.\nThe correct answer is (B).", "B"),
        ("Final Answer: The final answer is $D$. I hope it is correct.", "D"),
        ("answer: (a)", "A"),  # lower case in parentheses
        ("So it must be\n(b)", "B"),
        ("So it must be\n**A**", "A"),
    ],
)
def test_a_committed_letter_is_read(reply, letter):
    assert extract_choice(reply) == letter
    assert score(reply, letter) == 1.0
    assert score(reply, "A" if letter != "A" else "B") == 0.0


@pytest.mark.parametrize(
    "reply",
    [
        "\\boxed{A} or \\boxed{B}",  # boxes of the final line disagree
        "\\boxed{A}, \\boxed{B}, \\boxed{C}, \\boxed{D}",
        "\\boxed{A or B}",
        "\\boxed{AB}",
        "\\boxed{ABCD}",
        "\\boxed{A, C}",
        "\\boxed{A/B}",
        "\\boxed{A) not B}",  # option text naming another letter
        "\\boxed{A} or C",
        "\\boxed{A}, (c)",
        "Answer: A or B",
        "Answer: A, B",
        "ABCD",
        "A B C D",
        "\\boxed{E}",  # outside A-D
        "Answer: F",
        "the answer is a prime number",  # a lower-case article is not a letter outside a box
        "b",
        "I think B is plausible but the reasoning continues",  # no final-answer form
        "\\boxed{}",
        "\\boxed{B",  # never closed
        "",
        "   \n\n ",
    ],
)
def test_hedges_and_non_answers_score_zero(reply):
    assert extract_choice(reply) is None
    for truth in "ABCD":
        assert score(reply, truth) == 0.0


def test_allowed_letters_are_configurable():
    assert extract_choice("\\boxed{E}", letters="ABCDE") == "E"
    assert score("\\boxed{E}", "e", letters="ABCDE") == 1.0
    assert extract_choice("\\boxed{D}", letters="ABC") is None
    with pytest.raises(ValueError):
        extract_choice("\\boxed{A}", letters="abc")
    with pytest.raises(ValueError):
        extract_choice("\\boxed{A}", letters="AAB")


def test_ground_truth_is_one_letter_case_insensitive_and_trimmed():
    assert score("\\boxed{C}", " c\n") == 1.0
    for bad in ["", "  ", "AB", "E", "1", None, 3, ["A"], "(A)"]:
        with pytest.raises(ValueError):
            score("\\boxed{A}", bad)


def test_non_text_replies_score_zero():
    assert score(None, "A") == 0.0
    assert score(b"\\boxed{A}", "A") == 1.0
    assert score(12, "A") == 0.0


def test_only_the_end_of_the_reply_counts():
    assert extract_choice("\\boxed{A}" + "x" * 10_000) is None  # an answer buried far from the end
    assert extract_choice("\\boxed{A}\n" + "padding " * 100 + "\n\\boxed{C}") == "C"


def test_huge_and_pathological_replies_are_fast():
    replies = [
        "x" * 5_000_000 + "\\boxed{A}",
        "{" * 1_000_000,
        "\\boxed{" * 500_000,
        "answer is " * 500_000,
        "(" * 1_000_000 + "A",
        "\\text{" * 300_000,
    ]
    started = time.perf_counter()
    results = [extract_choice(reply) for reply in replies]
    assert time.perf_counter() - started < 2.0
    assert results[0] == "A"
    assert results[1:] == [None] * (len(replies) - 1)
