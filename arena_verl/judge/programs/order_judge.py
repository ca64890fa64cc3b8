"""The order judge: a control for certainty weighting, a judge that is perfectly consistent and knows nothing of
quality (``reward.arena.judge.callable=arena_verl.judge.programs.order_judge:judge``; for the tools
``--judge python:arena_verl.judge.programs.order_judge:judge``). It ranks traces by a seeded hash of their text: a
fixed total order, so its verdicts are transitive, tell every pair of different traces apart and ignore which trace
is shown first. Beside the random judge (a fair coin), it shows what certainty weighting gives the most certain judge
there can be, whatever that judge's verdicts are worth."""

from __future__ import annotations

from arena_verl.judge.programs._common import call_mode, check_latency, check_seed, uniforms, wait

__all__ = ["judge"]


async def judge(
    problem: str,
    first: str | None = None,
    second: str | None = None,
    *,
    trace: str | None = None,
    latency_s: float = 0.0,
    seed: int = 0,
) -> float:
    """Pairwise: 1.0 when ``first`` ranks above ``second`` in the hash order, 0.0 below, 0.5 for the same text;
    pointwise: the trace's rank value in [0, 1). ``latency_s`` >= 0: seconds each call takes. Raises ``ValueError``
    for a knob out of range or a call that is neither pairwise nor pointwise."""
    latency_s = check_latency(latency_s)
    seed = check_seed(seed)
    mode = call_mode(first, second, trace)
    await wait(latency_s)
    if mode == "point":
        (rank,) = uniforms(1, seed, "order", problem, trace)
        return rank
    (a,) = uniforms(1, seed, "order", problem, first)
    (b,) = uniforms(1, seed, "order", problem, second)
    return 0.5 if a == b else (1.0 if a > b else 0.0)
