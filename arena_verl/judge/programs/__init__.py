"""Program judges shipped for the learning experiment (``arena-verl experiment``): Python functions for
``reward.arena.judge.backend: python`` that read the chain-arithmetic task's steps
(:mod:`arena_verl.data.chain_arithmetic`), standing in for an LLM judge. They are programs, not models: figures made
with them say so.

- :mod:`.step_judge`: prefers the trace whose valid prefix of steps is longer, with knobs for accuracy, position
  bias and latency (``python:arena_verl.judge.programs.step_judge:judge``);
- :mod:`.random_judge`: the control, a fair coin (``python:arena_verl.judge.programs.random_judge:judge``);
- :mod:`.order_judge`: perfectly consistent and blind to quality, a fixed hash order over traces
  (``python:arena_verl.judge.programs.order_judge:judge``): certainty weighting's other control.

Their noise is a deterministic hash of (seed, problem, traces): a rerun gives the same verdicts.
"""

STEP_JUDGE = "python:arena_verl.judge.programs.step_judge:judge"
RANDOM_JUDGE = "python:arena_verl.judge.programs.random_judge:judge"
ORDER_JUDGE = "python:arena_verl.judge.programs.order_judge:judge"

__all__ = ["ORDER_JUDGE", "RANDOM_JUDGE", "STEP_JUDGE"]
