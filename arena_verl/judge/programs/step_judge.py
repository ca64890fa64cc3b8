"""The step judge: a program that reads a chain-arithmetic trace's steps, standing in for an LLM judge in the
learning experiment (``reward.arena.judge.backend=python``,
``reward.arena.judge.callable=arena_verl.judge.programs.step_judge:judge``; for the tools
``--judge python:arena_verl.judge.programs.step_judge:judge``).

**The measure.** A trace's share is :func:`arena_verl.data.chain_arithmetic.check_steps`' ``share``: the longest
prefix of right steps, from the first one on, over the problem's number of operations, in [0, 1]. A step is right
when its left operand is the running value, its operator and right operand are the problem's next ones and its result
is their value. The judge prefers the trace with the larger share; it never sees the reference answer (it gets the
problem and the traces only) and does not read the ``Answer:`` line: it judges the reasoning, as the arena's judge
does for a group whose final answers the verifier scored alike.

**Why padding cannot raise a score.** The share counts a prefix: a line that is not the next right step (garbage, a
repeated step, a wrong result, text between steps) ends it, and nothing after the end counts; once the chain is
complete (``valid_prefix == operations``) further lines are not counted either, and the ``Answer:`` line and
everything after it are not read. So lines added after the answer, after a wrong step or after a complete chain,
valid-looking or not, and repeated steps anywhere (the task's operands are at least 1, so no step is also the one
after it), never raise a trace's share: only writing the next right step does.
"""

from __future__ import annotations

from arena_verl.data.chain_arithmetic import check_steps, parse_problem
from arena_verl.judge.programs._common import (
    call_mode,
    check_fraction,
    check_latency,
    check_seed,
    uniforms,
    wait,
)

__all__ = ["judge", "share"]


def share(problem: str, trace: str) -> float:
    """``trace``'s share of right steps for the chain-arithmetic ``problem`` (a prompt that states one); a
    ``ValueError`` when ``problem`` states none (a problem of another task)."""
    parsed = parse_problem(problem)
    if parsed is None:
        raise ValueError("the step judge reads chain-arithmetic problems ('Compute 23+45-17 step by step.'); none here")
    return check_steps(parsed, trace).share


async def judge(
    problem: str,
    first: str | None = None,
    second: str | None = None,
    *,
    trace: str | None = None,
    accuracy: float = 1.0,
    position_bias: float = 0.0,
    latency_s: float = 0.0,
    seed: int = 0,
) -> float:
    """Pairwise (``first`` and ``second``): P(``first`` is better), 1.0, 0.0, or 0.5 when the two shares are equal.
    Pointwise (``trace``): the trace's share, in [0, 1]. It gets the problem and the traces only, never the reference
    answer.

    Knobs (``reward.arena.judge.callable_kwargs``, or ``?name=value`` after the spec):

    - ``accuracy`` in [0.5, 1]: when the shares differ, the better trace is preferred with this probability and the
      worse one otherwise; pointwise, with probability ``1 - accuracy`` the score is a uniform number in [0, 1]
      instead of the share;
    - ``position_bias`` in [0, 1]: with this probability the verdict is "first" (1.0) whatever the traces, decided
      before they are compared (pointwise: ignored);
    - ``latency_s`` >= 0: seconds each call takes (``asyncio.sleep``), to measure what a slow judge adds to a step;
    - ``seed``: the noise is a deterministic hash of (seed, problem, first, second) (of the trace, pointwise), so a
      rerun gives the same verdicts and the two presentation orders of a pair draw independently.

    Raises ``ValueError``: a knob out of range (named), a call that is neither pairwise nor pointwise, or a problem
    that is not a chain-arithmetic one (the backend counts it as a failed call).
    """
    accuracy = check_fraction("accuracy", accuracy, 0.5, 1.0)
    position_bias = check_fraction("position_bias", position_bias)
    latency_s = check_latency(latency_s)
    seed = check_seed(seed)
    mode = call_mode(first, second, trace)
    await wait(latency_s)
    if mode == "point":
        value = share(problem, trace)
        u_noise, u_value = uniforms(2, seed, "step/point", problem, trace)
        return value if u_noise < accuracy else u_value
    first_share, second_share = share(problem, first), share(problem, second)
    u_bias, u_accuracy = uniforms(2, seed, "step/pair", problem, first, second)
    if u_bias < position_bias:
        return 1.0
    if first_share == second_share:
        return 0.5
    better = 1.0 if first_share > second_share else 0.0
    return better if u_accuracy < accuracy else 1.0 - better
