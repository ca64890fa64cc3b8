"""Verifiers (layer L2): math (math-verify in a signal-safe worker pool) and multiple choice.

``from arena_verl.verify import MathVerifier`` (the path of the flat module this package replaced) keeps working; the
names load on first use (PEP 562), so importing one light module of the package does not start the worker pool's
machinery.
"""

from arena_verl.core.lazy import lazy_exports

_EXPORTS = {
    "EXTRACTION_MODES": "arena_verl.core.names",
    "STATUSES": "arena_verl.verify.math_verifier",
    "MathVerifier": "arena_verl.verify.math_verifier",
    "VerifyResult": "arena_verl.verify.math_verifier",
    "extract_final_answer": "arena_verl.verify.extraction",
    "ground_truth_text": "arena_verl.verify.ground_truth",
}
__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
