"""The random judge: the control of the learning experiment, a fair coin in place of a judge
(``reward.arena.judge.callable=arena_verl.judge.programs.random_judge:judge``; for the tools
``--judge python:arena_verl.judge.programs.random_judge:judge``). A run with it shows what the arena's reward does
when the judge knows nothing: its verdicts carry no signal about the traces."""

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
    """Pairwise (``first`` and ``second``): 1.0 or 0.0 by a fair coin; pointwise (``trace``): 0.0 or 1.0 by a coin.
    The coin is a deterministic hash of (seed, problem, first, second) (of the trace, pointwise): the judge reads
    nothing else, and a rerun gives the same verdicts. ``latency_s`` >= 0: seconds each call takes. Raises
    ``ValueError`` for a knob out of range or a call that is neither pairwise nor pointwise."""
    latency_s = check_latency(latency_s)
    seed = check_seed(seed)
    mode = call_mode(first, second, trace)
    await wait(latency_s)
    if mode == "point":
        (coin,) = uniforms(1, seed, "random/point", problem, trace)
    else:
        (coin,) = uniforms(1, seed, "random/pair", problem, first, second)
    return 1.0 if coin < 0.5 else 0.0
