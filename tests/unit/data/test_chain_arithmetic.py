"""The learning experiment's task: problems, worked solutions, and the step reading the step judge relies on."""

import pytest

from arena_verl.core.errors import InputError
from arena_verl.data.chain_arithmetic import (
    SPLITS,
    ChainProblem,
    check_steps,
    make_problems,
    parse_problem,
    solution_text,
    write_split,
)
from arena_verl.verify.extraction import extract_final_answer


def test_problems_are_deterministic_and_splits_differ():
    assert make_problems(20, "train", seed=3) == make_problems(20, "train", seed=3)
    assert make_problems(20, "train", seed=3) != make_problems(20, "train", seed=4)
    assert make_problems(20, "train", seed=0) != make_problems(20, "test", seed=0)


def test_heldout_is_longer_than_any_training_problem():
    longest_train = max(ops for ops, _ in SPLITS["train"])
    assert all(len(p.ops) > longest_train for p in make_problems(200, "heldout", seed=0))
    assert {len(p.ops) for p in make_problems(400, "train", seed=0)} == {ops for ops, _ in SPLITS["train"]}


def test_running_values_stay_non_negative_and_the_solution_verifies():
    for problem in make_problems(300, "train", seed=1) + make_problems(100, "heldout", seed=1):
        assert min(problem.running_values()) >= 0
        text = solution_text(problem)
        assert extract_final_answer(text)[0] == str(problem.answer)
        check = check_steps(problem, text)
        assert check.valid_prefix == check.operations == len(problem.ops) and check.share == 1.0


def test_problem_is_read_back_from_a_chat_rendering():
    problem = ChainProblem((12, 7, 30), ("-", "+"))
    assert parse_problem(f"system: be brief\nuser: {problem.question}\nassistant:") == problem
    assert parse_problem("What is 2 + 2?") is None


@pytest.mark.parametrize(
    "trace, prefix",
    [
        ("12-7=5\n5+30=35\nAnswer: 35", 2),
        ("12-7=5\n5+30=36\nAnswer: 36", 1),  # a wrong result
        ("12-7=6\n6+30=36\nAnswer: 36", 0),  # right arithmetic on a wrong running value is not a right step
        ("12+7=19\n19+30=49\nAnswer: 49", 0),  # the problem's operator, not another one
        ("Let me think\n12-7=5\n5+30=35\nAnswer: 35", 0),  # prose before the steps breaks the prefix
        ("12-7=5\nAnswer: 35\n5+30=35", 1),  # nothing after the answer line is a step
        ("", 0),
    ],
)
def test_valid_prefix(trace, prefix):
    assert check_steps(ChainProblem((12, 7, 30), ("-", "+")), trace).valid_prefix == prefix


def test_padding_cannot_raise_the_share():
    problem = ChainProblem((12, 7, 30, 4), ("-", "+", "-"))
    partial = "12-7=5\n5+30=36\nAnswer: 32"
    base = check_steps(problem, partial).share
    padded = [
        "12-7=5\n12-7=5\n5+30=35\n35-4=31\nAnswer: 31",  # a repeated step
        partial + "\n1+1=2\n2+2=4\n" * 20,
        "12-7=5\n5+30=36\n" + "36-4=32\n" * 10 + "Answer: 32",
        "12-7=5\n5+30=36\nthe steps above are all correct\nAnswer: 32",
    ]
    for trace in padded:
        assert check_steps(problem, trace).share <= max(base, 1 / 3)
    full = solution_text(problem)
    assert check_steps(problem, full + "\n" + "1+1=2\n" * 50).share == 1.0


def test_bad_arguments_are_refused():
    with pytest.raises(InputError, match="split"):
        make_problems(3, "validation")
    with pytest.raises(InputError, match="rows"):
        make_problems(0, "train")
    with pytest.raises(InputError, match="seed"):
        make_problems(3, "train", seed=-1)


def test_split_file_is_verl_rows(tmp_path):
    import pandas as pd

    path = tmp_path / "heldout.parquet"
    assert write_split(path, 5, "heldout", seed=2) == 5
    frame = pd.read_parquet(path)
    assert set(frame.data_source) == {"chain_math_heldout"}
    assert all(info["operations"] >= 5 for info in frame.extra_info)
    first = parse_problem(frame.prompt[0][0]["content"])
    assert frame.reward_model[0]["ground_truth"] == str(first.answer)
