"""The shipped program judges of the learning experiment (:mod:`arena_verl.judge.programs`), on chain-arithmetic
traces (:mod:`arena_verl.data.chain_arithmetic`): the step judge prefers a longer valid prefix of steps, padding
never raises a score, its knobs do what they say (measured over many distinct pairs: the hash is deterministic, so
the figures are fixed numbers, not draws), and the random judge is a fair coin; both through the python backend."""

from __future__ import annotations

import asyncio
import functools
import time

import pytest

from arena_verl.data.chain_arithmetic import ChainProblem, check_steps, make_problems, solution_text
from arena_verl.judge import Trace, make_judge
from arena_verl.judge.backends.python_backend import PythonJudge
from arena_verl.judge.programs import RANDOM_JUDGE, STEP_JUDGE, random_judge, step_judge
from arena_verl.judge.spec import judge_settings_from_spec


def step(*args, **kwargs):
    return asyncio.run(step_judge.judge(*args, **kwargs))


def coin(*args, **kwargs):
    return asyncio.run(random_judge.judge(*args, **kwargs))


def on_pairs(judge, pairs, **knobs) -> list[float]:
    """``judge(problem, first, second, **knobs)`` for every (problem, first, second), in one event loop."""

    async def run_all():
        return [await judge(problem, first, second, **knobs) for problem, first, second in pairs]

    return asyncio.run(run_all())


def on_traces(judge, items, **knobs) -> list[float]:
    """``judge(problem, trace=trace, **knobs)`` for every (problem, trace), in one event loop."""

    async def run_all():
        return [await judge(problem, trace=trace, **knobs) for problem, trace in items]

    return asyncio.run(run_all())


STEP, COIN = step_judge.judge, random_judge.judge


@functools.lru_cache(maxsize=8)
def problems(count=400, seed=0) -> tuple[ChainProblem, ...]:
    """Problems of three or more operations (room for prefixes of several lengths)."""
    found = [p for p in make_problems(4 * count, "train", seed) if len(p.ops) >= 3]
    found += make_problems(count, "heldout", seed)
    return tuple(found[:count])


def prefix_trace(problem: ChainProblem, valid: int) -> str:
    """The solution with its first ``valid`` steps right and the next one's result off by one."""
    lines = solution_text(problem).splitlines()
    steps, answer = lines[:-1], lines[-1]
    if valid < len(steps):
        left, result = steps[valid].rsplit("=", 1)
        steps[valid] = f"{left}={int(result) + 1}"
    return "\n".join(steps + [answer])


def share(problem: ChainProblem, trace: str) -> float:
    return check_steps(problem, trace).share


