"""The verifier is split into extraction, ground truth, the worker pool and the verifier; the old import path keeps
every name, the worker bootstrap string still names its entry point, and the settings never import the pool."""

import subprocess
import sys
from pathlib import Path

import pytest

import arena_verl
from arena_verl.verify import extraction, ground_truth, math_verifier, pool

# Every name imported from arena_verl.verify.math_verifier somewhere in the repository, and the module that owns it.
OWNERS = {
    "extract_final_answer": extraction,
    "boxed_spans": extraction,
    "ground_truth_text": ground_truth,
}


@pytest.mark.parametrize("name", sorted(OWNERS))
def test_the_old_path_re_exports_each_name_from_its_module(name):
    assert getattr(math_verifier, name) is getattr(OWNERS[name], name)


def test_the_verifier_names_stay_where_callers_import_them():
    for name in ("MathVerifier", "VerifyResult", "STATUSES", "EXTRACTION_MODES", "_worker_main"):
        assert hasattr(math_verifier, name), name
    assert set(math_verifier.__all__) >= {"MathVerifier", "VerifyResult", "STATUSES", "ground_truth_text"}


def test_the_worker_bootstrap_names_the_verifier_entry_and_the_package_root():
    code = pool._bootstrap(math_verifier._WORKER_ENTRY, 3, 4)
    assert "from arena_verl.verify.math_verifier import _worker_main; _worker_main(" in code
    assert code.endswith(", 3, 4)")
    # The appended path is the folder that holds the package (a worker started outside the parent's sys.path).
    assert (Path(pool._PACKAGE_ROOT) / "arena_verl" / "__init__.py").is_file()
    assert Path(pool._PACKAGE_ROOT) == Path(arena_verl.__file__).resolve().parents[1]


def test_a_timeout_is_never_taken_for_a_dead_worker():
    # The pool retries a task whose worker died (EOFError, OSError); a timeout must not be retried.
    assert not issubclass(pool.WorkerTimeout, OSError) and not issubclass(pool.WorkerTimeout, EOFError)
    assert issubclass(pool.WorkerStartError, pool.WorkerUnavailable)
    with pytest.raises(ValueError, match="MODULE:FUNCTION"):
        pool.WorkerPool(1, "no_colon")
    with pytest.raises(ValueError):
        pool.WorkerPool(0, "a:b")


def test_a_verifier_that_cannot_start_a_worker_scores_an_error(monkeypatch):
    def refuse(entry, generation):
        raise OSError("no processes left")

    monkeypatch.setattr(pool, "_spawn_worker", refuse)
    verifier = math_verifier.MathVerifier(timeout_s=1, num_workers=1)
    result = verifier.score(r"\boxed{1}", "1")
    assert (result.score, result.status) == (0.0, "error") and verifier.counts["error"] == 1
    verifier.close()


def test_the_settings_import_neither_scipy_nor_the_verifier():
    code = "import sys, arena_verl.settings; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    unwanted = {m for m in out.split() if m.startswith(("scipy", "arena_verl.verify", "arena_verl.judge"))}
    assert not unwanted, sorted(unwanted)


def test_the_flat_module_s_names_still_import_from_the_package():
    import arena_verl.verify as verify
    from arena_verl.verify import math_verifier

    assert verify.MathVerifier is math_verifier.MathVerifier and verify.VerifyResult is math_verifier.VerifyResult
    assert verify.STATUSES == math_verifier.STATUSES and verify.EXTRACTION_MODES == ("boxed", "lenient")
    assert callable(verify.extract_final_answer) and callable(verify.ground_truth_text)
