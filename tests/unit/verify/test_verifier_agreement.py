"""The arena verifier agrees with math-verify on math-verify's own regression cases (tests/data/README.md).

Each case is scored as a dataset sample would be: the prediction is the response text, the gold answer (stripped of
its ``$``) is the ground truth, and the expected label is math-verify's. Targets: >= 99% agreement on the cases whose
prediction has a ``\\boxed{}`` with the default extraction (``boxed``; a prediction without a box or an answer line
has no answer by design), >= 98% on all cases with ``extraction="lenient"``.

    .venv/bin/python -m pytest -q -s tests/unit/verify/test_verifier_agreement.py
"""

import json

import pytest

from arena_verl.verify.math_verifier import MathVerifier
from helpers import paths

DATA = paths.TEST_DATA / "math_verify_cases.json"
CASES = json.loads(DATA.read_text())["cases"]


def agreement(extraction: str) -> dict:
    verifier = MathVerifier(timeout_s=5, num_workers=1, extraction=extraction)
    try:
        rows = []
        for case in CASES:
            result = verifier.score(case["prediction"], case["gold"].strip().strip("$").strip())
            rows.append((case, int(result.score == 1.0) == case["expected"], result))
    finally:
        verifier.close()
    boxed = [row for row in rows if "\\boxed" in row[0]["prediction"]]
    misses = [
        f"{case['test']}: gold={case['gold']!r} expected={case['expected']} got={result.status}:{result.answer!r}"
        for case, ok, result in rows
        if not ok
    ]
    return {
        "all": sum(ok for _, ok, _ in rows) / len(rows),
        "boxed": sum(ok for _, ok, _ in boxed) / len(boxed),
        "n_all": len(rows),
        "n_boxed": len(boxed),
        "misses": misses,
    }


@pytest.mark.parametrize("extraction, key, target", [("boxed", "boxed", 0.99), ("lenient", "all", 0.98)])
def test_agreement_with_math_verify(extraction, key, target):
    figures = agreement(extraction)
    print(
        f"\nextraction={extraction}: agreement {figures['all']:.1%} on all {figures['n_all']} cases, "
        f"{figures['boxed']:.1%} on the {figures['n_boxed']} with a \\boxed{{}}"
    )
    assert figures[key] >= target, "\n".join(figures["misses"])


def test_the_data_file_is_what_it_says():
    assert len(CASES) >= 140 and {c["expected"] for c in CASES} == {0, 1}
    assert sum("\\boxed" in c["prediction"] for c in CASES) >= 60