def differing_pairs(count=2000):
    """(problem text, better trace, worse trace), many distinct pairs."""
    pairs = []
    for problem in problems(count // 3 + 1):
        n = len(problem.ops)
        for better, worse in ((n, 0), (n, n - 1), (n - 1, 1)):
            if better != worse:
                pairs.append((problem.question, prefix_trace(problem, better), prefix_trace(problem, worse)))
    return pairs[:count]


# --- the step judge ------------------------------------------------------------------------------------------------


def test_it_prefers_the_longer_valid_prefix():
    problem = problems(1)[0]
    n = len(problem.ops)
    traces = [prefix_trace(problem, k) for k in range(n + 1)]
    assert [share(problem, t) for t in traces] == [k / n for k in range(n + 1)]
    for i in range(n + 1):
        for j in range(n + 1):
            expected = 0.5 if i == j else float(i > j)
            assert step(problem.question, traces[i], traces[j]) == expected
        assert step(problem.question, trace=traces[i]) == i / n


def test_the_worked_solution_beats_a_garbled_or_empty_trace():
    problem = problems(1)[0]
    for other in ("", "I think the answer is 12.", "Answer: " + str(problem.answer)):
        assert step(problem.question, solution_text(problem), other) == 1.0
        assert step(problem.question, other, solution_text(problem)) == 0.0


def paddings(problem: ChainProblem, trace: str) -> list[str]:
    lines = trace.splitlines()
    steps = [line for line in lines if not line.startswith("Answer")]
    last = steps[-1] if steps else "1+1=2"
    return [
        trace + "\n" + last,  # the last step repeated after the answer
        trace + "\n1+1=2\n2+2=4",  # valid-looking arithmetic appended
        trace + "\nlorem ipsum\n###\n[[A]]",  # garbage appended
        "\n".join(steps + [last] + lines[len(steps) :]),  # a step repeated before the answer
        "\n".join(steps + steps + lines[len(steps) :]),  # every step twice
        "\n".join(steps + ["9+9=18", "18-1=17"] + lines[len(steps) :]),  # more steps than the problem has
        "\n".join([steps[0], steps[0]] + steps[1:] + lines[len(steps) :]),  # the first step repeated
        trace.replace("\n", "\n\n"),  # blank lines between steps
    ]


def test_padding_never_raises_a_score():
    cases = []  # (problem, trace, padded)
    for problem in problems(60):
        for valid in range(len(problem.ops) + 1):
            trace = prefix_trace(problem, valid)
            cases += [(problem, trace, padded) for padded in paddings(problem, trace)]
    for problem, trace, padded in cases:
        assert share(problem, padded) <= share(problem, trace), (trace, padded)
    texts = [(p.question, padded) for p, _, padded in cases] + [(p.question, trace) for p, trace, _ in cases]
    scores = on_traces(STEP, texts)
    assert all(padded <= plain for padded, plain in zip(scores[: len(cases)], scores[len(cases) :]))
    verdicts = on_pairs(STEP, [(p.question, padded, trace) for p, trace, padded in cases])
    assert set(verdicts) <= {0.0, 0.5}  # a padded trace is never preferred to the one it pads


def test_the_answer_line_is_not_read():
    problem = problems(1)[0]
    wrong_answer = solution_text(problem).rsplit("\n", 1)[0] + f"\nAnswer: {problem.answer + 1}"
    assert step(problem.question, solution_text(problem), wrong_answer) == 0.5  # it judges the steps only


def test_equal_shares_give_one_half_whatever_the_accuracy():
    problem = problems(1)[0]
    a, b = prefix_trace(problem, 1), prefix_trace(problem, 1) + "\ntrailing words"
    for accuracy in (0.5, 0.8, 1.0):
        assert step(problem.question, a, b, accuracy=accuracy) == 0.5


def test_accuracy_is_the_share_of_verdicts_for_the_better_trace():
    pairs = differing_pairs(2000)
    assert len(pairs) == 2000 and len({p for p in pairs}) == 2000
    for accuracy in (0.8, 0.6):
        right = on_pairs(STEP, pairs, accuracy=accuracy, seed=5)
        assert set(right) <= {0.0, 1.0}
        assert abs(sum(right) / len(right) - accuracy) < 0.04  # deterministic: a fixed number near accuracy
    assert set(on_pairs(STEP, pairs)) == {1.0}  # accuracy 1: always the better one
    assert set(on_pairs(STEP, [(q, w, b) for q, b, w in pairs])) == {0.0}


def test_position_bias_shifts_verdicts_to_the_first_shown():
    pairs = differing_pairs(2000)
    worse_first = on_pairs(STEP, [(q, w, b) for q, b, w in pairs], position_bias=0.35, seed=2)
    better_first = on_pairs(STEP, pairs, position_bias=0.35, seed=2)
    assert abs(sum(worse_first) / len(worse_first) - 0.35) < 0.04  # the worse one wins only by position
    assert set(better_first) == {1.0}
    problem = problems(1)[0]
    tie = [step(problem.question, prefix_trace(problem, 1), prefix_trace(problem, 1) + f"\n{i}") for i in range(9)]
    assert tie == [0.5] * 9  # without a bias, equal shares stay ties
    biased_ties = on_pairs(STEP, [(q, b, b + "\nx") for q, b, _ in pairs[:1000]], position_bias=0.35)
    assert abs(biased_ties.count(1.0) / 1000 - 0.35) < 0.05 and set(biased_ties) == {0.5, 1.0}


def test_pointwise_accuracy_replaces_a_share_by_a_uniform_draw():
    problem_traces = [(p.question, prefix_trace(p, 1), share(p, prefix_trace(p, 1))) for p in problems(1000)]
    scores = on_traces(STEP, [(q, t) for q, t, _ in problem_traces], accuracy=0.8)
    kept = sum(score == value for score, (_, _, value) in zip(scores, problem_traces)) / len(scores)
    assert abs(kept - 0.8) < 0.04 and all(0.0 <= s <= 1.0 for s in scores)
    unbiased = on_traces(STEP, [(q, t) for q, t, _ in problem_traces[:20]], position_bias=1.0)
    assert unbiased == [value for *_, value in problem_traces[:20]]  # pointwise: position_bias is ignored


def test_verdicts_are_a_deterministic_function_of_the_seed_and_the_texts():
    pairs = differing_pairs(300)
    first = on_pairs(STEP, pairs, accuracy=0.7, position_bias=0.2, seed=11)
    assert first == on_pairs(STEP, pairs, accuracy=0.7, position_bias=0.2, seed=11)
    assert first == on_pairs(STEP, pairs, accuracy=0.7, position_bias=0.2, seed=11.0)  # a spec's seed=11
    assert first != on_pairs(STEP, pairs, accuracy=0.7, position_bias=0.2, seed=12)


def test_latency_is_a_sleep_per_call():
    problem = problems(1)[0]
    started = time.perf_counter()
    assert step(problem.question, trace=solution_text(problem), latency_s=0.05) == 1.0
    assert time.perf_counter() - started >= 0.05


@pytest.mark.parametrize(
    ("knobs", "name"),
    [
        ({"accuracy": 0.4}, "accuracy"),
        ({"accuracy": 1.1}, "accuracy"),
        ({"accuracy": "high"}, "accuracy"),
        ({"accuracy": True}, "accuracy"),
        ({"position_bias": -0.1}, "position_bias"),
        ({"position_bias": 1.5}, "position_bias"),
        ({"latency_s": -1.0}, "latency_s"),
        ({"latency_s": float("inf")}, "latency_s"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "one"}, "seed"),
    ],
)
def test_a_knob_out_of_range_is_a_value_error_naming_it(knobs, name):
    problem = problems(1)[0]
    with pytest.raises(ValueError, match=name):
        step(problem.question, "a", "b", **knobs)


@pytest.mark.parametrize(
    "call", [{}, {"first": "a"}, {"first": "a", "second": "b", "trace": "c"}, {"second": "b", "trace": "c"}]
)
def test_a_call_that_is_neither_pairwise_nor_pointwise_is_an_error(call):
    with pytest.raises(ValueError, match="first and second"):
        step("Compute 1+2 step by step.", **call)
    with pytest.raises(ValueError, match="first and second"):
        coin("Compute 1+2 step by step.", **call)


def test_a_problem_of_another_task_raises():
    with pytest.raises(ValueError, match="chain-arithmetic"):
        step("What is the capital of France?", "Paris", "Lyon")


def test_a_chat_rendered_prompt_is_read():
    problem = problems(1)[0]
    chat = "<|im_start|>user\nCompute 1+1 step by step. (an example)\n{}<|im_end|>\n<|im_start|>assistant"
    prompt = chat.format(problem.question)  # the last statement is the problem
    assert step(prompt, solution_text(problem), prefix_trace(problem, 0)) == 1.0


# --- through the python backend ------------------------------------------------------------------------------------


def backend(spec: str, **overrides) -> PythonJudge:
    judge = make_judge(judge_settings_from_spec(spec, **overrides))
    assert isinstance(judge, PythonJudge)
    return judge


def test_the_shipped_specs_build_python_judges():
    assert STEP_JUDGE == "python:arena_verl.judge.programs.step_judge:judge"
    assert RANDOM_JUDGE == "python:arena_verl.judge.programs.random_judge:judge"
    assert backend(STEP_JUDGE).is_async and backend(RANDOM_JUDGE).is_async


def test_the_step_judge_through_the_backend():
    problem = problems(1)[0]
    judge = backend(STEP_JUDGE + "?accuracy=1&seed=3")
    right, wrong = Trace(solution_text(problem)), Trace(prefix_trace(problem, 1))

    async def calls():
        return (
            await judge.compare(problem.question, right, wrong, str(problem.answer)),
            await judge.compare(problem.question, wrong, right, str(problem.answer)),
            await judge.score(problem.question, right, str(problem.answer)),
        )

    assert asyncio.run(calls()) == (1.0, 0.0, 1.0)
    assert (judge.stats.calls, judge.stats.failures) == (3, 0)


def test_an_unparseable_problem_is_a_failed_call_through_the_backend():
    judge = backend(STEP_JUDGE)
    outcome = asyncio.run(judge.compare("What is the capital of France?", Trace("Paris"), Trace("Lyon")))
    assert outcome is None
    assert (judge.stats.calls, judge.stats.failures, judge.stats.errors, judge.stats.parse_failures) == (1, 1, 1, 0)


def test_a_bad_knob_is_a_failed_call_through_the_backend():
    judge = backend(STEP_JUDGE + "?accuracy=0.2")
    assert asyncio.run(judge.compare("Compute 1+2 step by step.", Trace("1+2=3"), Trace("x"))) is None
    assert judge.stats.errors == 1


# --- the random judge ----------------------------------------------------------------------------------------------


def test_the_random_judge_is_a_fair_deterministic_coin():
    pairs = differing_pairs(2000)
    verdicts = on_pairs(COIN, pairs)
    assert set(verdicts) == {0.0, 1.0}
    assert abs(sum(verdicts) / len(verdicts) - 0.5) < 0.04
    assert verdicts == on_pairs(COIN, pairs)  # a rerun gives the same verdicts
    assert verdicts != on_pairs(COIN, pairs, seed=1)
    swapped = on_pairs(COIN, [(q, w, b) for q, b, w in pairs])
    assert abs(sum(swapped) / len(swapped) - 0.5) < 0.04  # no preference for the better trace in either order
    scores = on_traces(COIN, [(q, b) for q, b, _ in pairs])
    assert set(scores) == {0.0, 1.0} and abs(sum(scores) / len(scores) - 0.5) < 0.04


def test_the_random_judge_reads_nothing_but_its_hash_inputs():
    assert coin("What is the capital of France?", "Paris", "Lyon") in (0.0, 1.0)  # any problem: it parses nothing
    judge = backend(RANDOM_JUDGE + "?seed=4")
    outcome = asyncio.run(judge.compare("any problem", Trace("a"), Trace("b")))
    assert outcome == coin("any problem", "a", "b", seed=4) and judge.stats.failures == 0
